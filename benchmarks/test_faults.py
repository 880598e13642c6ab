"""The fault experiment: spike-ci with one fault at the height of the spike, against the same run
without it.

Each fault is a scheduled action (:mod:`pytest_lagscale.experiment.actions`) at
:data:`AT_S` = 90 s (the spike runs 60-150 s at 2,000 records/s on Spark replicas):

==================  ============================================================================
``pause_broker``    the broker SIGSTOPped for 20 s, then SIGCONT
``restart_broker``  the broker stopped (controlled shutdown) and started on its data and ports
``kill_prometheus`` Prometheus SIGKILLed; the run's part watch starts it on its data directory
``restart_prometheus`` Prometheus stopped and started on its data directory and port
``hang_replica``    the newest replica SIGSTOPped for 20 s (its livenessProbe restarts it)
``kill_replica``    the newest replica SIGKILLed (its Deployment replaces it)
==================  ============================================================================

Asserted per fault: 0 records lost; the run settled (lag 0 and replicas back at
minReplicaCount within the settle timeout); for the broker faults, the controller read lag again
within one polling interval of the broker's return. Recorded per fault (``experiment.fault`` of
its benchmark JSON, and the table in docs/experiments.md): duplicates (and the reference run's,
so what the fault added is attributed to it), the longest lag-unread gap, the settle phase's
length, extra replica-seconds against the reference run, what the ScaledObject's fallback did
(polls in fallback and the replicas it asked for), and the harness's own CPU
(``harness_cpu_fraction``: the harness process's CPU seconds per wall second, broker,
Prometheus, Spark and replicas excluded).

In the acceptance session (``scripts/acceptance``), not in the CI gate: seven spike-ci runs
(about 35 minutes).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_lagscale.analyze.duplicates import by_window, duplicate_times
from pytest_lagscale.contract.rundir import RunDir
from pytest_lagscale.load.profiles import ActionSpec

pytestmark = [pytest.mark.acceptance, pytest.mark.integration, pytest.mark.xdist_group("faults")]

#: Seconds after the load start: the height of spike-ci's spike (60-150 s).
AT_S = 90.0
#: One fault per run, by name.
FAULTS: dict[str, ActionSpec] = {
    "pause_broker": ActionSpec(AT_S, "pause_broker", {"duration_s": 20}),
    "restart_broker": ActionSpec(AT_S, "restart_broker", {}),
    "kill_prometheus": ActionSpec(AT_S, "kill_prometheus", {}),
    "restart_prometheus": ActionSpec(AT_S, "restart_prometheus", {}),
    "hang_replica": ActionSpec(AT_S, "hang_replica", {"duration_s": 20}),
    "kill_replica": ActionSpec(AT_S, "kill_replica", {}),
}
#: Faults after which the controller must read lag again within one polling interval.
BROKER_FAULTS = ("pause_broker", "restart_broker")


def _fallback(result: Any) -> dict[str, Any]:
    """What the ScaledObject's fallback did: KEDA polls with a trigger in fallback, and the
    lowest and highest desired replicas the HPA set while it was."""
    events = result.events
    polls = events[events["event"] == "keda_poll"]
    in_fallback = [t for t, fields in zip(polls["t_s"], polls["fields"])
                   if any(trig.get("fallback_active") for trig in fields.get("triggers", ()))]
    if not in_fallback:
        return {"polls": 0}
    start, end = min(in_fallback), max(in_fallback)
    syncs = events[(events["event"] == "hpa_sync") & (events["t_s"] >= start)
                   & (events["t_s"] <= end + 15)]
    desired = [fields.get("replicas_after") for fields in syncs["fields"]]
    desired = [d for d in desired if d is not None]
    return {"polls": len(in_fallback), "start_s": round(start, 1), "end_s": round(end, 1),
            "desired_min": min(desired, default=None), "desired_max": max(desired, default=None)}


def _settle_phase_s(result: Any) -> float | None:
    phases = result.events[result.events["event"] == "run_phase"]
    times = {fields.get("phase"): t for t, fields in zip(phases["t_s"], phases["fields"])}
    if "settle" not in times or "record" not in times:
        return None
    return round(times["record"] - times["settle"], 1)


def _duplicates_by_window(result: Any) -> dict[str, int]:
    """The run's duplicate writes by fault window (``analyze.duplicates``): from each fault's
    start to 60 s after its end, ``outside`` for the rest."""
    events = result.events
    origin_s = float(events["monotonic_s"].iloc[0] - events["t_s"].iloc[0])
    layout = RunDir(result.run_dir)
    times = duplicate_times(layout.store, layout.merge_events(), origin_s)
    windows = [(f["name"], f["start_s"], None if f["duration_s"] is None
                else f["start_s"] + f["duration_s"])
               for f in result.world["faults"] if f["name"] != "lag_unread"]
    return by_window(times, windows)


def _figures(result: Any, reference: Any, name: str) -> dict[str, Any]:
    rec, ref = result.reconciliation, reference.reconciliation
    injected = [f for f in result.world["faults"] if f["kind"] == "injected"]
    replica_s = result.metrics.get("replica_seconds")
    ref_replica_s = reference.metrics.get("replica_seconds")
    return {
        "fault": name, "label": injected[0]["label"] if injected else None,
        "fault_s": injected[0]["duration_s"] if injected else None,
        "lost": None if rec is None else rec.lost_total,
        "duplicated": None if rec is None else rec.duplicated_total,
        "duplicated_without_fault": None if ref is None else ref.duplicated_total,
        "duplicated_by_window": _duplicates_by_window(result),
        "lag_unread_s": result.world["lag_unread_s"],
        "lag_unread_longest_s": result.world["lag_unread_longest_s"],
        "lag_read_again_s": injected[0]["lag_read_again_s"] if injected else None,
        "settled": result.world["settled"], "settle_phase_s": _settle_phase_s(result),
        "extra_replica_seconds": (None if replica_s is None or ref_replica_s is None
                                  else round(replica_s - ref_replica_s, 1)),
        "fallback": _fallback(result),
        "observed": [f for f in result.world["faults"] if f["kind"] == "observed"],
        "harness_cpu_fraction": result.run_info.get("harness_cpu_fraction"),
    }


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_fault_at_the_height_of_the_spike_loses_nothing_and_the_run_settles(
        lagscale_run, name: str) -> None:
    reference = lagscale_run("spike")
    result = lagscale_run("spike", actions=(FAULTS[name],))
    figures = result.record("fault", _figures(result, reference, name))
    poll_s = result.world["lag_max_age_s"] / 2
    rec = result.reconciliation
    assert result.check("lost_records == 0", None if rec is None else rec.lost_total, 0,
                        rec is not None and rec.lost_total == 0), figures
    assert result.check("settled", float(bool(figures["settled"])), 1.0,
                        bool(figures["settled"])), figures
    if name in BROKER_FAULTS:
        again = figures["lag_read_again_s"]
        assert result.check(f"lag_read_again_s <= {poll_s:g}", again, poll_s,
                            again is not None and again <= poll_s), figures
