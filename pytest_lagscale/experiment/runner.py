"""One experiment run on the local platform, end to end: :func:`run_experiment`.

Order of a run (every started part is stopped on every exit path, Ctrl-C included):

1. plan (:func:`.plan.plan_run`): files read and checked, overrides applied — nothing started;
2. broker (the given cluster, or one of ``--kafka``), topic with the profile's partitions;
3. Prometheus (1 s scrape, file-based discovery), lag exporter, Deployment at
   minReplicaCount (waited ready), autoscaler (KEDA polling + HPA sync on the ScaledObject);
4. load: the profile is produced (open model); ``load_start``, ``phase``, ``spike_start``,
   ``spike_end`` and ``load_end`` events are written at their scheduled instants;
5. settle: until total lag is 0 and the Deployment is back at minReplicaCount (bounded by
   ``settle_timeout_s``), so that the drain and the scale-down are part of the record;
6. record: the timeline from Prometheus (1 s step) and the merged event table;
7. stop everything; reconcile the store against the producer's manifest on Spark;
8. analyse and write ``benchmark.json``, ``timeline.png``, ``summary.md``, raw tables.

Time: ``t_s = 0`` is the load start in both tables (the event table's monotonic origin and the
timeline's wall-clock start are taken at the same instant).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..analyze.measure import RunSpec, measure
from ..analyze.tables import events_from_records
from ..clock import RealClock
from ..errors import LagscaleError
from ..eventlog import EventLog
from ..observe.lag_exporter import partition_lag
from ..report.benchjson import Inputs
from .environment import commit_info, machine_info, versions
from .plan import RunPlan, plan_run
from .progress import RunProgress
from .result import RunResult
from .settings import RunSettings

log = logging.getLogger(__name__)

#: Seconds a starting replica may take to become ready (Spark's cold start under load).
READY_TIMEOUT_S = 180.0
#: Scrape intervals waited before the load starts: file discovery refresh + first scrapes.
PRE_LOAD_SCRAPES = 4
#: Seconds after the settle so the last scrape of the final state is in Prometheus.
FINAL_SCRAPE_S = 3.0
#: Baseline seconds skipped by "replicas == minReplicaCount at baseline" (start-up lag).
WARM_UP_S = 10.0


class _StartClock(RealClock):
    """A real clock that remembers its first reading: the load's start (monotonic and wall)."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.start_monotonic_s = 0.0
        self.start_wall_s = 0.0

    def now(self) -> float:
        value = super().now()
        if not self.started.is_set():
            self.start_wall_s = time.time()
            self.start_monotonic_s = value
            self.started.set()
        return value


def _announce_phases(plan: RunPlan, clock: _StartClock, events: EventLog,
                     stop: threading.Event) -> None:
    """Write the profile's phase events at their scheduled instants (thread body)."""
    while not clock.started.wait(0.05):
        if stop.is_set():
            return
    marks: list[tuple[float, str, dict[str, Any]]] = [(0.0, "load_start", {})]
    for step in plan.profile.schedule():
        marks.append((step.start_s, "phase", {"label": step.label,
                                              "rate_per_s": step.rate_per_s}))
    if plan.spike is not None:
        marks += [(plan.spike[0], "spike_start", {}), (plan.spike[1], "spike_end", {})]
    marks.append((plan.profile.duration_s, "load_end", {}))
    marks.sort(key=lambda mark: mark[0])
    for at_s, name, fields in marks:
        delay = clock.start_monotonic_s + at_s - time.monotonic()
        if delay > 0 and stop.wait(delay):
            return
        events.emit(name, scheduled_s=at_s, **fields)


def unprocessed_records(offsets: dict[int, tuple[int, int | None]] | None) -> int | None:
    """Records produced but not yet committed by the group, summed over partitions.

    ``offsets`` is ``{partition: (committed, log_end)}`` as :meth:`KafkaLagSource.read` returns
    it (committed -1: nothing committed yet, so the whole log counts; log_end None: unknown, 0).
    None in, None out (no observation yet). This is what the group still has to process, not
    KEDA's lag metric (which counts 1 for an uncommitted partition under ``latest``).
    """
    if offsets is None:
        return None
    lags = (partition_lag(committed, end) for committed, end in offsets.values())
    return sum(max(0, lag) for lag in lags if lag is not None)


def _read_unprocessed(lag_source: Any) -> int | None:
    try:
        offsets = lag_source.read()
    except Exception:  # a broker hiccup must not end the run; the next second reads again
        return None
    return unprocessed_records(offsets)


def _unique_run_dir(out_dir: Path, label: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    # Absolute: Prometheus resolves file_sd paths against its config file's directory.
    base = out_dir.resolve() / f"{stamp}-{label}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    path.mkdir(parents=True)
    return path


@dataclass
class _Parts:
    """What runs while the load is produced (phase 3 of the module docstring)."""

    prometheus: Any
    deployment: Any
    autoscaler: Any
    lag_source: Any
    targets: list[str] = field(default_factory=list)

    def sync_targets(self) -> None:
        """Point Prometheus's ``replicas`` job at the replicas that run now."""
        targets = sorted(self.deployment.metrics_targets())
        if targets != self.targets:
            self.prometheus.set_targets("replicas", targets)
            self.targets = targets


class _Run:
    """State of one run while its parts are up (see the module docstring for the order).

    Args:
        plan: the checked plan.
        run_dir: the run's (absolute) directory.
        progress: the live display, or None.
        topic, group: the run's topic and consumer group (suffixed on a shared broker).
    """

    def __init__(self, plan: RunPlan, run_dir: Path, progress: RunProgress | None, *,
                 topic: str, group: str):
        self.plan = plan
        self.run_dir = run_dir
        self.progress = progress
        self.topic = topic
        self.group = group
        self.clock = _StartClock()
        self.produce_result: Any = None
        self.end_wall_s = 0.0
        self.settled = False

    def show(self, phase: str, parts: _Parts, lag_records: int | None) -> None:
        if self.progress is None:
            return
        elapsed = time.monotonic() - self.clock.start_monotonic_s \
            if self.clock.started.is_set() else 0.0
        self.progress.update(phase=phase, elapsed_s=elapsed, lag_records=lag_records,
                             desired_replicas=parts.deployment.desired_replicas,
                             ready_replicas=parts.deployment.ready_replicas)

    def execute(self, cluster: Any, stack: ExitStack) -> tuple[Any, Any]:
        """Run phases 2-6; returns ``(timeline, broker_settings)``."""
        from ..observe.recorder import Recorder, default_queries

        parts = self._start(cluster, stack)
        self._load(cluster, parts, stack)
        self._settle(parts)
        time.sleep(FINAL_SCRAPE_S)
        self.end_wall_s = time.time()
        if self.progress is not None:
            self.progress.update(phase="recording")
        recorder = Recorder(parts.prometheus.url, default_queries(self.group))
        timeline = recorder.record(self.run_dir, self.clock.start_wall_s, self.end_wall_s)
        return timeline, dict(getattr(cluster, "settings", {}) or {})

    def _start(self, cluster: Any, stack: ExitStack) -> _Parts:
        """Phases 2-3: topic, Prometheus, lag exporter, Deployment at minReplicaCount (ready),
        autoscaler (first HPA sync done), then a few scrapes so t = 0 has a recorded past."""
        from ..control.controller import ScalingController
        from ..kafka.admin import KafkaAdmin, KafkaLagSource
        from ..observe.lag_exporter import serve_lag_exporter
        from ..observe.prometheus import PrometheusServer
        from ..platform.autoscaler import LocalAutoscaler
        from ..platform.local import LocalDeployment, template_from_deployment

        plan, run_dir = self.plan, self.run_dir
        admin = KafkaAdmin(cluster.bootstrap_servers, cluster.client_config)
        admin.create_topic(self.topic, plan.profile.partitions)
        lag_source = KafkaLagSource(admin, self.group, self.topic)

        prometheus = stack.enter_context(PrometheusServer(run_dir))
        exporter, exporter_port = serve_lag_exporter(lag_source, self.group, self.topic)
        stack.callback(exporter.shutdown)
        prometheus.set_targets("lag_exporter", [f"127.0.0.1:{exporter_port}"])

        template = template_from_deployment(
            plan.deployment, cluster.bootstrap_servers,
            flag_overrides={"--topic": self.topic, "--group": self.group,
                            **plan.flag_overrides})
        deployment = stack.enter_context(
            LocalDeployment(template, run_dir, graceful=plan.settings.graceful))
        if self.progress is not None:
            self.progress.update(phase="starting", total_s=plan.profile.duration_s)
        deployment.scale(plan.min_replicas)
        deployment.wait_ready(plan.min_replicas, within_s=READY_TIMEOUT_S)

        controller = ScalingController.from_scaled_object(plan.scaled_object,
                                                          created_at_s=time.monotonic())
        autoscaler = LocalAutoscaler(controller, deployment, lag_source,
                                     run_dir / "controller.events.jsonl",
                                     cpu_request_millicores=template.cpu_request_millicores)
        stack.enter_context(autoscaler)
        prometheus.set_targets("controller", [f"127.0.0.1:{autoscaler.metrics_port}"])
        parts = _Parts(prometheus, deployment, autoscaler, lag_source)
        parts.sync_targets()
        _wait_first_sync(autoscaler)
        time.sleep(PRE_LOAD_SCRAPES * prometheus.scrape_interval_s)  # scraped before t = 0
        return parts

    def _load(self, cluster: Any, parts: _Parts, stack: ExitStack) -> None:
        """Phase 4: produce the profile (a thread) with the phase events on their schedule;
        meanwhile keep Prometheus's targets current and the progress line fresh (its lag is
        the autoscaler's last observation: no extra broker reads)."""
        from ..load.producer import ProduceSettings, produce_profile, write_run

        plan = self.plan
        producer_events = EventLog(self.run_dir / "producer.events.jsonl", source="producer")
        stack.callback(producer_events.close)
        stop_load = threading.Event()
        stack.callback(stop_load.set)
        announcer = threading.Thread(target=_announce_phases, name="lagscale-phases",
                                     args=(plan, self.clock, producer_events, stop_load),
                                     daemon=True)
        announcer.start()
        produce_settings = ProduceSettings(cluster.bootstrap_servers, cluster.client_config)
        outcome: dict[str, Any] = {}

        def produce() -> None:
            try:
                outcome["result"] = produce_profile(
                    replace(plan.profile, topic=self.topic), produce_settings,
                    clock=self.clock, should_stop=stop_load.is_set)
            except BaseException as exc:  # re-raised in the main thread
                outcome["error"] = exc

        producer = threading.Thread(target=produce, name="lagscale-producer", daemon=True)
        producer.start()
        while producer.is_alive():
            parts.sync_targets()
            self.show("load", parts, unprocessed_records(parts.autoscaler.last_offsets))
            producer.join(1.0)
        if "error" in outcome:
            raise outcome["error"]
        self.produce_result = outcome["result"]
        write_run(self.produce_result, self.run_dir)
        announcer.join(5)

    def _settle(self, parts: _Parts) -> None:
        """Phase 5: wait for lag 0 and replicas back at minReplicaCount (bounded)."""
        plan, deployment = self.plan, parts.deployment
        deadline = time.monotonic() + plan.settings.settle_timeout_s
        while True:
            parts.sync_targets()
            lag = _read_unprocessed(parts.lag_source)
            at_floor = deployment.desired_replicas == deployment.current_replicas \
                == plan.min_replicas
            self.show("settling", parts, lag)
            if lag == 0 and at_floor:
                self.settled = True
                deployment.wait_terminated(within_s=60)
                return
            if time.monotonic() >= deadline:
                log.warning("run %s: not settled within %.0f s (lag %s, %d replicas)",
                            self.run_dir.name, plan.settings.settle_timeout_s, lag,
                            deployment.current_replicas)
                return
            time.sleep(1.0)


def _wait_first_sync(autoscaler: Any) -> None:
    """Block until the HPA synced once, so t = 0 already shows desired replicas."""
    deadline = time.monotonic() + autoscaler.controller.sync_period_s + 10.0
    while time.monotonic() < deadline:
        if any(d.event == "hpa_sync" for d in list(autoscaler.decisions)):
            return
        time.sleep(0.1)
    raise LagscaleError("autoscaler: no HPA sync within its sync period + 10 s; see "
                        "controller.events.jsonl")


def _collect_events(run_dir: Path, origin_monotonic_s: float) -> Any:
    from ..observe.recorder import merge_event_logs

    paths = [run_dir / name for name in ("producer.events.jsonl", "controller.events.jsonl",
                                         "platform.events.jsonl")]
    paths += sorted((run_dir / "replicas").glob("*/events.jsonl"))
    records = merge_event_logs([p for p in paths if p.is_file()], run_dir / "events.jsonl")
    return events_from_records(records, origin_s=origin_monotonic_s)


def _reconcile(run_dir: Path) -> Any:
    """Lost/duplicated on Spark; None (and a warning) when the job cannot run here."""
    try:
        from ..analyze.reconcile import reconcile
    except ImportError as exc:
        log.warning("reconciliation skipped: %s", exc)
        return None
    return reconcile(run_dir / "store", run_dir / "manifest.json",
                     log_path=run_dir / "reconcile.log")


def run_experiment(settings: RunSettings, *, cluster: Any = None,
                   progress: RunProgress | None = None,
                   on_run_dir: Callable[[Path], None] | None = None) -> RunResult:
    """Plan (:func:`.plan.plan_run`) and run one experiment: see :func:`run_plan`.

    Raises:
        ConfigError: bad settings, profile or manifests (before anything starts).
        BrokerError, ReplicaError, LagscaleError: as :func:`run_plan`.
    """
    return run_plan(plan_run(settings), cluster=cluster, progress=progress,
                    on_run_dir=on_run_dir)


def run_plan(plan: RunPlan, *, cluster: Any = None, progress: RunProgress | None = None,
             on_run_dir: Callable[[Path], None] | None = None) -> RunResult:
    """Run one planned experiment on the local platform and analyse it.

    Args:
        plan: from :func:`.plan.plan_run` (every input already checked).
        cluster: a started Kafka cluster to use (the session's); None starts one of
            ``plan.settings.kafka`` for this run and stops it afterwards. On a shared cluster
            the topic and group get a run suffix so runs do not see each other's offsets.
        progress: a live display (phase, elapsed/total, lag, replicas), or None.
        on_run_dir: called with the run directory as soon as it exists.

    Returns:
        The analysed :class:`RunResult`; ``benchmark.json``, ``timeline.png``, ``summary.md``,
        ``timeline.parquet``/``.csv``, ``events.jsonl`` and ``manifest.json`` are written.

    Raises:
        BrokerError, ReplicaError, LagscaleError: a part failed; everything started is stopped.
    """
    started_s = time.monotonic()
    settings = plan.settings
    run_dir = _unique_run_dir(Path(settings.out_dir), settings.label())
    if on_run_dir is not None:
        on_run_dir(run_dir)
    suffix = "" if cluster is None else f"-{run_dir.name[:16].lower()}"
    run = _Run(plan, run_dir, progress, topic=f"{plan.profile.topic}{suffix}",
               group=f"{plan.deployment.replica.group}{suffix}")
    with ExitStack() as stack:
        if cluster is None:
            from ..kafka import make_cluster

            cluster = make_cluster(settings.kafka, settings.kafka_bootstrap,
                                   dict(settings.kafka_config))
            stack.callback(cluster.stop)
            cluster.start()
        timeline, broker = run.execute(cluster, stack)
        kafka_version = getattr(cluster, "version", "unknown")
    if not run.clock.started.is_set():
        raise LagscaleError(f"run {run_dir}: the load never started")
    if progress is not None:
        progress.update(phase="analysing")
    events = _collect_events(run_dir, run.clock.start_monotonic_s)
    reconciliation = _reconcile(run_dir)
    return _analyse(plan, run, timeline, events, reconciliation, broker, kafka_version,
                    time.monotonic() - started_s)


def _analyse(plan: RunPlan, run: _Run, timeline: Any, events: Any, reconciliation: Any,
             broker: dict[str, Any], kafka_version: str, wall_time_s: float) -> RunResult:
    from ..analyze.tables import spike_window
    from ..report.timeline_png import write_timeline_png

    spec = RunSpec(lag_threshold_records=plan.lag_threshold, min_replicas=plan.min_replicas,
                   max_replicas=plan.max_replicas, partitions=plan.profile.partitions,
                   capacity_per_s=plan.capacity_per_s,
                   baseline_start_s=min(WARM_UP_S, plan.spike[0] / 2) if plan.spike else WARM_UP_S)
    measurements = measure(timeline, events, spec)
    manifest = run.produce_result.manifest
    extra = {"produced_records": float(manifest.total_acked),
             "lost_records": None if reconciliation is None else float(reconciliation.lost_total),
             "duplicated_records": (None if reconciliation is None
                                    else float(reconciliation.duplicated_total)),
             "run_wall_time_s": wall_time_s}
    inputs = Inputs(
        profile=plan.profile.name, policy=plan.policy_name, balancer=plan.balancer,
        partitions=plan.profile.partitions, seed=plan.profile.seed, scale=plan.settings.scale,
        engine=plan.engine, versions=versions(kafka_version),
        broker=broker)
    run_info = {"topic": run.topic, "group": run.group, "lag_threshold": plan.lag_threshold,
                "min_replicas": plan.min_replicas, "max_replicas": plan.max_replicas,
                "capacity_per_replica_per_s": plan.capacity_per_s,
                "graceful_drain": plan.settings.graceful, "settled": run.settled,
                "profile_file": str(plan.settings.profile),
                "scaled_object_file": plan.scaled_object.source,
                "deployment_file": plan.deployment.source}
    run_dir = run.run_dir
    start_s, end_s = spike_window(events)  # as recorded, else as scheduled
    spike = (start_s, end_s) if start_s is not None and end_s is not None else plan.spike
    png = write_timeline_png(timeline, run_dir / "timeline.png", spike=spike,
                             steps=list(measurements.steps),
                             title=f"{plan.settings.label()}: lag, replicas, consume rate")
    artifacts = {"benchmark_json": run_dir / "benchmark.json", "timeline_png": png,
                 "summary_md": run_dir / "summary.md",
                 "timeline_parquet": run_dir / "timeline.parquet",
                 "timeline_csv": run_dir / "timeline.csv", "events_jsonl": run_dir / "events.jsonl",
                 "manifest_json": run_dir / "manifest.json", "store": run_dir / "store"}
    result = RunResult(settings=plan.settings, run_dir=run_dir, spec=spec,
                       measurements=measurements, reconciliation=reconciliation,
                       timeline=timeline, events=events, inputs=inputs, artifacts=artifacts,
                       extra_metrics=extra, run_info=run_info, machine_info=machine_info(),
                       commit_info=commit_info())
    result.write()
    return result
