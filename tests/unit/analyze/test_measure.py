from __future__ import annotations

import json

import pytest

from pytest_lagscale.analyze import METRICS, RunSpec, measure

from . import synth

SPEC = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
               capacity_per_s=100.0)


def test_measure_whole_run() -> None:
    table, log = synth.scale_out_run()
    flat = measure(table, log, SPEC).flat()
    assert list(flat) == list(METRICS)
    assert flat == {
        "reaction_time_s": 19.0, "detection_s": 5.0, "actuation_s": 5.5,
        "cold_start_s": 5.0, "join_s": 2.5, "first_fetch_s": 1.0,
        "peak_lag_records": 3000.0, "lag_build_up_rate_per_s": 200.0,
        "drain_time_s": 20.0, "drain_monotone": 1.0,
        # no store: no dip is measured
        "max_dip": None, "mean_dip": None, "max_recovery_s": None,
        "rebalance_cost_records": None, "rate_window_s": None,
        "scale_steps": 1.0, "direction_reversals": 0.0, "baseline_at_min_fraction": 1.0,
        # ready: 1 for 35 s, 3 for 85 s
        "replica_seconds": 35 + 3 * 85,
        # no manifest: uniform shares over 3 partitions, so skewed == even spread here:
        # produce 100/s -> 1 replica for 80 s, 300/s -> 3 for 40 s
        "oracle_replica_seconds": 80 + 3 * 40,
        "replica_seconds_ratio": pytest.approx(290 / 200),
        # backlog 3000 at spike end / (3 full replicas * 100 - 100/s) = 15 s
        "ideal_drain_time_s": pytest.approx(15.0), "drain_time_ratio": pytest.approx(20 / 15),
        "even_spread_oracle_replica_seconds": 200.0,
        "even_spread_replica_seconds_ratio": pytest.approx(290 / 200),
        "even_spread_ideal_drain_time_s": 15.0,
        "even_spread_drain_time_ratio": pytest.approx(20 / 15),
        "hottest_partition_share": pytest.approx(1 / 3), "oracle_capped_s": 0.0,
        # r1 and r2 both ready 5 s after their start; no load columns in this timeline
        "cold_start_median_s": 5.0, "burst_load_average_max": None,
    }


def test_measure_skewed_manifest() -> None:
    # 40 % of the input on partition 0: at the spike's 300/s its owner needs 120/s > 100/s
    table, log = synth.scale_out_run()
    spec = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
                   capacity_per_s=100.0, partition_counts=(40, 30, 30))
    m = measure(table, log, spec)
    flat = m.flat()
    assert (m.shares, m.shares_source) == ((0.4, 0.3, 0.3), "manifest")
    assert (flat["oracle_replica_seconds"], flat["oracle_capped_s"]) == (200.0, 40.0)
    # partition 0: 3000 x 0.4 / (100 - 100 x 0.4) = 20 s, beyond the group's 15 s
    assert (flat["ideal_drain_time_s"], flat["drain_time_ratio"]) == (pytest.approx(20.0),
                                                                      pytest.approx(1.0))
    assert (flat["even_spread_ideal_drain_time_s"], flat["hottest_partition_share"]) == (
        15.0, pytest.approx(0.4))
    assert (m.ideal.slowest_partition, m.ideal.backlog_source) == (0, "total x share")


def test_measure_with_a_store_measures_each_step() -> None:
    # r0 100/s throughout; r1 and r2 (assigned at 38 s) 100/s each from 39 s
    table, log = synth.scale_out_run()
    store = synth.store(synth.batches("r0", 0.0, 120.0, 0.1, 10),
                        synth.batches("r1", 39.0, 90.0, 0.1, 10, partition=1),
                        synth.batches("r2", 39.0, 90.0, 0.1, 10, partition=2))
    m = measure(table, log, SPEC, store)
    [step] = m.steps
    assert (step.rebalance_s, step.dip, step.recovery_s) == (pytest.approx(38.0), 0.0, 0.0)
    flat = m.flat()
    assert (flat["max_dip"], flat["mean_dip"], flat["rebalance_cost_records"],
            flat["rate_window_s"], m.batch_interval_s) == (0.0, 0.0, 0.0, 2.0,
                                                           pytest.approx(0.1))
    assert m.ideal.backlog_source == "store"


def test_detail_sections_are_json_able() -> None:
    table, log = synth.scale_out_run()
    spec = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
                   capacity_per_s=100.0, partition_counts=(40, 30, 30))
    detail = json.loads(json.dumps(measure(table, log, spec).detail()))
    assert [step["rebalance_s"] for step in detail["steps"]] == [pytest.approx(38.0)]
    assert detail["steps"][0]["dip_reason"] == "no store"
    assert detail["skew"] == {
        "shares": [0.4, 0.3, 0.3], "shares_source": "manifest", "oracle_capped_s": 40.0,
        "rate_window_s": None, "batch_interval_s": None,
        "ideal_drain": {"time_s": pytest.approx(20.0), "partition_bound_s": pytest.approx(20.0),
                        "group_bound_s": 15.0, "slowest_partition": 0,
                        "backlog_source": "total x share"}}


def test_measure_without_spike_or_capacity() -> None:
    table, _ = synth.scale_out_run()
    spec = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3)
    flat = measure(table, synth.events(), spec).flat()
    assert [k for k, v in flat.items() if v is None] == [
        "reaction_time_s", "detection_s", "actuation_s", "cold_start_s", "join_s",
        "first_fetch_s", "lag_build_up_rate_per_s", "drain_time_s", "drain_monotone",
        "max_dip", "mean_dip", "max_recovery_s", "rebalance_cost_records", "rate_window_s",
        "baseline_at_min_fraction", "oracle_replica_seconds", "replica_seconds_ratio",
        "ideal_drain_time_s", "drain_time_ratio", "even_spread_oracle_replica_seconds",
        "even_spread_replica_seconds_ratio", "even_spread_ideal_drain_time_s",
        "even_spread_drain_time_ratio", "oracle_capped_s", "cold_start_median_s",
        "burst_load_average_max"]


def test_run_spec_full_replicas_capped_by_partitions() -> None:
    assert SPEC.full_replicas == 3
