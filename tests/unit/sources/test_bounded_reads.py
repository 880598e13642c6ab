"""Lag reads bounded in time, their clients renewed after a failure (sources/bounded.py).

The admin is a stand-in with ``group_offsets`` and ``close``: what is under test is the bound
and the renewal, not Kafka (the fault experiment runs them against a real paused broker).
"""

from __future__ import annotations

import threading

import pytest

from pytest_lagscale.contract.errors import BrokerError
from pytest_lagscale.sources.bounded import BoundedLagReads, LagReadTimeout


class _Admin:
    """KafkaAdmin's contract: ``close`` waits for the calls in flight."""

    def __init__(self, behaviour: str, release: threading.Event | None = None):
        self.behaviour, self.release = behaviour, release
        self.closed = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.calls = 0

    def group_offsets(self, group: str, topic: str) -> dict[int, tuple[int, int]]:
        self.calls += 1
        self.idle.clear()
        try:
            return self._answer()
        finally:
            self.idle.set()

    def _answer(self) -> dict[int, tuple[int, int]]:
        if self.behaviour == "hang":
            assert self.release is not None
            self.release.wait(10)
            raise BrokerError("no answer")
        if self.behaviour == "fail":
            raise BrokerError("Failed to get metadata: Local: Broker transport failure")
        return {0: (5, 9)}

    def close(self) -> None:
        self.idle.wait(10)
        self.closed.set()


def _reads(*admins: _Admin, timeout_s: float = 0.2) -> tuple[BoundedLagReads, list[_Admin]]:
    made: list[_Admin] = []
    queue = list(admins)

    def new_admin() -> _Admin:
        made.append(queue.pop(0))
        return made[-1]

    return BoundedLagReads(new_admin, "enrich", "events", timeout_s=timeout_s), made


def test_a_hanging_read_returns_within_the_bound_and_the_next_read_uses_new_clients() -> None:
    release = threading.Event()
    hung, fresh = _Admin("hang", release), _Admin("ok")
    reads, made = _reads(hung, fresh)
    with pytest.raises(LagReadTimeout, match="no answer within 0.2 s"):
        reads.read()
    assert reads.read() == {0: (5, 9)}
    assert made == [hung, fresh] and reads.renewals_total == 1 and reads.failures_total == 1
    assert not hung.closed.is_set()  # never destroyed under its running call
    release.set()
    assert hung.closed.wait(5)  # closed once the abandoned call returned
    assert reads.age_s() is not None and reads.age_s() < 5


def test_a_failed_read_is_raised_and_renews_the_clients() -> None:
    broken, fresh = _Admin("fail"), _Admin("ok")
    reads, made = _reads(broken, fresh)
    with pytest.raises(BrokerError, match="transport failure"):
        reads.read()
    assert broken.closed.wait(5)
    assert reads.read() == {0: (5, 9)} and made == [broken, fresh]


def test_a_good_read_keeps_its_clients_and_is_dated() -> None:
    good = _Admin("ok")
    reads, made = _reads(good)
    assert reads.age_s() is None
    reads.read()
    reads.read()
    assert made == [good] and good.calls == 2 and reads.renewals_total == 0
    assert reads.total_lag().lag_records == 4.0


def test_bound_must_be_positive_and_a_closed_source_refuses() -> None:
    with pytest.raises(ValueError, match="timeout_s: 0 is not above 0"):
        BoundedLagReads(lambda: None, "g", "t", timeout_s=0)
    reads, _ = _reads(_Admin("ok"))
    reads.read()
    reads.close()
    with pytest.raises(BrokerError, match="closed"):
        reads.read()
