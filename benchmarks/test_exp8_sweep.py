"""Experiment 8 — lagThreshold sweep and the recommendation for a drain SLO (docs/experiments.md).

The 10x spike (``spike-ci`` at ci, the run of experiment 2) runs once per lagThreshold: by
default the ci values 50, 500 and 5,000 records per replica (the lab's 1k / 10k / 100k at full
scale, scaled by the ci ScaledObject's 500 over the full one's 10,000), from over-scaling (50:
the baseline's in-flight lag alone asks for several replicas) to under-reaction (5,000: one
replica per 5,000 records of backlog). ``pytest -m "experiment(8)" --lagscale-lag-threshold=A,B,C``
sweeps the given values instead. 500 is the ScaledObject's own value, so that run IS
experiment 2's (the session's run cache counts an override equal to the policy's as none):
the sweep costs two runs on top of experiment 2.

Per value: peak lag, reaction, drain time (to <= the ScaledObject's lagThreshold, the same
yardstick for every value, seconds after the spike ends), scale steps, rebalances,
replica-seconds and their ratio to the skew-aware oracle, and the drain SLO verdict
(``--lagscale-drain-slo``, default 60 s at ci). The recommendation (:mod:`pytest_lagscale.analyze.sweep`)
is the largest value meeting the SLO, checked against the rule of thumb (measured per-replica
rate x SLO x 0.75) and the HPA tolerance dead zone; everything goes to
``experiment.sweep`` of every swept run's benchmark.json.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_lagscale.analyze.lag import drain
from pytest_lagscale.analyze.sweep import (
    SweepPoint,
    measured_rate_per_replica,
    recommend,
)
from pytest_lagscale.analyze.tables import spike_window
from pytest_lagscale.options import DEFAULT_DRAIN_SLO_S

# The 500 run is experiment 2's: one xdist_group keeps them on one worker (one run cache).
pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(8), pytest.mark.integration,
              pytest.mark.xdist_group("spike-run")]

#: The committed sweep by scale, records per replica (used without --lagscale-lag-threshold).
SWEEP = {"ci": (50, 500, 5000), "full": (1000, 10_000, 100_000)}


def _policy_threshold(settings: Any) -> int:
    """The lagThreshold the run's ScaledObject says (the drain yardstick), records."""
    from pytest_lagscale.config.policy import load_policy_manifest
    from pytest_lagscale.control.policy.build import build_policy

    policy = build_policy(load_policy_manifest(settings.manifest_files()["policy"]))
    return int(policy.lag_threshold_records)


def _figures(value: int, result: Any, target: int, slo_s: float) -> dict[str, Any]:
    """One swept value's figures (seconds, records, counts)."""
    m, timeline, spec = result.metrics, result.timeline, result.spec
    spike_end = spike_window(result.events)[1]
    full = min(spec.max_replicas, spec.partitions)
    drained = (drain(timeline, spike_end, target, full).drain_time_s
               if spike_end is not None else None)
    below_p = timeline[timeline["current_replicas"] < spec.partitions]
    steps = list(result.measurements.steps)
    return {"lag_threshold": value, "peak_lag_records": m["peak_lag_records"],
            "reaction_time_s": m["reaction_time_s"], "drain_time_s": drained,
            "drain_time_own_threshold_s": m["drain_time_s"], "scale_steps": len(steps),
            "rebalances": sum(s.rebalance_s is not None for s in steps),
            "max_replicas": int(timeline["current_replicas"].max()),
            "lag_reached_cap": bool((below_p["total_lag"] >= spec.partitions * value).any()),
            "replica_seconds": m["replica_seconds"],
            "replica_seconds_ratio": m["replica_seconds_ratio"],
            "slo_met": drained is not None and drained <= slo_s, "run_dir": str(result.run_dir)}


def _line(fig: dict[str, Any]) -> str:
    def n(value: Any, fmt: str = ".0f") -> str:
        return "-" if value is None else format(value, fmt)

    return (f"peak {n(fig['peak_lag_records'], ',.0f')}, reaction {n(fig['reaction_time_s'])} "
            f"s, drain {n(fig['drain_time_s'])} s, {fig['scale_steps']} steps, "
            f"{fig['rebalances']} rebalances, {n(fig['replica_seconds'])} replica-s "
            f"({n(fig['replica_seconds_ratio'], '.2f')}x oracle), max {fig['max_replicas']} "
            f"replicas, SLO {'met' if fig['slo_met'] else 'missed'}")


def _rate(results: dict[int, Any], target: int) -> tuple[float, str]:
    """Per-replica records/s measured while saturated, else the Deployment's nominal one."""
    import pandas as pd

    some = next(iter(results.values()))
    pooled = pd.concat([r.timeline for r in results.values()], ignore_index=True)
    rate = measured_rate_per_replica(pooled, target * some.spec.partitions)
    if rate is not None:
        return rate, "store"
    return float(some.run_info.get("capacity_per_replica_per_s") or 0.0), "nominal"


@pytest.mark.parametrize("lag_threshold", [None], ids=["sweep"])
def test_lag_threshold_sweep_recommends_a_value_for_the_drain_slo(
        request, lagscale_run, lagscale_settings, lag_threshold) -> None:
    scale = lagscale_settings.scale
    values = tuple(request.config.getoption("lag_thresholds") or SWEEP[scale])
    slo_s = request.config.getoption("drain_slo_s") or DEFAULT_DRAIN_SLO_S[scale]
    target = _policy_threshold(lagscale_settings)
    results = {value: lagscale_run(lag_threshold=value) for value in values}
    figures = {v: _figures(v, r, target, slo_s) for v, r in results.items()}
    rate, source = _rate(results, target)
    spec = next(iter(results.values())).spec
    rec = recommend([SweepPoint(f["lag_threshold"], f["drain_time_s"], f["max_replicas"],
                                f["lag_reached_cap"], f["replica_seconds_ratio"])
                     for f in figures.values()], slo_s, rate, spec.partitions,
                    spec.max_replicas)
    print(f"\nlagThreshold sweep, drain SLO {slo_s:g} s to <= {target} records:")
    for value, fig in figures.items():
        print(f"  {value:>7}: {_line(fig)}; {fig['run_dir']}")
    print(f"recommendation: {rec.evidence}")
    record = {"drain_slo_s": slo_s, "drain_target_records": target,
              "rate_per_replica_per_s": rate, "rate_source": source,
              "by_threshold": {str(v): _line(f) for v, f in figures.items()},
              "values": list(figures.values()), "recommendation": rec.to_dict()}
    for value, result in results.items():
        fig = figures[value]
        result.check(f"drain to <= {target} records within {slo_s:g} s (lagThreshold {value})",
                     fig["drain_time_s"], slo_s, fig["slo_met"])
        result.record("sweep", record)
    low, high = figures[min(values)], figures[max(values)]
    last = results[max(values)]
    verdicts = [last.check(f"a swept value meets the {slo_s:g} s drain SLO",
                           rec.lag_threshold, slo_s, rec.lag_threshold is not None)]
    if len(values) > 1:
        verdicts += [
            last.check(f"under-reaction: peak lag at {max(values)} > at {min(values)}",
                       high["peak_lag_records"], low["peak_lag_records"],
                       (high["peak_lag_records"] or 0) > (low["peak_lag_records"] or 0)),
            # Over the oracle of the same run: the runs' windows differ (settle phase).
            last.check(f"over-scaling: replica_seconds_ratio at {min(values)} > at "
                       f"{max(values)}", low["replica_seconds_ratio"],
                       high["replica_seconds_ratio"],
                       (low["replica_seconds_ratio"] or 0) > (high["replica_seconds_ratio"] or 0))]
    assert all(verdicts), f"{rec.evidence}; figures {figures}"
