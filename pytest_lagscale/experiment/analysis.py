"""The run's last phase, ``analyse``: with every part stopped, turn the run directory into a
:class:`~.result.RunResult` — merged event table, reconciliation on Spark, measurements,
``benchmark.json``, ``timeline.png`` and ``summary.md``.
"""

from __future__ import annotations

import logging
from typing import Any

from ..analyze.measure import RunSpec, measure
from ..analyze.tables import events_from_records, spike_window
from ..report.benchjson import Inputs
from .environment import commit_info, machine_info, versions
from .result import RunResult, run_title

log = logging.getLogger(__name__)

#: Baseline seconds skipped by "replicas == minReplicaCount at baseline" (start-up lag).
WARM_UP_S = 10.0


def reconcile_run(layout: Any) -> Any:
    """Lost/duplicated on Spark; None (and a warning) when the job cannot run here."""
    try:
        from ..analyze.reconcile import reconcile
    except ImportError as exc:
        log.warning("reconciliation skipped: %s", exc)
        return None
    return reconcile(layout.store, layout.manifest_json, log_path=layout.reconcile_log)


def analyse(run: Any, broker: dict[str, Any], kafka_version: str,
            wall_time_s: float) -> RunResult:
    """Analyse a finished :class:`~.runner.Run` and write its reports.

    Args:
        run: the run, every part stopped.
        broker: the broker's settings (for the inputs).
        kafka_version: the broker's version.
        wall_time_s: seconds the run took up to now.
    """
    from ..report.timeline_png import write_timeline_png

    plan, layout = run.plan, run.layout
    events = events_from_records(layout.merge_events(), origin_s=run.clock.start_monotonic_s)
    reconciliation = reconcile_run(layout)
    spec = RunSpec(lag_threshold_records=plan.reference_lag_threshold,
                   min_replicas=plan.min_replicas, max_replicas=plan.max_replicas,
                   partitions=plan.profile.partitions, capacity_per_s=plan.capacity_per_s,
                   baseline_start_s=(min(WARM_UP_S, plan.spike[0] / 2) if plan.spike
                                     else WARM_UP_S))
    measurements = measure(run.timeline, events, spec)
    manifest = run.produce_result.manifest
    extra = {"produced_records": float(manifest.total_acked),
             "lost_records": None if reconciliation is None else float(reconciliation.lost_total),
             "duplicated_records": (None if reconciliation is None
                                    else float(reconciliation.duplicated_total)),
             "run_wall_time_s": wall_time_s}
    inputs = Inputs(
        profile=plan.profile.name, policy=plan.policy_name, balancer=plan.balancer,
        partitions=plan.profile.partitions, seed=plan.profile.seed, scale=plan.settings.scale,
        engine=plan.engine, trigger_interval_s=plan.trigger_interval_s,
        versions=versions(kafka_version), broker=broker)
    start_s, end_s = spike_window(events)  # as recorded, else as scheduled
    spike = (start_s, end_s) if start_s is not None and end_s is not None else plan.spike
    actions = [(a["scheduled_s"], a["label"]) for a in run.actions_done]
    write_timeline_png(run.timeline, layout.timeline_png, spike=spike,
                       steps=list(measurements.steps), actions=actions,
                       title=f"{run_title(plan.settings.label(), inputs)}: lag, replicas, "
                             "consume rate")
    result = RunResult(settings=plan.settings, run_dir=layout.root, spec=spec,
                       measurements=measurements, reconciliation=reconciliation,
                       timeline=run.timeline, events=events, inputs=inputs,
                       artifacts=layout.artifacts(), extra_metrics=extra,
                       run_info=_run_info(run), machine_info=machine_info(),
                       commit_info=commit_info())
    result.write()
    return result


def _run_info(run: Any) -> dict[str, Any]:
    plan = run.plan
    return {"topic": run.topic, "group": run.group, "lag_threshold": plan.lag_threshold,
            "reference_lag_threshold": plan.reference_lag_threshold,
            "policy_kind": plan.policy_kind, "min_replicas": plan.min_replicas,
            "max_replicas": plan.max_replicas, "platform": plan.settings.platform,
            "capacity_per_replica_per_s": plan.capacity_per_s,
            "graceful_drain": plan.settings.graceful, "settled": run.settled,
            "actions": run.actions_done, "max_partitions": plan.max_partitions,
            "profile_file": str(plan.profile.source),
            "scaled_object_file": plan.policy_config.source,
            "deployment_file": plan.deployment.source}
