"""The replica's liveness rule (spark_consumer.liveness) with a fake clock and fake statistics.

The rule: a joined replica is not live once its group went longer than the session timeout
without a healthy moment (statistics showing an assignment, or the coordinator connected and the
member steady or answered; an assignment callback; a batch); it is live while starting, before
its first assignment and while draining. The statistics' shapes are librdkafka 2.16.0's, as
measured against the embedded broker (see spark_consumer/liveness.py).
"""

from __future__ import annotations

import io

import pytest

from pytest_lagscale.contract.clock import FakeClock
from spark_consumer.eventlog import EventLog, read_events
from spark_consumer.liveness import GroupLiveness, GroupStats, parse_group_stats

from .fakes import stats_json

BROKEN = stats_json("up", "wait-join", assignment_size=0, stateage_ms=23_900)


def _liveness(tmp_path, timeout_s: float = 10.0) -> tuple[GroupLiveness, FakeClock]:
    clock = FakeClock(100.0)
    events = EventLog("r-1", tmp_path / "events.jsonl", clock, echo=io.StringIO())
    return GroupLiveness(timeout_s, clock, events, "r-1"), clock


def _events(tmp_path, name: str) -> list[dict]:
    path = tmp_path / "events.jsonl"
    return [e for e in read_events(path) if e["event"] == name] if path.exists() else []


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(stats_json(), GroupStats("up", "steady", 5.0, 2, 10), id="steady"),
    pytest.param(BROKEN, GroupStats("up", "wait-join", 23.9, 0, 10), id="broken"),
    pytest.param(stats_json(coordinator_rx=None), GroupStats("up", "steady", 5.0, 2, None),
                 id="no-coordinator-broker-yet"),
    pytest.param('{"cgrp": {"state": "up", "joinstate": "steady", "stateage": 10, '
                 '"assignment_size": 0}}', GroupStats("up", "steady", 0.01, 0),
                 id="documented-joinstate-spelling"),
    pytest.param('{"name": "rdkafka#producer-1"}', None, id="no-cgrp"),
    pytest.param('{"cgrp": ', None, id="torn-json"),
    pytest.param('{"cgrp": {"assignment_size": "many"}}', None, id="bad-field"),
])
def test_parse_group_stats(text: str, expected: GroupStats | None) -> None:
    assert parse_group_stats(text) == expected


@pytest.mark.parametrize(("state", "join_state", "assigned", "rx", "healthy"), [
    pytest.param("up", "steady", 3, 10, True, id="in-group"),
    pytest.param("up", "steady", 0, 10, True, id="idle-classic-member-more-members-than-partitions"),
    pytest.param("up", "init", 0, 11, True, id="idle-kip-848-member-answered-by-its-coordinator"),
    pytest.param("up", "wait-join", 2, 10, True, id="cooperative-rebalance-keeps-partitions"),
    pytest.param("wait-coord", "steady", 2, 10, True, id="holds-partitions-coordinator-lost"),
    pytest.param("up", "wait-join", 0, 10, False, id="no-assignment-no-answer"),
    pytest.param("up", "init", 0, 10, False, id="kip-848-member-no-answer"),
    pytest.param("query-coord", "init", 0, 11, False, id="no-coordinator"),
    pytest.param("up", "wait-metadata", 0, None, False, id="rejoining"),
])
def test_healthy_stats(state: str, join_state: str, assigned: int, rx: int | None,
                       healthy: bool) -> None:
    assert GroupStats(state, join_state, 1.0, assigned, rx).healthy(previous_rx=10) is healthy
    assert GroupStats(state, join_state, 1.0, assigned, rx).healthy(previous_rx=None) is (
        healthy and rx != 11)  # a first callback has nothing to compare the count with


def test_a_group_without_a_healthy_moment_beyond_the_session_timeout_is_not_live(
        tmp_path) -> None:
    live, clock = _liveness(tmp_path)
    live.on_stats(stats_json())  # healthy at t=100
    for _ in range(10):
        clock.advance(1.0)
        live.on_stats(BROKEN)
    ok, reason = live.check()  # exactly the session timeout: still live
    assert ok and reason.startswith("r-1: live: group healthy 10.0 s ago (stats)")
    clock.advance(0.5)
    live.on_stats(BROKEN)
    ok, reason = live.check()
    assert not ok
    assert reason == ("r-1: not live: group session broken, no healthy group moment for 10.5 s "
                      "(> session timeout 10 s); statistics 0.0 s ago: cgrp state 'up' for "
                      "23.9 s, join_state 'wait-join', 0 partitions assigned")
    assert "\n" not in reason
    clock.advance(5.0)
    assert not live.check()[0]
    failed = _events(tmp_path, "liveness_failed")
    assert len(failed) == 1  # once per transition, not per check
    assert failed[0]["since_healthy_s"] == 10.5 and failed[0]["session_timeout_s"] == 10.0
    assert failed[0]["reason"] == reason and failed[0]["cgrp"]["join_state"] == "wait-join"


def test_a_member_answered_by_its_coordinator_stays_live_and_one_unanswered_does_not(
        tmp_path) -> None:
    # KIP-848 members given nothing stay up/init; each heartbeat's answer shows they are in.
    live, clock = _liveness(tmp_path)
    for rx in range(20, 50):
        clock.advance(1.0)
        live.on_stats(stats_json("up", "init", assignment_size=0, coordinator_rx=rx))
        assert live.check()[0]
    for _ in range(11):  # "Timed out 0 in-flight, 0 retry-queued, 1 out-queue": no answer
        clock.advance(1.0)
        live.on_stats(stats_json("up", "init", assignment_size=0, coordinator_rx=49))
    ok, reason = live.check()
    assert not ok and "no healthy group moment for 11.0 s" in reason


def test_no_statistics_at_all_is_not_live_either(tmp_path) -> None:
    live, clock = _liveness(tmp_path, timeout_s=3.0)
    live.healthy("assign")
    clock.advance(3.5)  # a poll thread that serves no callback outside any batch
    ok, reason = live.check()
    assert not ok and reason.endswith("(> session timeout 3 s); no statistics yet")


def test_a_healthy_moment_ends_the_failure_once(tmp_path) -> None:
    live, clock = _liveness(tmp_path)
    clock.advance(11.0)
    assert not live.check()[0]
    clock.advance(4.0)
    live.on_stats(stats_json("up", "steady", assignment_size=0))
    assert live.check()[0] and live.check()[0]
    recovered = _events(tmp_path, "liveness_recovered")
    assert [(e["failed_for_s"], e["via"]) for e in recovered] == [(4.0, "stats")]
    clock.advance(10.5)
    assert not live.check()[0]
    assert len(_events(tmp_path, "liveness_failed")) == 2


@pytest.mark.parametrize("mark", ["assign", "joined"])
def test_an_assignment_or_the_join_is_a_healthy_moment(tmp_path, mark: str) -> None:
    live, clock = _liveness(tmp_path)
    clock.advance(9.0)
    live.healthy(mark)
    clock.advance(9.0)
    assert live.check()[0]
    clock.advance(1.5)
    assert not live.check()[0]


def test_a_slow_batch_is_never_taken_for_a_dead_session(tmp_path) -> None:
    live, clock = _liveness(tmp_path)
    clock.advance(8.0)  # 8 s since the last healthy moment when the batch starts
    live.batch_started()
    for _ in range(60):  # a 60 s Spark batch: the poll thread serves no statistics meanwhile
        clock.advance(1.0)
        ok, reason = live.check()
        assert ok and reason == "r-1: live (processing a batch)"
    live.batch_finished()  # the batch's end is a healthy moment too
    clock.advance(10.0)
    assert live.check()[0]
    clock.advance(0.5)
    assert not live.check()[0]


def test_exempt_phases_are_live_and_write_no_event(tmp_path) -> None:
    live, clock = _liveness(tmp_path)
    clock.advance(60.0)
    for phase in ("engine spark starting", "waiting for the first assignment", "draining"):
        assert live.check(phase) == (True, f"r-1: live ({phase})")
    assert _events(tmp_path, "liveness_failed") == []


def test_statistics_callback_never_raises(tmp_path) -> None:
    live, clock = _liveness(tmp_path)
    for text in ("", "not json", "[]", '{"cgrp": null}', '{"cgrp": {"stateage": "x"}}'):
        live.on_stats(text)
    assert live.last_stats is None
