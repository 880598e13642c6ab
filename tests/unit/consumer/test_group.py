"""Commits, rebalance callbacks and the KIP-848 membership probe, against fakes."""

from __future__ import annotations

import io
import json

import pytest
from confluent_kafka import Consumer

from pytest_lagscale.contract.clock import FakeClock
from spark_consumer.eventlog import EventLog
from spark_consumer.group import (
    GroupConsumer,
    MembershipProbe,
    OffsetCommitter,
    RebalanceHandler,
)
from spark_consumer.metrics import ReplicaMetrics

from .fakes import FakeConsumer, FakeTopicPartition


def _tp(topic: str, p: int, o: int) -> FakeTopicPartition:
    return FakeTopicPartition(topic, p, o)


def _setup(mode: str = "manual", fail_commits: int = 0):
    consumer = FakeConsumer(partitions=[0, 1, 2], fail_commits=fail_commits)
    echo = io.StringIO()
    events, metrics, clock = EventLog("r-1", None, FakeClock(), echo), ReplicaMetrics(), FakeClock()
    committer = OffsetCommitter(consumer, "t", mode, metrics, events, make_tp=_tp)
    handler = RebalanceHandler(committer, metrics, events, clock)
    return consumer, committer, handler, metrics, clock, echo


def _events(echo: io.StringIO) -> list[str]:
    return [json.loads(line)["event"] for line in echo.getvalue().splitlines()]


def test_fake_and_real_consumer_implement_the_protocol() -> None:
    assert isinstance(FakeConsumer(partitions=[]), GroupConsumer)
    assert issubclass(Consumer, GroupConsumer)


def test_manual_commit_is_synchronous_and_exact() -> None:
    consumer, committer, _, metrics, _, _ = _setup()
    assert committer.commit({0: 5, 2: 9}, records=7)
    assert consumer.commits == [{0: 5, 2: 9}]
    assert committer.committed == {0: 5, 2: 9} and committer.pending == {}
    assert metrics.records_committed._value.get() == 7


def test_failed_commit_stays_pending_and_is_retried_with_the_next_batch() -> None:
    consumer, committer, _, metrics, _, echo = _setup(fail_commits=1)
    assert not committer.commit({0: 5}, records=5)
    assert committer.pending == {0: 5} and "commit_failed" in _events(echo)
    assert committer.commit({1: 3}, records=3)
    assert consumer.commits == [{0: 5, 1: 3}]
    assert metrics.commit_failures._value.get() == 1
    assert metrics.records_committed._value.get() == 8


def test_revoke_commits_pending_offsets_of_the_revoked_partitions_before_returning() -> None:
    consumer, committer, handler, _, _, _ = _setup(fail_commits=1)
    handler.on_assign(consumer, [FakeTopicPartition("t", p) for p in (0, 1)])
    committer.commit({0: 5, 1: 7}, records=12)  # fails: both pending
    handler.on_revoke(consumer, [FakeTopicPartition("t", 1)])
    assert consumer.commits == [{1: 7}]
    assert committer.pending == {0: 5}
    assert handler.assigned == {0}


def test_lost_partitions_are_not_committed() -> None:
    consumer, committer, handler, _, _, echo = _setup(fail_commits=1)
    handler.on_assign(consumer, [FakeTopicPartition("t", 0)])
    committer.commit({0: 5}, records=5)
    handler.on_lost(consumer, [FakeTopicPartition("t", 0)])
    assert consumer.commits == [] and committer.pending == {}
    assert _events(echo)[-1] == "lost"


def test_auto_mode_stores_offsets_and_commits_them_on_revoke() -> None:
    consumer, committer, handler, _, _, _ = _setup(mode="auto")
    handler.on_assign(consumer, [FakeTopicPartition("t", 0)])
    committer.commit({0: 4}, records=4)
    assert consumer.stored == [{0: 4}] and consumer.commits == []
    handler.on_revoke(consumer, [FakeTopicPartition("t", 0)])
    assert consumer.commits == [{0: 4}]


def test_first_assignment_is_a_join_and_later_episodes_are_timed() -> None:
    consumer, _, handler, metrics, clock, echo = _setup()
    handler.on_assign(consumer, [FakeTopicPartition("t", p) for p in (0, 1, 2)])
    assert handler.joined and metrics.rebalances._value.get() == 0
    clock.advance(1.0)
    handler.on_revoke(consumer, [FakeTopicPartition("t", 2)])  # cooperative: only moved ones
    clock.advance(0.25)
    handler.on_assign(consumer, [])
    assert metrics.rebalances._value.get() == 1
    assert metrics.rebalance_duration._sum.get() == pytest.approx(0.25)
    assert handler.assigned == {0, 1} and metrics.assigned_partitions._value.get() == 2
    assert _events(echo) == ["assigned", "joined", "revoked", "assigned", "rebalance_done"]


def test_eager_revoke_all_then_assign_counts_one_rebalance() -> None:
    consumer, _, handler, metrics, clock, _ = _setup()
    handler.on_assign(consumer, [FakeTopicPartition("t", p) for p in (0, 1, 2)])
    handler.on_revoke(consumer, [FakeTopicPartition("t", p) for p in (0, 1, 2)])
    clock.advance(2.0)
    handler.on_assign(consumer, [FakeTopicPartition("t", 1)])
    assert metrics.rebalances._value.get() == 1 and handler.assigned == {1}
    assert metrics.rebalance_duration._sum.get() == pytest.approx(2.0)


def test_revoke_during_close_is_not_a_rebalance() -> None:
    consumer, _, handler, metrics, _, _ = _setup()
    handler.on_assign(consumer, [FakeTopicPartition("t", 0)])
    handler.closing = True
    handler.on_revoke(consumer, [FakeTopicPartition("t", 0)])
    assert metrics.rebalances._value.get() == 0


def test_membership_probe_asks_at_most_once_per_interval() -> None:
    clock, calls = FakeClock(), []

    def describe() -> set[str]:
        calls.append(clock.now())
        return {"m-1"} if clock.now() >= 2.0 else {"m-0"}

    probe = MembershipProbe(lambda: "m-1", describe, clock, interval_s=1.0)
    seen = []
    for _ in range(16):
        seen.append(probe.joined())
        clock.advance(0.25)
    assert calls == [1.0, 2.0]  # and not again once it was found
    assert seen.index(True) == 8 and all(seen[8:])


def test_a_revoke_whose_commit_fails_drops_the_offsets_for_the_next_owner() -> None:
    # Retrying them later could move the next owner's committed offset backwards.
    consumer, committer, handler, _, _, echo = _setup(fail_commits=2)
    handler.on_assign(consumer, [FakeTopicPartition("t", p) for p in (0, 1)])
    committer.commit({0: 5, 1: 7}, records=12)  # fails: both pending
    handler.on_revoke(consumer, [FakeTopicPartition("t", 1)])  # fails again
    assert consumer.commits == [] and committer.pending == {0: 5}
    abandoned = [json.loads(line) for line in echo.getvalue().splitlines()
                 if json.loads(line)["event"] == "commit_abandoned"]
    assert [e["offsets"] for e in abandoned] == [{"1": 7}]
    assert committer.commit({}, 0) and consumer.commits == [{0: 5}]
