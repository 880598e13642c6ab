"""Experiment 5 — flapping under bursty load (docs/experiments.md; an acceptance test).

The bursty profile (``bursty-ci``: 10 s bursts of 2,000/s every 40 s over 200/s, four bursts)
runs under two scaling policies of the same Deployment (Spark replicas at ci):

(a) ``scaledobject-flap-ci``: no scale-down stabilization window and a small lagThreshold
    (100): the group scales in between bursts and out again on the next one — it flaps;
(b) ``scaledobject-hysteresis-ci``: a scale-down window of 60 s, longer than the 40 s burst
    period (the advice of "KEDA Kafka Lag Scaling: Advanced Patterns"), and a tuned
    lagThreshold (250): the group keeps its size until the bursts stop.

KEDA's cooldownPeriod only governs 1 -> 0, which minReplicaCount 1 rules out: the HPA's
behavior.scaleDown (window and policies) decides the scale-in. A flip is a direction reversal
of the replica count (:func:`pytest_lagscale.analyze.steps.direction_reversals`) while the load
still bursts (a step before the last burst ends); the one reversal of the final scale-in after
the last burst is no flip. Both runs record, under ``experiment.flapping``: flips, the run's
direction reversals, scale steps, rebalances (steps whose rebalance the replicas' events show),
replica-seconds and their ratio to the skew-aware oracle, and the drain after the last burst
(lag <= the policy's lagThreshold within :data:`DRAIN_BOUND_S`). Hysteresis costs capacity:
the hysteresis run also records its replica-seconds over the flapping run's.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_lagscale.analyze.tables import burst_window

pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(5), pytest.mark.integration,
              pytest.mark.xdist_group("flapping")]

PROFILE = "bursty"
FLAP_POLICY = {"ci": "scaledobject-flap-ci", "full": "scaledobject-flap"}
HYSTERESIS_POLICY = {"ci": "scaledobject-hysteresis-ci", "full": "scaledobject-hysteresis"}
#: Seconds after the last burst within which lag must be <= the policy's lagThreshold (the
#: drain SLO of the hysteresis run): at ci four 10 s bursts of 2,000/s, at full 30 s of 30,000/s.
DRAIN_BOUND_S = {"ci": 30.0, "full": 120.0}


def last_burst_end_s(events: Any) -> float | None:
    """Seconds since run start at which the last burst (``high-<i>`` phase) ended: the start of
    the phase after it (or ``load_end``); None without phase events."""
    return burst_window(events)[1]


def flapping_figures(result: Any, drain_bound_s: float) -> dict[str, Any]:
    """One policy's figures: flips while bursting, reversals, steps, rebalances, replica-seconds,
    the drain after the last burst (seconds; None = not drained by the end of the run)."""
    steps, m = list(result.measurements.steps), result.metrics
    end_s = last_burst_end_s(result.events)
    threshold = result.run_info.get("lag_threshold") or result.spec.lag_threshold_records
    after = result.timeline[result.timeline["t_s"] >= (end_s or 0.0)]
    drained = after[after["total_lag"] <= threshold]
    drain_s = float(drained["t_s"].iloc[0]) - end_s if end_s is not None and len(drained) \
        else None
    return {
        "policy": result.inputs.policy, "lag_threshold": threshold,
        "flips": sum(s.reversal for s in steps if end_s is None or s.t_s < end_s),
        "direction_reversals": m["direction_reversals"], "scale_steps": len(steps),
        "rebalances": sum(s.rebalance_s is not None for s in steps),
        "max_replicas": int(result.timeline["current_replicas"].max()),
        "replica_seconds": m["replica_seconds"],
        "replica_seconds_ratio": m["replica_seconds_ratio"],
        "last_burst_end_s": end_s, "drain_after_last_burst_s": drain_s,
        "drain_bound_s": drain_bound_s,
        "steps": [(round(s.t_s, 1), s.replicas_before, s.replicas_after) for s in steps],
    }


def _print(name: str, fig: dict[str, Any], result: Any) -> None:
    print(f"\n{name} ({fig['policy']}, lagThreshold {fig['lag_threshold']}): flips "
          f"{fig['flips']}, reversals {fig['direction_reversals']}, steps {fig['scale_steps']} "
          f"{fig['steps']}, rebalances {fig['rebalances']}, replica-seconds "
          f"{fig['replica_seconds']} ({fig['replica_seconds_ratio']} x oracle), drain after "
          f"the last burst {fig['drain_after_last_burst_s']} s; run dir {result.run_dir}")


def _headline(fig: dict[str, Any]) -> dict[str, Any]:
    """The scalars of :func:`flapping_figures` (the findings report shows these)."""
    return {k: v for k, v in fig.items() if k != "steps" and not isinstance(v, (list, dict))}


def test_short_scale_down_window_flaps_under_bursts(lagscale_run, lagscale_settings) -> None:
    scale = lagscale_settings.scale
    result = lagscale_run(PROFILE, policy=FLAP_POLICY[scale])
    fig = flapping_figures(result, DRAIN_BOUND_S[scale])
    _print("short window", fig, result)
    result.record("flapping", {"short_window": _headline(fig), "short_window_steps": fig["steps"]})
    ok = result.check("flips while bursting > 0 (short scale-down window)", fig["flips"], 0,
                      fig["flips"] > 0)
    assert ok, f"no flips: {fig}; see {result.benchmark_path}"


@pytest.mark.gate
def test_hysteresis_holds_through_bursts_and_still_drains(lagscale_run, lagscale_settings
                                                           ) -> None:
    scale = lagscale_settings.scale
    result = lagscale_run(PROFILE, policy=HYSTERESIS_POLICY[scale])
    fig = flapping_figures(result, DRAIN_BOUND_S[scale])
    _print("hysteresis", fig, result)
    result.record("flapping", {"hysteresis": _headline(fig), "hysteresis_steps": fig["steps"]})
    drain_s, bound = fig["drain_after_last_burst_s"], DRAIN_BOUND_S[scale]
    verdicts = [
        result.check("flips while bursting == 0 (hysteresis)", fig["flips"], 0,
                     fig["flips"] == 0),
        result.check(f"lag <= lagThreshold within {bound:g} s after the last burst",
                     drain_s, bound, drain_s is not None and drain_s <= bound),
    ]
    assert all(verdicts), f"hysteresis {fig}; see {result.benchmark_path}"


def test_hysteresis_costs_replica_seconds_and_is_recommended(lagscale_run, lagscale_settings
                                                             ) -> None:
    """Both runs (the session's cached ones): the hysteresis run's replica-seconds over the
    short window's, recorded in both runs' ``experiment.flapping`` with the recommendation the
    findings report shows. Not in the CI gate, which runs the hysteresis run only."""
    scale = lagscale_settings.scale
    result = lagscale_run(PROFILE, policy=HYSTERESIS_POLICY[scale])
    flap = lagscale_run(PROFILE, policy=FLAP_POLICY[scale])
    fig = flapping_figures(result, DRAIN_BOUND_S[scale])
    flap_fig = flapping_figures(flap, DRAIN_BOUND_S[scale])
    cost = (fig["replica_seconds"] / flap_fig["replica_seconds"]
            if fig["replica_seconds"] and flap_fig["replica_seconds"] else None)
    record = {"short_window": _headline(flap_fig), "hysteresis": _headline(fig),
              "hysteresis_replica_seconds_over_short_window": cost,
              "short_window_steps": flap_fig["steps"], "hysteresis_steps": fig["steps"],
              "recommendation": {
                  "scaleDown.stabilizationWindowSeconds": _window(result),
                  "lagThreshold": fig["lag_threshold"],
                  "evidence": (f"window > the burst period: {fig['flips']} flips vs "
                               f"{flap_fig['flips']} without it, drained "
                               f"{_seconds(fig['drain_after_last_burst_s'])} after the last "
                               "burst, "
                               f"at {cost if cost is None else round(cost, 2)}x the "
                               "replica-seconds")}}
    for run in (result, flap):
        run.record("flapping", record)
    ok = result.check("replica-seconds over the short window's (measured)", cost, None,
                      cost is not None)
    assert ok, f"no replica-seconds to compare: hysteresis {fig}; short window {flap_fig}"


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.0f} s"


def _window(result: Any) -> float | None:
    """The run's scale-down stabilization window in seconds, as its manifest says."""
    from pytest_lagscale.config.policy import load_policy_manifest

    doc = load_policy_manifest(result.settings.manifest_files()["policy"])
    behavior = getattr(doc, "behavior", None)
    down = getattr(behavior, "scale_down", None)
    return getattr(down, "stabilization_window_s", None)
