"""A pre-registered twin prediction: the figures a real run will be held against, written before
it runs.

:func:`prediction` turns :class:`~.run.TwinDraws` into one document: the run's inputs, the
twin's calibration and, per figure (:data:`FIGURES`), the median, 5 % and 95 % over the draws.
``lagscale simulate --prediction FILE`` writes it; committed under ``docs/runs/`` before the
real run, it cannot be tuned by that run (docs/twin.md, "Pre-registered predictions").
:func:`figures_of` computes the same figures from any run's timeline, events and measurements,
so a real run's ``benchmark.json`` directory is scored with the same definitions.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import numpy as np

#: Figure -> (unit, what it is). The reaction's parts are ``analyze.reaction``'s.
FIGURES: dict[str, tuple[str, str]] = {
    "reaction_time_s": ("s", "spike start -> first record of the first replica added"),
    "detection_s": ("s", "reaction part: spike start -> the first scale-up decision"),
    "actuation_s": ("s", "reaction part: decision -> replica started"),
    "cold_start_s": ("s", "reaction part: replica started -> engine ready"),
    "join_s": ("s", "reaction part: engine ready -> partitions assigned"),
    "first_fetch_s": ("s", "reaction part: assigned -> first record"),
    "peak_lag_records": ("records", "largest total lag"),
    "backlog_at_switch_records": ("records", "total lag at the switch_policy action"),
    "drain_time_s": ("s", "spike end -> total lag <= lagThreshold"),
    "scale_steps": ("count", "scale steps (up and down)"),
    "max_replicas": ("replicas", "most replicas desired"),
    "replica_seconds": ("replica-seconds", "replicas x seconds over the run"),
    "back_to_min_s": ("s", "spike end -> replicas back at minReplicaCount for good"),
}


def _switch_time(events: Any) -> float | None:
    rows = events[events["event"] == "action"]
    for t_s, fields in zip(rows["t_s"], rows["fields"]):
        if fields.get("action") == "switch_policy":
            return float(t_s)
    return None


def figures_of(timeline: Any, events: Any, flat: dict[str, Any], min_replicas: int,
               spike_end_s: float | None) -> dict[str, float | None]:
    """The :data:`FIGURES` of one run (None where the run has none: no switch, never back).

    Args:
        timeline, events: the run's tables (``analyze.tables``; ``t_s`` in run seconds).
        flat: ``Measurements.flat()`` of the run.
        min_replicas: minReplicaCount.
        spike_end_s: the spike's end in run seconds (None: no spike).
    """
    out: dict[str, float | None] = {name: flat.get(name) for name in FIGURES}
    switch_s = _switch_time(events)
    out["backlog_at_switch_records"] = None
    if switch_s is not None:
        rows = timeline[timeline["t_s"] >= switch_s]
        out["backlog_at_switch_records"] = float(rows["total_lag"].iloc[0]) if len(rows) else None
    out["max_replicas"] = float(timeline["desired_replicas"].max()) if len(timeline) else None
    out["back_to_min_s"] = None
    if spike_end_s is not None and len(timeline):
        above = timeline[timeline["current_replicas"] != min_replicas]
        last = float(above["t_s"].max()) + 1.0 if len(above) else float(timeline["t_s"].min())
        if last <= float(timeline["t_s"].max()):
            out["back_to_min_s"] = max(0.0, last - spike_end_s)
    return out


def _summary(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p5": None, "p95": None, "draws": 0}
    array = np.asarray(values, dtype=float)
    return {"median": statistics.median(values), "p5": float(np.quantile(array, 0.05)),
            "p95": float(np.quantile(array, 0.95)), "draws": len(values)}


def prediction(draws: Any, plan: Any, params: Any) -> dict[str, Any]:
    """The pre-registration document of ``draws`` (a :class:`~.run.TwinDraws` of ``plan``).

    Returns:
        ``{"inputs": {...}, "twin": {calibration, source_runs, draws, seed}, "figures": {name:
        {"unit", "what", "median", "p5", "p95", "draws"}}, "settled_draws": n}``; the
        commit is added by the caller (``environment.commit_info``).
    """
    spike_end_s = plan.spike[1] if plan.spike else None
    per_draw = [figures_of(r.timeline, r.events, r.measurements.flat(), plan.min_replicas,
                           spike_end_s) for r in draws.runs]
    figures = {}
    for name, (unit, what) in FIGURES.items():
        values = [d[name] for d in per_draw if d[name] is not None]
        figures[name] = {"unit": unit, "what": what, **_summary(values)}
    return {
        "inputs": {"settings": plan.settings.to_document(), "profile": plan.profile.name,
                   "policy": plan.policy_name, "engine": plan.engine,
                   "partitions": plan.profile.partitions, "min_replicas": plan.min_replicas,
                   "max_replicas": plan.max_replicas,
                   "lag_threshold_records": plan.reference_lag_threshold,
                   "capacity_per_replica_per_s": plan.capacity_per_s,
                   "actions": [f"{a.at_s:g} s {a.action.label()}" for a in plan.actions]},
        "twin": {"calibration": params.source, "source_runs": list(params.source_runs),
                 "draws": len(draws.runs), "seed": draws.runs[0].seed if draws.runs else None},
        "settled_draws": sum(1 for r in draws.runs if r.settled),
        "figures": figures,
    }


__all__ = ["FIGURES", "figures_of", "prediction"]
