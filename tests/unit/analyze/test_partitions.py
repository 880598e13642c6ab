"""Experiment 7's analysis of a partition count change (P -> 2P), on synthetic tables."""

from __future__ import annotations

import pandas as pd
import pytest

from pytest_lagscale.analyze.partitions import (
    PartitionChange,
    forced_rebalance,
    key_remap,
    max_owners_after,
    new_partition_firsts,
    partition_change,
    reordered_entities,
    replicas_after,
    trigger_view,
)

from . import synth

CHANGE = PartitionChange(30.0, 2, 4)
SHIFT_S = 1_000.0   # wall seconds - SHIFT_S = run seconds in the store tables below


def _change_log() -> pd.DataFrame:
    return synth.events(
        (29.0, "r1", "assigned", {"partitions": [0]}),          # before the change: not it
        (30.1, "runner", "action", {"action": "increase_partitions", "started_s": 30.0,
                                    "partitions_before": 2, "partitions_after": 4}),
        (33.0, "r1", "revoked", {"partitions": [1]}),
        (33.2, "r2", "assigned", {"partitions": [1, 2]}),
        (33.3, "r2", "revoked", {"partitions": [0]}),             # back to the same owner:
        (33.35, "r2", "assigned", {"partitions": [0]}),           # stopped, not moved
        (33.4, "r1", "assigned", {"partitions": [3]}),
        (36.0, "platform", "replica_started", {"replica_id": "r3"}),
        (40.0, "r3", "subscribed", {}),
        (41.0, "r3", "assigned", {"partitions": [2]}),            # the scale-up's rebalance
        (41.0, "r2", "revoked", {"partitions": [2]}),
    )


def test_the_action_event_gives_the_change() -> None:
    assert partition_change(_change_log()) == CHANGE
    assert CHANGE.new_partitions == (2, 3)
    assert partition_change(synth.events((1.0, "r1", "assigned", {"partitions": [0]}))) is None


def test_forced_rebalance_ends_when_every_new_partition_has_an_owner() -> None:
    out = forced_rebalance(_change_log(), CHANGE)
    assert out["anchor_s"] == pytest.approx(33.0)
    assert out["delay_s"] == pytest.approx(3.0)
    assert out["end_s"] == pytest.approx(33.4)       # partition 3's first owner
    assert out["duration_s"] == pytest.approx(0.4)
    assert out["complete"] is True
    assert out["revoked"] == {"r1": [1], "r2": [0]}
    assert out["assigned"] == {"r1": [3], "r2": [0, 1, 2]}
    assert out["new_partition_owner"] == {2: "r2", 3: "r1"}
    assert out["moved"] == [{"partition": 1, "from": "r1", "to": "r2"}]
    assert out["partitions_stopped"] == 2
    assert out["merged_with_scale_up"] is False      # r3's rebalance at 41 s is the next one


def test_a_scale_up_member_that_gets_a_partition_in_it_is_one_rebalance() -> None:
    log = synth.events(
        (20.5, "platform", "replica_started", {"replica_id": "r3"}),
        (22.0, "r3", "subscribed", {}),
        (23.0, "r1", "revoked", {"partitions": [1]}),
        (23.5, "r3", "assigned", {"partitions": [1, 3]}),
        (24.0, "r2", "assigned", {"partitions": [2]}),
        (24.5, "r3", "revoked", {"partitions": [1]}),     # after the window
        (25.0, "r1", "assigned", {"partitions": [1]}),
    )
    out = forced_rebalance(log, PartitionChange(20.0, 2, 4))
    assert out["merged_with_scale_up"] is True
    assert (out["anchor_s"], out["end_s"], out["duration_s"]) == (23.0, 24.0, 1.0)
    assert out["moved"] == [{"partition": 1, "from": "r1", "to": "r3"}]
    assert out["new_partition_owner"] == {2: "r2", 3: "r3"}


def test_a_new_partition_without_an_owner_for_10_s_leaves_it_incomplete() -> None:
    log = synth.events((31.0, "r1", "assigned", {"partitions": [2]}),
                       (45.0, "r2", "assigned", {"partitions": [3]}))
    out = forced_rebalance(log, CHANGE)
    assert out["complete"] is False
    assert (out["end_s"], out["duration_s"]) == (41.0, 10.0)
    assert out["new_partition_owner"] == {2: "r1"}


def test_no_callback_after_the_change_is_no_anchor() -> None:
    log = synth.events((10.0, "r1", "assigned", {"partitions": [0, 1]}))
    assert forced_rebalance(log, CHANGE) == {"anchor_s": None}


def _store(rows: list[tuple[int, int, int, float, float]]) -> pd.DataFrame:
    """(entity_id, partition, seq, produced run s, written run s) -> store rows in wall ns."""
    return pd.DataFrame({"entity_id": [r[0] for r in rows], "partition": [r[1] for r in rows],
                         "seq": [r[2] for r in rows],
                         "ts_ns": [int((r[3] + SHIFT_S) * 1e9) for r in rows],
                         "written_at_ns": [int((r[4] + SHIFT_S) * 1e9) for r in rows]})


def test_new_partition_firsts_from_store_times_and_batch_commits() -> None:
    store = _store([(1, 0, 0, 10.0, 11.0), (2, 2, 5, 34.0, 36.5), (3, 2, 6, 34.5, 36.0)])
    log = synth.events(
        (35.0, "r2", "batch", {"partitions": [2], "records": 0}),   # nothing done: no commit
        (37.0, "r2", "batch", {"partitions": [0, 2], "records": 2}),
        (38.0, "r2", "batch", {"partitions": [2], "records": 5}),
    )
    first, second = new_partition_firsts(store, log, CHANGE, SHIFT_S)
    assert first == {"partition": 2, "records": 2, "first_produced_s": pytest.approx(34.0),
                     "first_processed_s": pytest.approx(36.0), "first_commit_s": 37.0,
                     "produced_after_change_s": pytest.approx(4.0)}
    assert second == {"partition": 3, "records": 0, "first_produced_s": None,
                      "first_processed_s": None, "first_commit_s": None,
                      "produced_after_change_s": None}


def _poll(t_s: float, lag: dict[int, int], metric: float) -> tuple:
    return (t_s, "controller", "keda_poll", {"triggers": [
        {"partition_lag": {str(k): v for k, v in lag.items()}, "metric_value": metric}]})


def test_trigger_view_sees_the_new_partitions_whole_log_under_earliest() -> None:
    log = synth.events(
        _poll(28.0, {0: 900, 1: 900}, 1000.0),                 # before the change: ignored
        _poll(31.0, {0: 1000, 1: 1000}, 1000.0),               # capped at 2 x 500
        _poll(33.0, {0: 1100, 1: 1100, 2: 40, 3: 60}, 2000.0),  # new: whole log (no commit)
        _poll(35.0, {0: 1200, 1: 1200, 2: 10, 3: 300}, 2000.0),
    )
    out = trigger_view(log, CHANGE, 500, "earliest")
    assert out["first_seen_s"] == pytest.approx(33.0)
    assert out["new_partition_lag_first_seen"] == 100
    assert out["new_partition_lag_max"] == 310
    assert out["max_partitions_counted"] == 4
    assert out["max_metric_value"] == 2000.0
    assert out["max_lag_over_threshold"] == pytest.approx(2710 / 500)
    assert (out["cap_before_records"], out["cap_after_records"]) == (1000, 2000)
    assert out["offset_reset_policy"] == "earliest"


def test_trigger_view_without_a_poll_that_counted_new_partitions() -> None:
    out = trigger_view(synth.events(_poll(31.0, {0: 5, 1: 5}, 10.0)), CHANGE, 500, "latest")
    assert out["first_seen_s"] is None and out["new_partition_lag_max"] is None
    assert out["max_lag_over_threshold"] == pytest.approx(0.02)


def test_replicas_after_the_change_against_old_p() -> None:
    table = synth.timeline(60, desired_replicas={0: 2, 34: 4}, current_replicas={0: 2, 35: 4},
                           ready_replicas={0: 2, 45: 3})
    out = replicas_after(table, CHANGE)
    assert out == {"old_p": 2, "new_p": 4, "max_desired": 4, "max_current": 4, "max_ready": 3,
                   "first_above_old_p_s": 34.0}
    assert replicas_after(synth.timeline(60, desired_replicas=2), CHANGE)[
        "first_above_old_p_s"] is None


def test_key_remap_counts_entities_that_changed_partition() -> None:
    store = _store([
        (1, 0, 0, 10.0, 11.0), (1, 2, 10, 34.0, 35.0),   # moved, order kept
        (2, 1, 1, 10.0, 50.0), (2, 3, 11, 35.0, 36.0),   # moved, newer processed first
        (3, 0, 2, 10.0, 11.0), (3, 0, 12, 35.0, 40.0),   # stayed
        (4, 1, 3, 10.0, 11.0),                           # only before
        (5, 2, 9, 33.0, 34.0),                           # only after (the split: seq 9)
    ])
    out = key_remap(store, CHANGE)
    assert out == {"entities": 5, "spanning_entities": 3, "moved_entities": 2,
                   "moved_fraction": pytest.approx(2 / 3), "reordered_entities": 1,
                   "expected_fraction": 0.5}


def test_key_remap_without_records_on_new_partitions() -> None:
    out = key_remap(_store([(1, 0, 0, 1.0, 2.0)]), PartitionChange(30.0, 2, 3))
    assert out["spanning_entities"] == 0 and out["moved_fraction"] is None
    assert out["expected_fraction"] is None


def test_reordering_on_the_same_partition_is_not_counted() -> None:
    # one partition keeps its own order (Kafka's); the store's write order within it is no
    # evidence of lost per-key order
    assert reordered_entities(_store([(1, 0, 0, 1.0, 5.0), (1, 0, 1, 2.0, 4.0)])) == 0
    assert reordered_entities(_store([(1, 0, 0, 1.0, 5.0), (1, 2, 1, 2.0, 4.0)])) == 1


def test_owners_after_the_change_count_replicas_with_a_partition() -> None:
    owned = pd.DataFrame({"t_s": [1.0, 1.0, 31.0, 32.0, 33.0, 40.0],
                          "replica_id": ["r1", "r2", "r3", "r1", "r4", "r3"],
                          "partitions": [2, 2, 0, 1, 1, 0]})
    # at 33 s: r1 (1), r2 (2), r4 (1) own partitions, r3 owns none
    assert max_owners_after(owned, CHANGE) == 3
    assert max_owners_after(owned, PartitionChange(50.0, 2, 4)) == 0
