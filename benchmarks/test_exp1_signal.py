"""Experiment 1 — lag vs CPU as the scaling signal (the lab's "motivating measurement").

The same 10x spike (``spike-ci`` at ``--lagscale-scale ci``, ``spike`` at ``full``) runs twice:
once under a CPU-only HPA (``hpa-cpu[-ci].yaml``: autoscaling/v2, ``averageUtilization: 70``
of the Deployment's 500m CPU request, replica CPU sampled from each replica's process tree as
the metrics server would) and once under the lag ScaledObject (the run experiments 2 and 6
share). The replicas are the ci Deployment's Spark replicas, I/O-bound by design: each record
costs ``--process-ms=25`` of simulated downstream latency with ``--inflight=10`` (400 records/s
per replica), so a replica waits on its sink, not on its CPU — the lab's consumer. Per-replica
CPU utilization over the spike is recorded for both runs (``experiment.cpu_utilization``).

Asserted: the CPU policy does not scale out while lag exceeds 10 x lagThreshold, the lag policy
does, and the lag under the CPU policy reaches a multiple of the lag policy's peak. The lab's
multiple is 10 and is asserted at ``full`` (a 15-minute spike). At ci the spike lasts 90 s: a
group that never scales builds at most (2,000 - ~350) records/s x 90 s ~ 148k records, against
a lag-policy peak of 44k on a quiet machine (79k with the machine's load average at 6, where
the lag policy's cold starts slow down), so 10x cannot be reached at ci and its verdict is only
recorded; ci asserts the direction with a margin: >= 1.5x. At the end of the spike a ``switch_policy`` action hands the CPU run over to
the lag ScaledObject, which drains the backlog the CPU policy let build: backlog, drain time,
the return to minReplicaCount and processed == produced are recorded and asserted. At ``full``
this is the run that builds the lab's backlog of >= 20M events.
"""

from __future__ import annotations

import pytest

from pytest_lagscale.analyze.cpu import cpu_utilization
from pytest_lagscale.analyze.tables import spike_window
from pytest_lagscale.config.bundled import resolve_profile
from pytest_lagscale.load.profiles import ActionSpec, load_profile

# The lag run is experiment 2's graceful spike run: the same xdist_group keeps it on one worker.
pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(1), pytest.mark.integration,
              pytest.mark.xdist_group("spike-run")]

LAG_MULTIPLE = 10            # "while lag exceeds 10 x lagThreshold" (the lab)
PEAK_RATIO = {"full": 10.0, "ci": 1.5}   # lag under CPU / lag policy's peak (see docstring)
FULL_BACKLOG_RECORDS = 20_000_000        # the lab's backlog at full scale


def _suffix(scale: str) -> str:
    return "-ci" if scale == "ci" else ""


def _desired_while_lag_above(timeline, lag_records: float, until_s: float | None = None):
    """(rows with total_lag > lag_records before until_s, max desired_replicas among them)."""
    rows = timeline[timeline["total_lag"] > lag_records]
    if until_s is not None:
        rows = rows[rows["t_s"] < until_s]
    return len(rows), (int(rows["desired_replicas"].max()) if len(rows) else None)


def test_cpu_policy_lets_lag_build_where_the_lag_policy_scales_out(lagscale_run,
                                                                    lagscale_settings) -> None:
    scale = lagscale_settings.scale
    profile = load_profile(resolve_profile("spike", scale))
    switch_at_s = profile.shape.spike_start_s + profile.shape.spike_hold_s
    lag_run = lagscale_run()
    cpu_run = lagscale_run(policy=f"hpa-cpu{_suffix(scale)}", actions=(
        ActionSpec(switch_at_s, "switch_policy", {"policy": f"scaledobject{_suffix(scale)}"}),))

    threshold = cpu_run.spec.lag_threshold_records
    over = LAG_MULTIPLE * threshold
    spike = {name: cpu_utilization(run.events, *_spike(run.events))
             for name, run in (("cpu", cpu_run), ("lag", lag_run))}
    switch_t_s = _switch_time(cpu_run.events)
    cpu_rows, cpu_desired = _desired_while_lag_above(cpu_run.timeline, over, switch_t_s)
    lag_rows, lag_desired = _desired_while_lag_above(lag_run.timeline, over)
    before = cpu_run.timeline if switch_t_s is None else cpu_run.timeline[
        cpu_run.timeline["t_s"] < switch_t_s]
    cpu_peak = float(before["total_lag"].max())
    lag_peak = float(lag_run.metrics["peak_lag_records"])
    peak_ratio = cpu_peak / lag_peak if lag_peak else None
    cpu_scaled_before_switch = int(before["desired_replicas"].max())
    rec = cpu_run.reconciliation
    figures = {
        "lag_threshold_records": threshold, "lag_multiple": LAG_MULTIPLE,
        "cpu_policy": {"max_desired_while_lag_over": cpu_desired, "seconds_lag_over": cpu_rows,
                       "max_desired_before_switch": cpu_scaled_before_switch,
                       "peak_lag_before_switch_records": cpu_peak, "switch_t_s": switch_t_s,
                       "backlog_at_switch_records": _lag_at(cpu_run.timeline, switch_t_s),
                       "drain_time_after_switch_s": cpu_run.metrics["drain_time_s"],
                       "cpu_target_percent": 70},
        "lag_policy": {"max_desired_while_lag_over": lag_desired, "seconds_lag_over": lag_rows,
                       "peak_lag_records": lag_peak,
                       "reaction_time_s": lag_run.metrics["reaction_time_s"]},
        "peak_ratio_cpu_over_lag": peak_ratio,
        "cpu_utilization": {name: u.to_dict() for name, u in spike.items()},
        "cpu_run_dir": str(cpu_run.run_dir), "lag_run_dir": str(lag_run.run_dir),
    }
    cpu_run.record("signal", figures)
    lag_run.record("signal", figures)
    print(f"\nexperiment 1: CPU policy max desired {cpu_desired} over {cpu_rows} s with lag > "
          f"{over:,}; lag policy max desired {lag_desired}; peak lag CPU {cpu_peak:,.0f} vs lag "
          f"{lag_peak:,.0f} = {peak_ratio:.2f}x; HPA average CPU max "
          f"{spike['cpu'].average_max_percent}% (target 70%); runs {cpu_run.run_dir}, "
          f"{lag_run.run_dir}")

    minimum = cpu_run.spec.min_replicas
    ratio_bound = PEAK_RATIO[scale]
    cpu_run.check(f"lab: lag under CPU >= {PEAK_RATIO['full']:g} x the lag policy's peak "
                  "(recorded; asserted at full)", peak_ratio, PEAK_RATIO["full"],
                  peak_ratio is not None and peak_ratio >= PEAK_RATIO["full"])
    verdicts = {
        "lag went over 10 x lagThreshold under CPU": cpu_run.check(
            f"seconds with lag > {LAG_MULTIPLE} x lagThreshold under the CPU policy > 0",
            cpu_rows, 0, cpu_rows > 0),
        "CPU policy did not scale out": cpu_run.check(
            f"max desired_replicas while lag > {LAG_MULTIPLE} x lagThreshold (CPU policy) == "
            "minReplicaCount", cpu_desired, minimum, cpu_desired == minimum),
        "lag policy scaled out": lag_run.check(
            f"max desired_replicas while lag > {LAG_MULTIPLE} x lagThreshold (lag policy) > "
            "minReplicaCount", lag_desired, minimum,
            lag_desired is not None and lag_desired > minimum),
        "peak ratio": cpu_run.check(
            f"peak lag under CPU / lag policy's peak >= {ratio_bound:g} ({scale})",
            peak_ratio, ratio_bound, peak_ratio is not None and peak_ratio >= ratio_bound),
        "drained after the switch": cpu_run.check(
            "lag <= lagThreshold after the switch to the lag policy (drain_time_s measured)",
            cpu_run.metrics["drain_time_s"], threshold, cpu_run.metrics["drain_time_s"] is not None),
        "back to min": cpu_run.check(
            "replicas == minReplicaCount at the end", int(cpu_run.timeline.iloc[-1][
                "current_replicas"]), minimum,
            int(cpu_run.timeline.iloc[-1]["current_replicas"]) == minimum),
        "processed == produced": cpu_run.check(
            "lost == duplicated == 0 after the drain", None if rec is None else
            rec.lost_total + rec.duplicated_total, 0,
            rec is not None and rec.lost_total == rec.duplicated_total == 0),
    }
    if scale == "full":
        verdicts["backlog"] = cpu_run.check(
            f"backlog at the switch >= {FULL_BACKLOG_RECORDS:,}", cpu_peak, FULL_BACKLOG_RECORDS,
            cpu_peak >= FULL_BACKLOG_RECORDS)
    failed = [name for name, ok in verdicts.items() if not ok]
    assert not failed, f"{failed} failed; {figures}; see {cpu_run.benchmark_path}"


def _spike(events) -> tuple[float, float]:
    start_s, end_s = spike_window(events)
    return (start_s or 0.0, end_s if end_s is not None else float("inf"))


def _switch_time(events) -> float | None:
    """Run seconds of the ``switch_policy`` action (the runner's ``action`` event)."""
    for t_s, event, fields in zip(events["t_s"], events["event"], events["fields"]):
        if event == "action" and fields.get("action") == "switch_policy":
            return float(t_s)
    return None


def _lag_at(timeline, t_s: float | None) -> float | None:
    if t_s is None:
        return None
    rows = timeline[timeline["t_s"] >= t_s]
    return float(rows["total_lag"].iloc[0]) if len(rows) else None
