"""One twin run, many draws, and the run directory: :func:`simulate`, :func:`simulate_draws`,
:func:`write_run_dir`.

The inputs are a real run's: :class:`~pytest_lagscale.experiment.settings.RunSettings` go
through :func:`~pytest_lagscale.experiment.plan.plan_run` (profile, policy manifest, Deployment,
overrides, all checked), the policy is built by the plan (``build_policy``: the project's real
control code) and scored by :func:`pytest_lagscale.analyze.measure.measure` on the twin's
timeline and event table, with the same :class:`~pytest_lagscale.analyze.measure.RunSpec` a real
run's analysis builds. A draw's random inputs (controller phase, cold-start factors, probe and
heartbeat phases) come from ``SeedSequence([seed, draw])``.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..analyze.measure import Measurements, RunSpec, measure
from ..analyze.tables import events_from_records
from ..contract.errors import ConfigError
from ..contract.rundir import SUMMARY_MD, TIMELINE_PNG, RunDir
from .driver import DriveInputs, PolicySwitch, drive
from .load import Production, production
from .params import TwinParams, machine_draw, twin_params
from .world import Draw, EventSink, World

#: The twin's step, seconds: 1/8 s is exact in binary, so the policy's periodic timers (now + an
#: integer period) never drift by a float rounding against the grid.
TICK_S = 0.125
#: Baseline seconds skipped by "replicas == minReplicaCount at baseline" (as the real analysis).
WARM_UP_S = 10.0
#: The headline figures of a twin run: metric name -> label.
HEADLINE = {"reaction_time_s": "reaction (s)", "peak_lag_records": "peak lag (records)",
            "drain_time_s": "drain (s)", "replica_seconds": "replica-seconds",
            "scale_steps": "scale steps"}


@dataclass(frozen=True)
class TwinRun:
    """One simulated run.

    Attributes:
        seed, draw: the run's seed and draw index.
        timeline, events: the two tables of :mod:`pytest_lagscale.analyze.tables`.
        spec: what the analysis was told (as for a real run).
        measurements: ``measure(timeline, events, spec)``.
        settled: the run settled before the settle timeout.
        produced, processed: records per partition produced and processed (committed once).
        controller_phase_s: the draw's controller phase, seconds (:class:`~.world.Draw`).
    """

    seed: int
    draw: int
    timeline: pd.DataFrame
    events: pd.DataFrame
    spec: RunSpec
    measurements: Measurements
    settled: bool
    produced: tuple[int, ...]
    processed: tuple[int, ...]
    controller_phase_s: float

    def headline(self) -> dict[str, float | None]:
        """The :data:`HEADLINE` metrics (units as in ``analyze.measure.METRICS``)."""
        flat = self.measurements.flat()
        return {name: flat[name] for name in HEADLINE}


@dataclass(frozen=True)
class TwinDraws:
    """Several draws of one run: ``runs`` in draw order, ``median_draw`` the index of the draw
    whose headline figures are closest to the medians (sum of relative distances)."""

    runs: tuple[TwinRun, ...]
    distribution: dict[str, dict[str, float | None]] = field(default_factory=dict)
    median_draw: int = 0


#: The scheduled actions the twin models (the others are refused by :func:`plan_of`).
TWIN_ACTIONS = ("switch_policy",)


def plan_of(settings_or_plan: Any) -> Any:
    """A :class:`~pytest_lagscale.experiment.plan.RunPlan` (settings are planned).

    Raises:
        ConfigError: a bad input, or one the twin does not model (``type: external`` triggers
            other than the run's own persistent-lag scaler, scheduled actions other than
            :data:`TWIN_ACTIONS`, static membership). CPU policies are checked against the
            calibration by :func:`params_for`.
    """
    from ..experiment.plan import RunPlan, plan_run

    plan = settings_or_plan if isinstance(settings_or_plan, RunPlan) else plan_run(
        settings_or_plan)
    problems = []
    for source, policy in _policies(plan):
        for call in getattr(policy, "external_scalers", ()):
            if not call.local:
                problems.append(
                    f"--policy: {source!r} spec.triggers[{call.trigger_index}] "
                    f"calls the external scaler {call.scaler_address!r}, which the twin does "
                    "not model (it runs only the persistent-lag scaler a run serves itself); "
                    "set scalerAddress: 'lagscale://local' or name the address in the "
                    "annotation lagscale.dev/local-scaler-address")
            elif getattr(policy, "local_scaler_kind", "persistent-lag") != "persistent-lag":
                problems.append(
                    f"--policy: {source!r} spec.triggers[{call.trigger_index}] is served by the "
                    f"{policy.local_scaler_kind} scaler, which the twin does not model (it models "
                    "the persistent-lag scaler only); use another policy")
    others = [a for a in plan.actions if a.action.name not in TWIN_ACTIONS]
    if others:
        problems.append(f"--profile: {plan.profile.name!r} schedules actions "
                        f"({', '.join(a.action.label() for a in others)}), which the twin "
                        f"does not model yet (it models {', '.join(TWIN_ACTIONS)}); use a "
                        "profile without them")
    if plan.settings.static_membership:
        problems.append("--static-membership: not modelled by the twin yet; drop it")
    if plan.group_type == "share":
        problems.append("--group-type share: the twin models consumer groups only (a share group's "
                        "record acquisition and redeliveries are not modelled); use --group-type consumer")
    if problems:
        raise ConfigError(problems)
    return plan


def _policies(plan: Any) -> list[tuple[str, Any]]:
    """``(manifest, policy)`` of the run's policy and of every policy a ``switch_policy``
    action switches to."""
    return [(str(plan.policy_config.source), plan.build_policy()),
            *((s.ref, s.policy) for s in switches(plan))]


def switches(plan: Any) -> tuple[PolicySwitch, ...]:
    """The plan's ``switch_policy`` actions, each with its fresh policy (built as the runner
    does: ``config.bundled.resolve_manifest`` + ``control.policy.build.build_policy``)."""
    from ..config.bundled import resolve_manifest
    from ..config.policy import load_policy_manifest
    from ..control.policy.build import build_policy

    out = []
    for item in plan.actions:
        if item.action.name == "switch_policy":
            config = load_policy_manifest(resolve_manifest(item.action.policy, "switch_policy"))
            out.append(PolicySwitch(at_s=float(item.at_s), ref=item.action.policy,
                                    label=item.action.label(),
                                    policy=build_policy(config, created_at_s=float(item.at_s))))
    return tuple(out)


def check_models(plan: Any, params: TwinParams) -> None:
    """Refuse a CPU-scaled policy (the run's or one switched to) when ``params`` has no CPU
    model or the Deployment requests no CPU.

    Raises:
        ConfigError: naming the policy and the calibration file.
    """
    if params.models_cpu:
        return
    problems = [f"--policy: {source!r} scales on CPU, and the twin's calibration "
                f"{params.source!r} has no 'cpu' section (or the Deployment requests no CPU); "
                "add the section (docs/twin.md) or use a lag policy"
                for source, policy in _policies(plan) if policy.needs_cpu]
    if problems:
        raise ConfigError(problems)


def scaler_metadata(plan: Any) -> tuple[tuple[str, str], ...]:
    """What the run sends its own scaler in place of the manifest's ``bootstrapServers``,
    ``consumerGroup`` and ``topic`` (``experiment/runner.py``: the run's topic and group; the
    twin's cluster is named ``twin``)."""
    return (("bootstrapServers", "twin"), ("consumerGroup", plan.deployment.group),
            ("topic", plan.profile.topic))


def run_spec(plan: Any, prod: Production) -> RunSpec:
    """The :class:`RunSpec` a real run's analysis builds (``experiment/analysis.py``)."""
    return RunSpec(lag_threshold_records=plan.reference_lag_threshold,
                   min_replicas=plan.min_replicas, max_replicas=plan.max_replicas,
                   partitions=plan.profile.partitions, capacity_per_s=plan.capacity_per_s,
                   baseline_start_s=(min(WARM_UP_S, plan.spike[0] / 2) if plan.spike
                                     else WARM_UP_S),
                   partition_counts=prod.counts())


def params_for(plan: Any, calibration: str | Path | None = None,
               release: str | None = None) -> TwinParams:
    """The twin's parameters of a plan (its Deployment, engine, balancer, trigger interval),
    from ``calibration`` or the bundled one of the engine for the machine image ``release``
    (a kernel release, ``machine_info.release``; ``params.calibration_path``).

    Raises:
        ConfigError: a bad calibration, or a CPU policy it cannot model (:func:`check_models`).
    """
    params = twin_params(plan.deployment, engine=plan.engine, balancer=plan.balancer,
                         trigger_interval_s=plan.trigger_interval_s, calibration=calibration,
                         release=release)
    check_models(plan, params)
    return params


#: The draw's stream of the machine's run-to-run speed (``params.machine_draw``); 1 and 2 are
#: the Pods metric's and the external scaler's.
MACHINE_STREAM_KEY = 3


def _draw(seed: int, index: int, phase_s: tuple[float, float]) -> Draw:
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, index])))
    return Draw(seed=seed, controller_phase_s=float(rng.uniform(*phase_s)), rng=rng)


def _phase_range(policy: Any, params: TwinParams) -> tuple[float, float]:
    """Where a draw's controller phase is drawn from, seconds: the calibration's
    ``controller`` lead extra (the runner's own lead, ``twin/driver.py``), else anywhere over
    the policy's periods (their product)."""
    if params.controller_lead_extra_s is not None:
        return params.controller_lead_extra_s
    periods = [getattr(policy, name, None) for name in ("polling_interval_s", "sync_period_s")]
    periods = [p for p in periods if p]
    return (0.0, float(np.prod(periods)) if periods else 1.0)


def simulate(settings_or_plan: Any, params: TwinParams | None = None, seed: int = 0, *,
             draw: int = 0, prod: Production | None = None) -> TwinRun:
    """Simulate one run (one draw).

    Args:
        settings_or_plan: ``RunSettings`` or a ``RunPlan`` (the inputs of ``lagscale run``).
        params: the twin's parameters; default: the bundled calibration of the plan's engine.
        seed: the draws' seed.
        draw: which draw (its random inputs come from ``SeedSequence([seed, draw])``).
        prod: the production table (computed from the profile when None; pass it to reuse).

    Raises:
        ConfigError: a bad input or one the twin does not model (:func:`plan_of`).
    """
    plan = plan_of(settings_or_plan)
    params = params or params_for(plan)
    check_models(plan, params)
    prod = prod or production(plan.profile, TICK_S)
    policy = plan.build_policy()
    the_draw = _draw(seed, draw, _phase_range(policy, params))
    sink = EventSink()
    world = World(machine_draw(params, the_draw.stream(MACHINE_STREAM_KEY)), prod, the_draw,
                  sink)
    inputs = DriveInputs(schedule=tuple(plan.profile.schedule()), spike=plan.spike,
                         min_replicas=plan.min_replicas,
                         reference_lag_threshold=plan.reference_lag_threshold,
                         settle_timeout_s=plan.settings.settle_timeout_s,
                         scaler_metadata=scaler_metadata(plan), switches=switches(plan))
    timeline, settled = drive(world, policy, inputs)
    events = events_from_records(sink.records, origin_s=0.0)
    spec = run_spec(plan, prod)
    return TwinRun(seed=seed, draw=draw, timeline=timeline, events=events, spec=spec,
                   measurements=measure(timeline, events, spec), settled=settled,
                   produced=tuple(int(x) for x in world.log_end),
                   processed=tuple(int(x) for x in world.processed),
                   controller_phase_s=the_draw.controller_phase_s)


def _quantile(values: Sequence[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=float), q))


def distribution(runs: Sequence[TwinRun]) -> dict[str, dict[str, float | None]]:
    """Per headline metric: ``median``, ``p5``, ``p95``, ``min`` and ``max`` over the draws (None
    when no draw measured it) and ``measured`` (draws that did)."""
    out: dict[str, dict[str, float | None]] = {}
    for name in HEADLINE:
        values = [v for r in runs if (v := r.headline()[name]) is not None]
        out[name] = ({"median": statistics.median(values), "p5": _quantile(values, 0.05),
                      "p95": _quantile(values, 0.95), "min": min(values), "max": max(values),
                      "measured": float(len(values))}
                     if values else {"median": None, "p5": None, "p95": None, "min": None,
                                     "max": None, "measured": 0.0})
    return out


def _median_draw(runs: Sequence[TwinRun], dist: dict[str, dict[str, float | None]]) -> int:
    def distance(run: TwinRun) -> float:
        total = 0.0
        for name, value in run.headline().items():
            median = dist[name]["median"]
            if value is None or median is None:
                total += 1.0
            else:
                total += abs(value - median) / max(abs(median), 1e-9)
        return total
    return min(range(len(runs)), key=lambda i: (distance(runs[i]), i))


def simulate_draws(settings_or_plan: Any, params: TwinParams | None = None, seed: int = 0,
                   draws: int = 30, *, prod: Production | None = None) -> TwinDraws:
    """Simulate ``draws`` draws of one run (the production table computed once, or ``prod``
    when given: a caller predicting the same plan again passes it).

    Raises:
        ConfigError: as :func:`simulate`.
    """
    plan = plan_of(settings_or_plan)
    params = params or params_for(plan)
    prod = prod if prod is not None else production(plan.profile, TICK_S)
    runs = tuple(simulate(plan, params, seed, draw=i, prod=prod) for i in range(draws))
    dist = distribution(runs)
    return TwinDraws(runs, dist, _median_draw(runs, dist))


def write_run_dir(draws: TwinDraws, plan: Any, params: TwinParams, out_dir: str | Path) -> Any:
    """Write the median draw as a run directory like a real run's: ``benchmark.json`` (with
    ``run.platform = "twin"`` and ``experiment.twin``: the draws' distribution and the
    parameters), ``timeline.png``, ``summary.md``, ``timeline.csv`` and ``events.jsonl``.

    Returns:
        The :class:`~pytest_lagscale.experiment.result.RunResult` written.
    """
    from ..experiment.result import run_title
    from ..report.benchjson import Inputs
    from ..report.summary import write_summary
    from ..report.timeline_png import write_timeline_png

    run = draws.runs[draws.median_draw]
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    root = Path(out_dir) / f"{stamp}-twin-{plan.settings.label()}"
    root.mkdir(parents=True, exist_ok=False)
    inputs = Inputs(profile=plan.profile.name, policy=plan.policy_name, balancer=plan.balancer,
                    partitions=plan.profile.partitions, seed=plan.profile.seed,
                    scale=plan.settings.scale, engine=plan.engine,
                    trigger_interval_s=plan.trigger_interval_s,
                    settings=plan.settings.to_document())
    _write_tables(run, root)
    title = run_title(f"twin {plan.settings.label()}", inputs)
    write_timeline_png(run.timeline, root / TIMELINE_PNG, spike=plan.spike,
                       steps=list(run.measurements.steps),
                       title=f"{title}: lag, replicas, consume rate")
    result = _result(draws, plan, params, inputs, root)
    result.write()
    write_summary(root / SUMMARY_MD, run.measurements, (),
                  title=f"lagscale simulate (twin, draw {run.draw} of {len(draws.runs)}, "
                        f"seed {run.seed}) {title}", experiment=result.experiment)
    return result


def _result(draws: TwinDraws, plan: Any, params: TwinParams, inputs: Any, root: Path) -> Any:
    """The median draw as a :class:`~pytest_lagscale.experiment.result.RunResult`."""
    from ..experiment.environment import commit_info, machine_info
    from ..experiment.result import RunResult

    run = draws.runs[draws.median_draw]
    written = ("benchmark_json", "timeline_png", "summary_md", "timeline_csv", "events_jsonl")
    return RunResult(
        settings=plan.settings, run_dir=root, spec=run.spec, measurements=run.measurements,
        reconciliation=None, timeline=run.timeline, events=run.events, inputs=inputs,
        artifacts={name: path for name, path in RunDir(root).artifacts().items()
                   if name in written},
        extra_metrics={"produced_records": float(sum(run.produced)),
                       "lost_records": float(sum(run.produced) - sum(run.processed)),
                       "duplicated_records": 0.0, "run_wall_time_s": None},
        run_info=_run_info(plan, params, run),
        experiment={"twin": _twin_section(draws, params)},
        machine_info=machine_info(), commit_info=commit_info())


def _write_tables(run: TwinRun, root: Path) -> None:
    """``timeline.csv`` and ``events.jsonl`` (one record per event, as the real logs)."""
    run.timeline.to_csv(RunDir(root).timeline_csv, index=False)
    with open(RunDir(root).events_jsonl, "w", encoding="utf-8") as fh:
        for row in run.events.itertuples():
            fh.write(json.dumps({"event": row.event, "source": row.source,
                                 "monotonic_s": row.monotonic_s, **row.fields},
                                default=str) + "\n")


def _run_info(plan: Any, params: TwinParams, run: TwinRun) -> dict[str, Any]:
    return {"platform": "twin", "lag_threshold": plan.lag_threshold,
            "reference_lag_threshold": plan.reference_lag_threshold,
            "policy_kind": plan.policy_kind, "min_replicas": plan.min_replicas,
            "max_replicas": plan.max_replicas,
            "capacity_per_replica_per_s": plan.capacity_per_s,
            "twin_capacity_per_replica_per_s": round(params.capacity_per_s, 3),
            "graceful_drain": True, "settled": run.settled,
            "actions": [{"at_s": s.at_s, "action": "switch_policy", "policy": s.ref}
                        for s in switches(plan)],
            "max_partitions": plan.max_partitions, "profile_file": str(plan.profile.source),
            "scaled_object_file": plan.policy_config.source,
            "deployment_file": plan.deployment.source, "calibration_file": params.source,
            "seed": run.seed, "draw": run.draw,
            "controller_phase_s": round(run.controller_phase_s, 3)}


def _twin_section(draws: TwinDraws, params: TwinParams) -> dict[str, Any]:
    return {"draws": len(draws.runs), "median_draw": draws.median_draw,
            "distribution": draws.distribution,
            "per_draw": [r.headline() for r in draws.runs],
            "calibration": params.source, "source_runs": list(params.source_runs),
            "machine": dict(params.machine)}


__all__ = ["HEADLINE", "TICK_S", "TWIN_ACTIONS", "TwinDraws", "TwinRun", "check_models",
           "distribution", "params_for", "plan_of", "run_spec", "scaler_metadata", "simulate",
           "simulate_draws", "switches", "write_run_dir"]
