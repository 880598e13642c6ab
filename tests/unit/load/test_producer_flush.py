"""``flush``: a long wait for acknowledgements as short ``Producer.flush`` calls, so Ctrl-C is
raised by the interpreter between them (one long call turns it into a SystemError)."""

from __future__ import annotations

from pytest_lagscale.load.producer import flush


class _Queue:
    """A client whose queue empties by ``per_call`` messages per flush call."""

    def __init__(self, queued: int, per_call: int):
        self.queued, self.per_call, self.timeouts = queued, per_call, []

    def flush(self, timeout: float) -> int:
        self.timeouts.append(timeout)
        self.queued = max(0, self.queued - self.per_call)
        return self.queued


def test_flush_returns_once_the_queue_is_empty_in_short_steps() -> None:
    client = _Queue(queued=10, per_call=4)
    assert flush(client, 60.0, step_s=0.5) == 0
    assert len(client.timeouts) == 3 and all(t <= 0.5 for t in client.timeouts)


def test_flush_gives_up_at_the_deadline_with_what_is_left() -> None:
    client = _Queue(queued=10, per_call=0)
    assert flush(client, 0.0, step_s=0.5) == 10
    assert client.timeouts == [0.0]


def test_flush_ends_at_the_first_step_after_give_up_with_what_is_left() -> None:
    """A stopped run whose broker died purges at once: no acknowledgement can come."""
    client = _Queue(queued=10, per_call=1)
    gone = iter([False, True])
    assert flush(client, 60.0, step_s=0.5, give_up=lambda: next(gone)) == 8
    assert len(client.timeouts) == 2
