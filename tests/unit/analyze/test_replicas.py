"""Per-replica partitions, records and rebalance episodes (experiment 4), on synthetic tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pytest_lagscale.analyze.replicas import (RebalanceEpisode, controller_syncs, ownership,
                                              rebalance_episodes, replica_table)

from . import synth

P = 2


def _assigned(t: float, rid: str, added: list[int], assignment: list[int]) -> tuple:
    return (t, rid, "assigned", {"partitions": added, "assignment": assignment})


def _ceiling_log():
    """P = 2. r1 joins at 1 s (both partitions), r2 at 8 s (takes 1); the surplus r3 and r4
    join at 20-22 s (no partition moves); r4 leaves at 40 s, r2 at 50 s (r1 takes 1 back), r1
    is SIGKILLed at 60 s and r3 takes both partitions at 100 s; the log ends at 110 s."""
    rows = [(0.0, "platform", "replica_started", {"replica_id": "r1"}),
            (0.0, "platform", "replica_started", {"replica_id": "r2"}),
            _assigned(1.0, "r1", [0, 1], [0, 1]), (1.0, "r1", "joined", {}),
            (8.0, "r1", "revoked", {"partitions": [1]}), _assigned(8.0, "r1", [], [0]),
            _assigned(8.5, "r2", [1], [1]), (8.5, "r2", "joined", {}),
            (10.0, "platform", "replica_started", {"replica_id": "r3"}),
            (10.0, "platform", "replica_started", {"replica_id": "r4"}),
            _assigned(20.0, "r3", [], []), (20.0, "r3", "joined", {}),
            _assigned(20.1, "r1", [], [0]), _assigned(20.2, "r2", [], [1]),
            _assigned(22.0, "r4", [], []), (22.0, "r4", "joined", {}),
            _assigned(22.1, "r1", [], [0]), _assigned(22.2, "r2", [], [1]),
            (40.0, "r4", "closed", {}), (40.3, "r4", "exited", {}),
            _assigned(40.4, "r1", [], [0]), _assigned(40.4, "r2", [], [1]),
            _assigned(40.4, "r3", [], []),
            (50.0, "r2", "revoked", {"partitions": [1]}), (50.0, "r2", "closed", {}),
            _assigned(50.5, "r1", [1], [0, 1]), _assigned(50.5, "r3", [], []),
            (60.0, "platform", "replica_stopped", {"replica_id": "r1", "outcome": "killed"}),
            _assigned(100.0, "r3", [0, 1], [0, 1]),
            (110.0, "runner", "load_end", {})]
    return synth.events(*rows)


def _completions(spec: dict[str, tuple[float, float, int]]) -> pd.DataFrame:
    """``{replica: (start_s, end_s, records per 0.1 s bin)}`` -> completion bins."""
    rows = [(round(t, 6), rid, n) for rid, (a, b, n) in spec.items()
            for t in np.arange(a, b - 1e-9, 0.1)]
    return pd.DataFrame(rows, columns=["t_s", "replica_id", "records"])


def test_ownership_follows_assignments_and_zeroes_a_killed_replica() -> None:
    owners = ownership(_ceiling_log())
    r1 = owners[owners["replica_id"] == "r1"]
    assert list(zip(r1["t_s"].round(3), r1["event"], r1["partitions"])) == [
        (1.0, "assigned", 2), (8.0, "revoked", 1), (8.0, "assigned", 1), (20.1, "assigned", 1),
        (22.1, "assigned", 1), (40.4, "assigned", 1), (50.5, "assigned", 2), (60.0, "left", 0)]
    assert r1["assignment"].iloc[-2] == (0, 1)
    r2 = owners[owners["replica_id"] == "r2"]
    assert list(r2["partitions"]) == [1, 1, 1, 1, 0]  # revoked at 50 s, then left owning none


def test_replica_table_per_replica() -> None:
    table = replica_table(_ceiling_log(), _completions({"r1": (1.0, 60.0, 40),
                                                        "r2": (8.5, 50.0, 40),
                                                        "r3": (100.0, 110.0, 80)}), P)
    by_id = {r.replica_id: r for r in table.replicas}
    assert [(r.replica_id, r.ordinal, r.surplus) for r in table.replicas] == [
        ("r1", 1, False), ("r2", 2, False), ("r3", 3, True), ("r4", 4, True)]
    r1, r2, r3, r4 = (by_id[k] for k in ("r1", "r2", "r3", "r4"))
    assert (r1.max_partitions, r1.partitions_owned, r1.left_s) == (2, (0, 1), 60.0)
    # 2 x (8 - 1) + 1 x (50.5 - 8) + 2 x (60 - 50.5)
    assert r1.partition_seconds == pytest.approx(14.0 + 42.5 + 19.0)
    assert r1.records == 590 * 40 and r1.rebalance_callbacks == 6
    assert (r2.partitions_owned, r2.partition_seconds, r2.joined_s) == ((1,), 41.5, 8.5)
    assert (r3.max_partitions, r3.partition_seconds, r3.records) == (2, 20.0, 100 * 80)
    assert (r4.max_partitions, r4.partitions_owned, r4.records, r4.left_s) == (0, (), 0, 40.0)
    assert (r4.started_s, r4.joined_s) == (10.0, 22.0)


def test_rebalance_episodes_attribute_joins_and_leaves() -> None:
    episodes = rebalance_episodes(_ceiling_log(), surplus={"r3", "r4"})
    summary = [(e.start_s, e.members_before, e.members_after, e.joined, e.left,
                e.partitions_moved, e.owner_callbacks, e.by_surplus) for e in episodes]
    assert summary == [
        (1.0, 0, 1, ("r1",), (), 0, 0, False),
        (8.0, 1, 2, ("r2",), (), 1, 2, False),
        (20.0, 2, 4, ("r3", "r4"), (), 0, 4, True),
        (40.4, 4, 3, (), ("r4",), 0, 2, True),
        (50.0, 3, 2, (), ("r2",), 1, 2, False),
        # the SIGKILL at 60 s shows no callback until the survivors notice at 100 s
        (100.0, 2, 1, (), ("r1",), 0, 0, False),
    ]
    assert episodes[2].end_s == 22.2


@pytest.mark.parametrize(("gap_s", "episodes"), [
    pytest.param(5.0, 6, id="default-gap"),
    pytest.param(1.0, 7, id="short-gap-splits-the-surplus-joins"),
    pytest.param(8.0, 5, id="long-gap-merges-the-first-two-joins"),
])
def test_episode_gap(gap_s: float, episodes: int) -> None:
    assert len(rebalance_episodes(_ceiling_log(), {"r3", "r4"}, gap_s)) == episodes


def test_table_json_counts_surplus() -> None:
    doc = replica_table(_ceiling_log(), _completions({"r3": (100.0, 101.0, 5)}), P).to_dict()
    assert (doc["surplus_replicas"], doc["surplus_rebalances"], doc["surplus_records"],
            doc["surplus_max_partitions"]) == (2, 2, 50, 2)
    assert doc["episodes"][2]["joined"] == ("r3", "r4") and doc["partitions"] == P
    assert doc["replicas"][3]["replica_id"] == "r4"


def test_table_without_surplus_replicas() -> None:
    doc = replica_table(_ceiling_log(), _completions({}), partitions=8).to_dict()
    assert (doc["surplus_replicas"], doc["surplus_rebalances"], doc["surplus_records"]) == (
        0, 0, None)


def test_episode_type_is_frozen() -> None:
    episode = rebalance_episodes(_ceiling_log(), set())[0]
    assert isinstance(episode, RebalanceEpisode)
    with pytest.raises(AttributeError):
        episode.by_surplus = True  # type: ignore[misc]


def test_controller_syncs_read_the_kafka_trigger() -> None:
    def sync(t: float, lag: dict[str, int], metric: float, proposal: int | None,
             after: int) -> tuple:
        trigger = {"type": "kafka", "total_lag": min(sum(lag.values()), 400),  # KEDA's cap
                   "metric_value": metric, "partition_lag": lag, "proposal": proposal}
        return (t, "controller", "hpa_sync", {"triggers": [trigger], "replicas_after": after})

    log = synth.events(sync(1.0, {"0": 300, "1": 900}, 200.0, 2, 3),
                       (2.0, "controller", "hpa_sync", {"triggers": [], "replicas_after": 8}),
                       sync(3.0, {"0": 0, "1": 50}, 50.0, None, 4))
    table = controller_syncs(log)
    assert list(table.itertuples(index=False, name=None)) == [
        (1.0, 1200, 200.0, 2, 3, 300), (3.0, 50, 50.0, -1, 4, 0)]
    no_partitions = synth.events((4.0, "controller", "hpa_sync", {"triggers": [
        {"type": "kafka", "total_lag": 7, "metric_value": 7.0}], "replicas_after": 1}))
    assert list(controller_syncs(no_partitions).itertuples(index=False, name=None)) == [
        (4.0, 7, 7.0, -1, 1, -1)]
    assert controller_syncs(synth.events((0.0, "runner", "load_start", {}))).empty



def test_an_episode_without_membership_change_is_not_the_surplus() -> None:
    log = synth.events(_assigned(1.0, "r1", [0, 1], [0, 1]), (1.0, "r1", "joined", {}),
                       _assigned(30.0, "r1", [], [0, 1]))  # e.g. a broker-side rebalance
    episodes = rebalance_episodes(log, surplus={"r1"})
    assert [(e.joined, e.left, e.by_surplus) for e in episodes] == [
        (("r1",), (), True), ((), (), False)]


def test_the_run_ends_at_its_record_phase_and_pending_changes_count() -> None:
    """P = 1: r2 (surplus) leaves at 50 s, the run records at 53 s before the owner r1
    rebalanced for it, then the harness stops r1 (its revoke is no part of the run)."""
    log = synth.events(_assigned(1.0, "r1", [0], [0]), (1.0, "r1", "joined", {}),
                       _assigned(20.0, "r2", [], []), (20.0, "r2", "joined", {}),
                       _assigned(20.5, "r1", [], [0]), (50.0, "r2", "closed", {}),
                       (53.0, "runner", "run_phase", {"phase": "record"}),
                       (56.0, "r1", "revoked", {"partitions": [0]}), (56.0, "r1", "closed", {}))
    table = replica_table(log, _completions({}), partitions=1)
    assert [(e.start_s, e.joined, e.left, e.by_surplus, e.observed) for e in table.episodes] == [
        (1.0, ("r1",), (), False, True), (20.0, ("r2",), (), True, True),
        (50.0, (), ("r2",), True, False)]
    assert table.surplus_rebalances == 2
    r1 = table.replicas[0]
    assert (r1.left_s, r1.partition_seconds, r1.rebalance_callbacks) == (None, 52.0, 1)
    assert list(ownership(log)["t_s"].round(3)) == [1.0, 20.0, 20.5]
