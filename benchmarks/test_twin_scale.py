"""The twin far beyond a test rig: P = 1,000 partitions, up to 500 replicas, 1M records/s for
30 minutes, simulated in under a minute on this machine (docs/twin.md, "Full scale and far beyond").

Inputs (``benchmarks/data``): ``twin-scale-1000.yaml`` (100k/s for 1 minute, then 1M/s for 29;
1.75 billion records, each partition's expected share of the seeded keys),
``scaledobject-scale-500.yaml`` (the full-scale ScaledObject with maxReplicaCount 500) and
``consumer-deployment-scale.yaml`` (1 ms writes, 5,000-record batches: about 2,800 records/s per
replica). The committed Spark calibration describes a 2-core machine where every replica shares
the CPU; on a cluster each replica has its own, so the contention terms (engine time per member
and per starting replica, cold-start cores) are set to a cluster's: none, and every starter on
its own core. The headline figures, the most desired and the most running replicas (KEDA's
lag target and the HPA's 10 % tolerance: past 10 replicas one more is a ratio below 1.1, the
dead zone) go to the benchmark JSON before the one assertion: the simulation takes under 60 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.benchmark(group="twin")]

DATA = Path(__file__).resolve().parent / "data"
#: The target: the whole simulation (plan, production, world, analysis) in < 60 s.
TARGET_S = 60.0


def test_twin_simulates_1000_partitions_500_replicas_1m_per_s_in_under_a_minute(
        benchmark) -> None:
    """One seeded draw at P = 1,000; its wall time against :data:`TARGET_S`."""
    from pytest_lagscale.experiment.settings import RunSettings
    from pytest_lagscale.twin.params import with_changes
    from pytest_lagscale.twin.run import params_for, plan_of, simulate

    started = time.perf_counter()
    plan = plan_of(RunSettings(profile=str(DATA / "twin-scale-1000.yaml"),
                               policy=str(DATA / "scaledobject-scale-500.yaml"),
                               deployment=str(DATA / "consumer-deployment-scale.yaml"),
                               scale="full"))
    params = params_for(plan)
    cluster = with_changes(params, engine_s_per_member=0.0, engine_s_per_starting=0.0,
                           cold_start_cores=float(plan.replica_range[1]),
                           cold_start_member_load=0.0)
    run = benchmark.pedantic(lambda: simulate(plan, cluster, 0), rounds=1, iterations=1)
    seconds = time.perf_counter() - started
    flat = run.measurements.flat()
    desired = run.timeline["desired_replicas"].dropna()
    keys = ("reaction_time_s", "peak_lag_records", "drain_time_s", "replica_seconds",
            "scale_steps", "rebalances", "oracle_replica_seconds", "oracle_capped_s",
            "hottest_partition_share", "even_spread_oracle_replica_seconds")
    benchmark.extra_info.update({
        "seconds": round(seconds, 2), "target_s": TARGET_S,
        "partitions": 1000, "max_replica_count": plan.replica_range[1],
        "records": int(sum(run.produced)), "processed": int(sum(run.processed)),
        "capacity_per_replica_per_s": round(cluster.capacity_per_s, 1),
        "max_desired_replicas": int(desired.max()) if len(desired) else None,
        "max_current_replicas": int(run.timeline["current_replicas"].max()),
        "figures": {k: flat.get(k) for k in keys},
        "assertions": [{"name": f"twin wall time < {TARGET_S:g} s", "threshold": TARGET_S,
                        "value": round(seconds, 2),
                        "verdict": "pass" if seconds < TARGET_S else "fail"}]})
    assert seconds < TARGET_S, f"the 1,000-partition twin run took {seconds:.1f} s"
