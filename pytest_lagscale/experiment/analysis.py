"""The run's last phase, ``analyse``: with every part stopped, turn the run directory into a
:class:`~.result.RunResult` — merged event table, reconciliation on Spark, measurements,
``benchmark.json``, ``timeline.png`` and ``summary.md``.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable

from ..analyze.broker_view import broker_replica_records, commit_times, output_times
from ..analyze.measure import RunSpec, measure
from ..analyze.skew import counts_by_partition
from ..analyze.store_rate import read_store_times
from ..analyze.tables import events_from_records, spike_window
from ..report.benchjson import Inputs
from .environment import machine_info, versions
from .result import RunResult, run_title

log = logging.getLogger(__name__)

#: Baseline seconds skipped by "replicas == minReplicaCount at baseline" (start-up lag).
WARM_UP_S = 10.0


def reconcile_run(layout: Any, spark: Any = None) -> Any:
    """Lost/duplicated on Spark: in the session's shared worker when the plugin enabled one
    (:mod:`pytest_lagscale.analyze.reconcile_worker`), else in ``spark`` (a started
    SparkSession, left running) or a session of its own; None (and a warning) when the job
    cannot run here."""
    try:
        from ..analyze.reconcile import reconcile
        from ..analyze.reconcile_worker import in_shared_or_own
    except ImportError as exc:
        log.warning("reconciliation skipped: %s", exc)
        return None
    return in_shared_or_own(
        layout, "reconciled", lambda worker: worker.reconcile(layout.store, layout.manifest_json),
        lambda: reconcile(layout.store, layout.manifest_json, spark=spark,
                          log_path=layout.reconcile_log))


def analyse(run: Any, broker: dict[str, Any], kafka_version: str,
            wall_time_s: float, incomplete: str | None = None) -> RunResult:
    """Analyse a finished :class:`~.runner.Run` and write its reports.

    Args:
        run: the run, every part stopped.
        broker: the broker's settings (for the inputs).
        kafka_version: the broker's version.
        wall_time_s: seconds the run took up to now.
        incomplete: why the run ended early (a part died), or None: the analysis covers what
            was recorded up to then and says so (``incomplete`` in ``benchmark.json``).
    """
    plan, layout = run.plan, run.layout
    records = layout.merge_events()
    origin_s = run.clock.start_monotonic_s
    if plan.deployment.command is not None:  # seen from the broker only
        from ..observe.output_topic import OUTPUT_TIMES_FILE

        records = broker_replica_records(records)
        store = output_times(layout.root / OUTPUT_TIMES_FILE, records, origin_s)
        dips_from = "output_topic" if store is not None else "committed_offsets"
        store = store or commit_times(records, origin_s)
        reconciling: Future = Future()
        reconciling.set_result(getattr(run, "output_reconciliation", None))
        committed = getattr(run, "committed_exactness", None)
    else:
        # the Spark job runs while the measurements and the PNGs are made (its JVM works, this
        # process waits on it)
        warm = getattr(run, "warm_spark", None)  # started when a part died
        reconciling = _in_background(
            lambda: reconcile_run(layout, None if warm is None else warm.session()))
        store = read_store_times(layout.store, records, origin_s)
        committed, dips_from = None, "store"
    result = _measured(run, records, store, incomplete, wall_time_s, broker, kafka_version,
                       reconciling, committed, dips_from)
    result.write()
    return result


def _in_background(job: Callable[[], Any]) -> Future:
    """``job()`` on a daemon thread; its result or error in the returned future. A daemon, so
    that an interrupted harness does not wait at exit for a Spark job whose JVM its exit stops
    (:mod:`pytest_lagscale.process`); an own session is stopped by the job itself."""
    future: Future = Future()

    def body() -> None:
        try:
            future.set_result(job())
        except BaseException as exc:  # handed to the waiting thread
            future.set_exception(exc)

    threading.Thread(target=body, name="lagscale-reconcile", daemon=True).start()
    return future


def _measured(run: Any, records: Any, store: Any, incomplete: str | None, wall_time_s: float,
              broker: dict[str, Any], kafka_version: str, reconciling: Future, committed: Any,
              dips_from: str) -> RunResult:
    """:func:`analyse` past the inputs: measurements and PNGs, then the reconciliation's
    result (``reconciling``, waited for last) and the :class:`RunResult` (not yet written)."""
    from ..report.timeline_png import write_timeline_png
    from .lag_signal import signal_summary

    plan, layout = run.plan, run.layout
    events = events_from_records(records, origin_s=run.clock.start_monotonic_s)
    manifest = run.produce_result.manifest
    spec = RunSpec(lag_threshold_records=plan.reference_lag_threshold,
                   min_replicas=plan.min_replicas, max_replicas=plan.max_replicas,
                   partitions=plan.profile.partitions, capacity_per_s=plan.capacity_per_s,
                   baseline_start_s=(min(WARM_UP_S, plan.spike[0] / 2) if plan.spike
                                     else WARM_UP_S),
                   partition_counts=counts_by_partition(manifest.counts(),
                                                        plan.profile.partitions))
    measurements = measure(run.timeline, events, spec, store)
    start_s, end_s = spike_window(events)  # as recorded, else as scheduled
    spike = (start_s, end_s) if start_s is not None and end_s is not None else plan.spike
    actions = [(a["scheduled_s"], a["label"]) for a in run.actions_done]
    world = world_of(run, events, incomplete)
    inputs = _inputs(run, broker, kafka_version)
    title = run_title(plan.settings.label(), inputs)
    write_timeline_png(run.timeline, layout.timeline_png, spike=spike,
                       steps=list(measurements.steps), actions=actions,
                       faults=[(f["start_s"], f["duration_s"], f["name"]) for f in world["faults"]
                               if f["name"] != "lag_unread"],
                       max_lag_age_s=world["lag_max_age_s"],
                       title=f"{title}: lag, replicas, consume rate")
    replicas, replicas_png = per_replica(run, events, spike, title, store)
    reconciliation = reconciling.result()
    sources = measured_from(run, dips_from if store is not None else None, reconciliation,
                            committed)
    if sources["exactness"] is None and incomplete is None:
        # a run that could not count lost records is not a good one, whatever else it saw
        world["problems"].append("exactness not measured: no reconciliation of the consumer's "
                                 "output (see the run's log and reconcile.log)")
    lost = (reconciliation.lost_total if reconciliation is not None
            else committed.unconsumed_total if committed is not None else None)
    extra = {"produced_records": float(manifest.total_acked),
             "lost_records": None if lost is None else float(lost),
             "duplicated_records": (None if reconciliation is None
                                    else float(reconciliation.duplicated_total)),
             "run_wall_time_s": wall_time_s}
    return RunResult(settings=plan.settings, run_dir=layout.root, spec=spec,
                       measurements=measurements, reconciliation=reconciliation,
                       timeline=run.timeline, events=events, inputs=inputs,
                       artifacts={**layout.artifacts(), "replicas_png": replicas_png},
                       extra_metrics=extra,
                       # the signal's staleness at the controller's steps, per source kind
                       run_info={**_run_info(run), "lag_signal": signal_summary(records),
                                 **_platform_info(run, records), "measured_from": sources,
                                 **({"committed_exactness": committed.to_dict()}
                                    if committed is not None else {})},
                       experiment={"replicas": replicas.to_dict()},
                       machine_info=machine_info(), commit_info=run.commit_info,
                       store_times=store, world=world)


def _inputs(run: Any, broker: dict[str, Any], kafka_version: str) -> Inputs:
    """The run's inputs as ``benchmark.json`` records them."""
    plan = run.plan
    return Inputs(
        profile=plan.profile.name, policy=plan.policy_name, balancer=plan.balancer,
        partitions=plan.profile.partitions, seed=plan.profile.seed, scale=plan.settings.scale,
        engine=plan.engine, trigger_interval_s=plan.trigger_interval_s,
        spark_remote=redact_remote(run.spark_remote),
        static_membership=plan.settings.static_membership,
        settings=plan.settings.to_document(),
        deployment_sha256=plan.deployment.sha256 if plan.settings.deployment is not None else None,
        versions={**versions(kafka_version),
                  # a platform running real control-plane parts names their versions
                  **dict(getattr(run.parts.platform, "versions", None) or {})},
        broker=broker)


def measured_from(run: Any, rates: str | None, reconciliation: Any, committed: Any
                  ) -> dict[str, Any]:
    """Where each family of figures came from (``run.measured_from`` in benchmark.json).

    ``consumer``: ``spark_consumer`` (its event logs and store) or ``command`` (the broker's
    view: the group observer and the lag exporter). ``rates_and_dips``: ``store`` (per-record
    write times), ``committed_offsets`` (the group's commit progress at the observer's
    interval), ``output_topic`` (each output record's time) or None (nothing to read).
    ``exactness``: ``store`` or ``output_topic`` (lost and
    duplicated counted on Spark), ``committed_offsets`` (lost only: duplicates are not
    measurable), or None. ``reaction``: ``replica_events`` or ``group`` (join = member appeared
    -> first assignment, first fetch = assignment -> the member's first commit)."""
    command = run.plan.deployment.command is not None
    if reconciliation is not None:
        exactness = "output_topic" if command else "store"
    else:
        exactness = "committed_offsets" if committed is not None else None
    return {"consumer": run.plan.deployment.kind, "rates_and_dips": rates,
            "exactness": exactness, "duplicates_measured": reconciliation is not None,
            "reaction": "group" if command else "replica_events",
            "output_topic": getattr(run, "output_topic", None)}


def world_of(run: Any, events: Any, incomplete: str | None) -> dict[str, Any]:
    """What the run saw and what it could not (:mod:`..analyze.staleness`): ``faults``,
    ``lag_unread_s`` (and its longest stretch), ``settled``, ``incomplete`` and ``problems``
    (one line per reason the run is not a good one; empty for a good run). Lag older than two
    polling intervals counts as unread."""
    from ..analyze.staleness import faults, lag_freshness, world_problems

    max_age_s = 2 * run.lag_read_timeout_s()
    freshness = lag_freshness(run.timeline, max_age_s)
    fault_list = faults(events, freshness)
    settled = None if incomplete else run.settled
    problems = world_problems(settled=settled, settle_timeout_s=run.plan.settings.settle_timeout_s,
                              freshness=freshness, incomplete=incomplete,
                              unsettled_state=getattr(run, "unsettled_state", ""))
    return {"faults": [f.to_dict() for f in fault_list],
            "lag_unread_s": freshness.unread_s, "lag_unread_longest_s": freshness.longest_s,
            "lag_unread_fraction": (None if freshness.unread_fraction is None
                                    else round(freshness.unread_fraction, 4)),
            "lag_max_age_s": max_age_s, "settled": settled, "incomplete": incomplete,
            "problems": problems}


def per_replica(run: Any, events: Any, spike: tuple[float, float] | None,
                title: str, store: Any) -> tuple[Any, Any]:
    """Each replica's partitions and records (:mod:`..analyze.replicas`, against the profile's
    P; records from ``store``, the run's :class:`~..analyze.store_rate.StoreTimes`) and
    ``replicas.png`` beside ``timeline.png``; returns ``(ReplicaTable, png path)``."""
    from ..analyze.completions import replica_rates
    from ..analyze.replicas import ownership, replica_table
    from ..report.replicas_png import write_replicas_png

    from ..analyze.store_rate import empty_completions

    completions = store.completions() if store is not None else empty_completions()
    table = replica_table(events, completions, run.plan.profile.partitions)
    png = write_replicas_png(
        ownership(events), replica_rates(completions), run.layout.replicas_png,
        replicas=[r.replica_id for r in table.replicas],
        surplus=[r.replica_id for r in table.surplus], partitions=table.partitions,
        spike=spike, title=f"{title}: partitions and records/s per replica")
    return table, png


#: Spark Connect URL parameters that carry credentials (removed from recorded URLs).
SECRET_PARAMS = ("token", "password", "secret", "api_key", "apikey", "credential")


def redact_remote(url: str | None) -> str | None:
    """``url`` (``sc://[user[:password]@]host:port[/;key=value;...]``) without credentials:
    the userinfo part and every parameter whose key names a secret (:data:`SECRET_PARAMS`)
    are dropped. None stays None."""
    if not url:
        return None
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, params = rest.partition("/")
    authority = authority.rpartition("@")[2]
    kept = [p for p in params.split(";") if p and not any(
        word in p.partition("=")[0].lower() for word in SECRET_PARAMS)]
    return f"{scheme}://{authority}" + ("/;" + ";".join(kept) if kept else "")


def _platform_info(run: Any, records: list[dict[str, Any]]) -> dict[str, Any]:
    """What the platform itself reports on the run (kubernetes: versions, the control plane's
    start, the shadow HPA's agreement), or nothing."""
    info = getattr(run.parts.platform, "run_info", None)
    return info(records) if info is not None else {}


def _run_info(run: Any) -> dict[str, Any]:
    from ..analyze.consumer_lag import compare_lag_views

    plan = run.plan
    return {"topic": run.topic, "group": run.group, "lag_threshold": plan.lag_threshold,
            "reference_lag_threshold": plan.reference_lag_threshold,
            "policy_kind": plan.policy_kind, "min_replicas": plan.min_replicas,
            "max_replicas": plan.max_replicas, "platform": plan.settings.platform,
            "capacity_per_replica_per_s": plan.capacity_per_s,
            "graceful_drain": plan.settings.graceful, "settled": run.settled,
            "harness_cpu_fraction": getattr(run, "harness_cpu_fraction", None),
            "actions": run.actions_done, "max_partitions": plan.max_partitions,
            "profile_file": str(plan.profile.source),
            "scaled_object_file": plan.policy_config.source,
            "deployment_file": plan.deployment.source,
            "spark_connect": _spark_connect_info(run),
            # --lag-source and the stand-ins it started; trigger_addresses: manifest -> run
            "lag_source": run.lag_signal,
            # what the replicas join, and a share group's configs as the broker reported them
            "group_type": plan.group_type, "share_group": getattr(run, "share_group", {}) or None,
            # the consumers' own lag (consumer_records_lag) beside the committed-offset lag
            "consumer_lag": compare_lag_views(run.timeline)}


#: A Spark Connect server at or above this busy ratio is saturated: the group's capacity is then
#: the server's, shared by every replica.
SATURATED_BUSY_RATIO = 0.9


def _spark_connect_info(run: Any) -> dict[str, Any] | None:
    """The run's Spark Connect server (None for other engines): redacted URL, whether the run
    started it, and its busy ratio over the run (mean, max, seconds at or above
    :data:`SATURATED_BUSY_RATIO`, ``saturated`` when any)."""
    if not run.spark_remote:
        return None
    server = run.parts.spark_server
    busy = (run.timeline["spark_connect_busy_ratio"].dropna()
            if run.timeline is not None and "spark_connect_busy_ratio" in run.timeline
            else None)
    info: dict[str, Any] = {"url": redact_remote(run.spark_remote),
                            "started_by_run": server is not None,
                            "startup_s": None if server is None else server.startup_s}
    if busy is not None and len(busy):
        saturated_s = int((busy >= SATURATED_BUSY_RATIO).sum())
        info.update(busy_ratio_mean=round(float(busy.mean()), 3),
                    busy_ratio_max=round(float(busy.max()), 3),
                    saturated_s=saturated_s, saturated=saturated_s > 0)
    return info
