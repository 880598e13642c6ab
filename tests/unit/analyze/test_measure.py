from __future__ import annotations

import pytest

from pytest_lagscale.analyze import METRICS, RunSpec, measure

from . import synth

SPEC = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
               capacity_per_s=100.0)


def test_measure_whole_run() -> None:
    table, log = synth.scale_out_run()
    flat = measure(table, log, SPEC).flat()
    assert set(flat) == set(METRICS)
    assert flat == {
        "reaction_time_s": 19.0, "detection_s": 5.0, "actuation_s": 5.5,
        "cold_start_s": 5.0, "join_s": 2.5, "first_fetch_s": 1.0,
        "peak_lag_records": 3000.0, "lag_build_up_rate_per_s": 200.0,
        "drain_time_s": 20.0, "drain_monotone": 1.0,
        "max_dip": pytest.approx(0.0), "max_recovery_s": 0.0,
        "scale_steps": 1.0, "direction_reversals": 0.0, "baseline_at_min_fraction": 1.0,
        # ready: 1 for 35 s, 3 for 85 s
        "replica_seconds": 35 + 3 * 85,
        # produce 100/s -> 1 replica for 80 s, 300/s -> 3 for 40 s
        "oracle_replica_seconds": 80 + 3 * 40,
        "replica_seconds_ratio": pytest.approx(290 / 200),
        # backlog 3000 at spike end / (3 full replicas * 100 - 100/s) = 15 s
        "ideal_drain_time_s": 15.0, "drain_time_ratio": pytest.approx(20 / 15),
        # r1 and r2 both ready 5 s after their start; no load columns in this timeline
        "cold_start_median_s": 5.0, "burst_load_average_max": None,
    }


def test_measure_without_spike_or_capacity() -> None:
    table, _ = synth.scale_out_run()
    spec = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3)
    flat = measure(table, synth.events(), spec).flat()
    assert [k for k, v in flat.items() if v is None] == [
        "reaction_time_s", "detection_s", "actuation_s", "cold_start_s", "join_s",
        "first_fetch_s", "lag_build_up_rate_per_s", "drain_time_s", "drain_monotone",
        "baseline_at_min_fraction", "oracle_replica_seconds", "replica_seconds_ratio",
        "ideal_drain_time_s", "drain_time_ratio", "cold_start_median_s",
        "burst_load_average_max"]


def test_run_spec_full_replicas_capped_by_partitions() -> None:
    assert SPEC.full_replicas == 3
