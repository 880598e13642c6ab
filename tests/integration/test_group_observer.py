"""The group observer against the embedded broker: joins, leaves and rebalances of real
consumer groups (eager range, cooperative-sticky, KIP-848), seen from the broker's side."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer

from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.observe.group import GroupObserver

pytestmark = pytest.mark.integration
PARTITIONS = 6


class _Member:
    """A consumer polling on a thread of its own until closed."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, **config: str):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "client.id": name, "auto.offset.reset": "earliest", **config})
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.1)

    def close(self) -> None:
        """Stop polling and leave the group (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()  # LeaveGroup


def _wait_for(observer: GroupObserver, what: Any, within_s: float = 45.0) -> dict:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        found = [e for e in observer.history.events if what(e)]
        if found:
            return found[-1]
        time.sleep(0.1)
    raise AssertionError(f"not observed within {within_s} s; events: "
                         f"{[e['event'] for e in observer.history.events]}")


@pytest.fixture
def group_topic(kafka_cluster: Any) -> Iterator[tuple[KafkaAdmin, str, str]]:
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"observed-{suffix}", f"observed-{suffix}"
    admin.create_topic(topic, PARTITIONS)
    try:
        yield admin, group, topic
    finally:
        admin.close()


@pytest.fixture
def members(kafka_cluster: Any) -> Iterator[Any]:
    """``members(group, topic, name, **config)`` starts a member; all are closed afterwards."""
    started: list[_Member] = []

    def start(group: str, topic: str, name: str, **config: str) -> _Member:
        started.append(_Member(kafka_cluster.bootstrap_servers, group, topic, name, **config))
        return started[-1]

    yield start
    for member in started:
        member.close()


def _assigned_to(observer: GroupObserver, member_id: str) -> list[int]:
    return sorted(p for e in observer.history.events if e["event"] == "rebalance_ended"
                  for p in e["assigned"].get(member_id, ()))


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_joins_a_rebalance_and_a_leave_are_observed(group_topic: Any, members: Any,
                                                    tmp_path: Path, strategy: str) -> None:
    admin, group, topic = group_topic
    path = tmp_path / "group.events.jsonl"
    config = {"partition.assignment.strategy": strategy}
    with GroupObserver(admin, group, topic, path, interval_s=0.25) as observer:
        a = members(group, topic, "member-a", **config)
        first = _wait_for(observer, lambda e: e["event"] == "member_assigned")
        assert first["client_id"] == "member-a" and len(first["partitions"]) == PARTITIONS
        assert 0 <= first["join_s"] < 30
        b = members(group, topic, "member-b", **config)
        b_assigned = _wait_for(observer, lambda e: e["event"] == "member_assigned"
                               and e["client_id"] == "member-b")
        assert 0 < len(b_assigned["partitions"]) < PARTITIONS
        _wait_for(observer, lambda e: e["event"] == "rebalance_ended" and e["members"] == 2
                  and _assigned_to(observer, b_assigned["member_id"])
                  == sorted(b_assigned["partitions"]))
        moved_to_b = _assigned_to(observer, b_assigned["member_id"])
        revoked_from_a = sorted(p for e in observer.history.events
                                if e["event"] == "rebalance_ended" and e["at_s"] > first["at_s"]
                                for p in e["revoked"].get(first["member_id"], ()))
        if strategy == "cooperative-sticky":  # incremental: a gives up only what b takes
            assert revoked_from_a == moved_to_b
        else:  # eager: what b takes was a's
            assert set(moved_to_b) <= set(revoked_from_a)
        b.close()
        left = _wait_for(observer, lambda e: e["event"] == "member_left"
                         and e["member_id"] == b_assigned["member_id"])
        back = _wait_for(observer, lambda e: e["event"] == "rebalance_ended"
                         and e["at_s"] >= left["at_s"] and e["members"] == 1)
        assert sorted(back["assigned"][first["member_id"]]) == moved_to_b
        a.close()
    assert observer.failures == 0 and observer.reads > 10
    logged = {e["event"] for e in read_events(path)}
    assert {"group_snapshot", "member_joined", "member_assigned", "rebalance_ended",
            "member_left"} <= logged


def test_a_kip848_group_is_observed_joining(group_topic: Any, members: Any,
                                            tmp_path: Path) -> None:
    admin, group, topic = group_topic
    with GroupObserver(admin, group, topic, tmp_path / "g.jsonl", interval_s=0.25) as observer:
        a = members(group, topic, "member-a", **{"group.protocol": "consumer"})
        first = _wait_for(observer, lambda e: e["event"] == "member_assigned")
        assert len(first["partitions"]) == PARTITIONS and first["join_s"] >= 0
        a.close()
        _wait_for(observer, lambda e: e["event"] == "member_left")
    snapshots = [e for e in read_events(tmp_path / "g.jsonl") if e["event"] == "group_snapshot"]
    # before its first member the group does not exist yet (described as an empty classic one)
    assert {s["protocol"] for s in snapshots if s["members"]} == {"consumer"}
