"""The broker's view of a command consumer: members attributed to replicas, replica events
from the group's, completions from committed offsets."""

from __future__ import annotations

import pytest

from pytest_lagscale.analyze.broker_view import (attribute_members, broker_replica_records,
                                                 commit_times)


def _r(event: str, t: float, source: str, **fields: object) -> dict:
    return {"event": event, "monotonic_s": t, "source": source, **fields}


RECORDS = [
    _r("replica_started", 1.0, "platform", replica_id="replica-0001"),
    _r("member_joined", 2.0, "group", member_id="m-a"),
    _r("member_assigned", 2.5, "group", member_id="m-a", partitions=[0, 1]),
    _r("replica_started", 10.0, "platform", replica_id="replica-0002"),
    _r("replica_started", 10.1, "platform", replica_id="replica-0003"),
    _r("member_joined", 0.5, "group", member_id="m-outside"),  # before any replica: not ours
    _r("member_joined", 13.0, "group", member_id="m-b"),
    _r("member_joined", 13.5, "group", member_id="m-c"),
    _r("member_assigned", 14.0, "group", member_id="m-c", partitions=[1]),
    _r("member_first_commit", 15.0, "group", member_id="m-c", partition=1),
]


def test_members_go_to_the_oldest_replica_started_before_them_without_a_member() -> None:
    assert attribute_members(RECORDS) == {"m-a": "replica-0001", "m-b": "replica-0002",
                                          "m-c": "replica-0003"}


def test_the_group_gives_the_replica_events_the_reaction_reads() -> None:
    out = broker_replica_records(list(RECORDS))
    added = [(r["event"], r["replica_id"], r["monotonic_s"]) for r in out if r.get("via") == "group"]
    assert added == [("subscribed", "replica-0001", 2.0), ("joined", "replica-0001", 2.5),
                     ("assigned", "replica-0001", 2.5), ("subscribed", "replica-0002", 13.0),
                     ("subscribed", "replica-0003", 13.5), ("joined", "replica-0003", 14.0),
                     ("assigned", "replica-0003", 14.0), ("first_record", "replica-0003", 15.0)]
    assert [r["monotonic_s"] for r in out] == sorted(r["monotonic_s"] for r in out)


def test_completions_are_the_committed_progress_between_reads() -> None:
    reads = [_r("committed_offsets", 100.0, "group", offsets={"0": -1, "1": 5}),
             _r("committed_offsets", 100.5, "group", offsets={"0": 10, "1": 5}),
             _r("committed_offsets", 101.0, "group", offsets={"0": 12, "1": 9})]
    times = commit_times(reads, origin_s=90.0)
    assert times is not None and times.batch_interval_s is None and not len(times.produced)
    rows = sorted(zip(times.completed["t_s"], times.completed["partition"],
                      times.completed["records"]))
    assert rows == [(10.5, 0, 10), (11.0, 0, 2), (11.0, 1, 4)]
    assert times.completed_before([12.0])[0] == pytest.approx(16)


def test_one_read_gives_no_completions() -> None:
    assert commit_times([_r("committed_offsets", 1.0, "group", offsets={"0": 3})], 0.0) is None


def test_a_rebalance_the_group_showed_gives_revokes_assigns_and_its_duration() -> None:
    records = [*RECORDS[:5],
               _r("rebalance_ended", 12.0, "group", duration_s=1.5, generation=2,
                  revoked={"m-a": [1]}, assigned={"m-a": [0], "m-b": [1]})]
    records.insert(4, _r("member_joined", 10.5, "group", member_id="m-b"))
    out = [r for r in broker_replica_records(records) if r.get("via") == "group"]
    rebalance = [(r["event"], r["replica_id"], r["monotonic_s"], r.get("partitions"),
                  r.get("duration_s")) for r in out if r["monotonic_s"] > 10.0
                 and r["event"] != "subscribed"]
    # m-b's first assignment is its member_assigned's (none here), not repeated from the rebalance
    assert rebalance == [("revoked", "replica-0001", 10.5, [1], None),
                         ("assigned", "replica-0001", 12.0, [0], None),
                         ("rebalance_done", "replica-0001", 12.0, None, 1.5)]


def test_completions_are_credited_to_the_replica_owning_the_partition() -> None:
    snapshot = _r("group_snapshot", 3.0, "group", members=[
        {"member_id": "m-a", "partitions": [0]}, {"member_id": "m-b", "partitions": [1]}])
    records = [_r("replica_started", 1.0, "platform", replica_id="replica-0001"),
               _r("replica_started", 1.1, "platform", replica_id="replica-0002"),
               _r("member_joined", 2.0, "group", member_id="m-a"),
               _r("member_joined", 2.1, "group", member_id="m-b"), snapshot,
               _r("committed_offsets", 3.5, "group", offsets={"0": 0, "1": 0}),
               _r("committed_offsets", 4.0, "group", offsets={"0": 7, "1": 3})]
    times = commit_times(records, origin_s=0.0)
    assert sorted(zip(times.completed["replica_id"], times.completed["records"])) == [
        ("replica-0001", 7), ("replica-0002", 3)]
