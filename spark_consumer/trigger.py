"""Micro-batches by interval: turns ``consume()`` polls into batches (``--trigger-interval``).

Like Spark Structured Streaming's ``Trigger.ProcessingTime``: a batch is what was polled since
the previous one, up to ``--max-batch`` records, and batches start at most once per interval.

* The next batch starts no earlier than ``interval_s`` after the previous batch *started*.
* A full buffer (``max_batch`` records) starts at once, whatever the interval.
* A batch that took longer than the interval is followed at once, as soon as a poll returned
  records (an idle replica's first records start a batch at once too; so does the first batch).
* ``interval_s == 0`` is the per-poll behaviour: a batch is one ``consume(max_batch,
  batch_wait_s)`` (nothing is buffered).

Polls are slices of at most ``batch_wait_s`` (and no longer than the time left to the next
start), so the caller notices a stop request, a fatal error or a KIP-848 join between slices.
Rebalance callbacks run inside ``consume()``; the replica registers :meth:`MicroBatchTrigger.drop`
as a "partitions removed" listener of its ``RebalanceHandler``, so records of revoked or lost
partitions leave the buffer at once (an eager protocol revokes everything and re-assigns: a kept
record would be fetched again from the committed offset and processed twice).

Commit contract: only a batch handed out by :meth:`MicroBatchTrigger.poll` is processed and
committed. After a stop request nothing more is handed out (with a non-zero interval); what is
still buffered is neither processed nor committed, and the partitions' next owner gets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pytest_lagscale.contract.clock import Clock

from .group import GroupConsumer
from .options import ConsumerOptions


@dataclass(frozen=True)
class TriggerSettings:
    """How polls become batches.

    Attributes:
        interval_s: shortest time from one batch's start to the next's, in seconds (0 = one
            ``consume()`` per batch).
        max_batch: most records per batch (and per ``consume()``).
        batch_wait_s: longest single ``consume()`` wait, in seconds.
    """

    interval_s: float
    max_batch: int
    batch_wait_s: float

    @classmethod
    def from_options(cls, opts: ConsumerOptions) -> "TriggerSettings":
        """``--trigger-interval``, ``--max-batch`` and ``--batch-wait-ms`` of a replica."""
        return cls(opts.trigger_interval_s, opts.max_batch, opts.batch_wait_ms / 1000.0)


@dataclass(frozen=True)
class MicroBatch:
    """One batch handed to the pipeline.

    Attributes:
        messages: the batch's messages, in poll order (no error messages).
        poll_s: seconds spent in the ``consume()`` calls that returned them.
        trigger_wait_s: seconds from the first of them arriving in the buffer to the batch's
            start (0 with ``interval_s == 0``).
        started_s: the batch's start on the trigger's clock (monotonic seconds).
    """

    messages: list[Any]
    poll_s: float
    trigger_wait_s: float
    started_s: float


@dataclass
class _Chunk:
    """The kept messages of one ``consume()`` call."""

    arrived_s: float
    poll_s: float
    messages: list[Any]


def _has_error(msg: Any) -> bool:
    return msg.error() is not None


class MicroBatchTrigger:
    """Polls a consumer in slices and hands out micro-batches on the trigger's schedule.

    Args:
        consumer: the subscribed group consumer.
        settings: interval, batch size and poll slice.
        clock: monotonic time (a FakeClock in tests).
        should_stop: True once the replica is draining; no batch is handed out after it
            (``interval_s > 0``).
        is_error: True for a message that carries an error instead of a record (it is dropped;
            the replica's version also reports it).
        on_poll: called with the seconds of each ``consume()`` call that returned anything.
    """

    def __init__(self, consumer: GroupConsumer, settings: TriggerSettings, clock: Clock, *,
                 should_stop: Callable[[], bool] = lambda: False,
                 is_error: Callable[[Any], bool] = _has_error,
                 on_poll: Callable[[float], None] = lambda s: None):
        self._consumer = consumer
        self._s = settings
        self._clock = clock
        self._should_stop = should_stop
        self._is_error = is_error
        self._on_poll = on_poll
        self._chunks: list[_Chunk] = []
        self._last_start: float | None = None

    @property
    def buffered(self) -> int:
        """Messages polled and not yet handed out in a batch."""
        return sum(len(c.messages) for c in self._chunks)

    def poll(self) -> MicroBatch | None:
        """Poll once (at most one ``consume()`` slice) and return a batch if one is due.

        Returns:
            The next batch, or None when no batch is due yet (call again), nothing arrived
            or a stop was requested.
        """
        if self._s.interval_s <= 0:
            return self._poll_once()
        if not self._due(self._clock.now()):
            self._fill()
        if self._should_stop():
            return None
        now = self._clock.now()
        return self._take(now) if self._due(now) else None

    def drop(self, partitions: Iterable[int]) -> int:
        """Forget buffered messages of ``partitions`` (revoked or lost); returns how many."""
        gone = set(partitions)
        before = self.buffered
        for chunk in self._chunks:
            chunk.messages = [m for m in chunk.messages if m.partition() not in gone]
        self._chunks = [c for c in self._chunks if c.messages]
        return before - self.buffered

    def discard(self) -> int:
        """Forget the whole buffer (the replica stops); returns how many messages it held."""
        n = self.buffered
        self._chunks = []
        return n

    # -- internals ---------------------------------------------------------------------------
    def _poll_once(self) -> MicroBatch | None:
        t0 = self._clock.now()
        messages = self._consumer.consume(self._s.max_batch, self._s.batch_wait_s)
        now = self._clock.now()
        if messages:
            self._on_poll(now - t0)
        good = [m for m in messages if not self._is_error(m)]
        return MicroBatch(good, now - t0, 0.0, now) if good else None

    def _due(self, now: float) -> bool:
        n = self.buffered
        if n >= self._s.max_batch:
            return True
        return n > 0 and (self._last_start is None or now >= self._last_start + self._s.interval_s)

    def _fill(self) -> None:
        t0 = self._clock.now()
        timeout = self._s.batch_wait_s
        if self._last_start is not None:
            left = self._last_start + self._s.interval_s - t0
            if left > 0:
                timeout = min(timeout, left)
        messages = self._consumer.consume(self._s.max_batch - self.buffered, timeout)
        now = self._clock.now()
        if messages:
            self._on_poll(now - t0)
        good = [m for m in messages if not self._is_error(m)]
        if good:
            self._chunks.append(_Chunk(now, now - t0, good))

    def _take(self, now: float) -> MicroBatch:
        chunks, self._chunks = self._chunks, []
        self._last_start = now
        messages = [m for c in chunks for m in c.messages]
        return MicroBatch(messages, sum(c.poll_s for c in chunks), now - chunks[0].arrived_s, now)
