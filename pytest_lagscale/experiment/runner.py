"""One experiment run end to end: :func:`run_experiment` = plan, then the run's phases.

A run is a list of named phases (:data:`PHASES`), each a method of :class:`Run` that starts its
parts and registers their cleanup on the run's ExitStack at once, so every exit path (an error,
Ctrl-C, SIGTERM/SIGHUP) stops everything started so far, newest first:

``broker``     the given cluster, or one of ``--kafka`` (stopped at the end);
``topic``      the topic with the profile's partitions; the lag source (the group's offsets);
``spark``      for the spark-connect engine without ``--spark-remote``: the run's own Spark
               Connect server (its busy ratio is served with the lag);
``scaler``     for a policy with a ``type: external`` trigger served by the run itself
               (``scalerAddress: lagscale://local`` or the ScaledObject's
               ``lagscale.dev/local-scaler-address``): ``lagscale scaler serve`` as a child
               process on a free port;
``observe``    Prometheus (1 s scrape, file-based discovery) and the lag exporter;
``sources``    the ``--lag-source``'s counterparts (moto's server and the SumOffsetLag
               publisher for cloudwatch or an aws-cloudwatch trigger; the local Confluent
               Metrics API), the total-lag source and the value triggers' reader
               (:mod:`.lag_signal`);
``deploy``     the platform's Deployment at minReplicaCount, waited ready;
``autoscale``  the scaling policy's autoscaler (first decision made), then a few scrapes;
``load``       the profile produced (open model), phase marks and scheduled actions on time;
``settle``     until lag is 0 and replicas are back at minReplicaCount (bounded);
``record``     the timeline from Prometheus (1 s step); then, everything stopped, ``analyse``
               (events, reconciliation, measurements, benchmark.json, timeline.png, summary.md).

Every phase start is a ``run_phase`` event in ``runner.events.jsonl``. The runner reads only its
injected :class:`~pytest_lagscale.contract.clock.Clock`; ``t_s = 0`` is the load start in both
tables (their origins are read at the same instant).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from ..contract.clock import Clock, RealClock
from ..contract.rundir import RunDir
from ..contract.errors import ConfigError, LagscaleError
from ..contract.eventlog import EventLog
from ..observe.lag_exporter import partition_lag
from .environment import commit_info
from .plan import RunPlan, plan_run
from .progress import RunProgress
from .result import RunResult
from .settings import RunSettings

log = logging.getLogger(__name__)

#: The group configs a share-group run sets before its first member joins: start at the log's
#: beginning (Kafka's default ``latest`` would skip what was produced before the first join).
#: The lock duration and delivery limit stay the broker's (30 s, 5), recorded per run.
SHARE_GROUP_CONFIG = {"share.auto.offset.reset": "earliest"}
#: Seconds the broker may take to report :data:`SHARE_GROUP_CONFIG` back once set.
SHARE_CONFIG_TIMEOUT_S = 15.0
#: Seconds a starting replica may take to become ready (Spark's cold start under load).
READY_TIMEOUT_S = 180.0
#: Scrape intervals waited before the load starts: file discovery refresh + first scrapes.
PRE_LOAD_SCRAPES = 4
#: Seconds after the settle so the last scrape of the final state is in Prometheus.
FINAL_SCRAPE_S = 3.0
#: Seconds the autoscaler may take for its first decision beyond the policy's own period.
FIRST_DECISION_SLACK_S = 10.0
#: librdkafka's request timeout of the lag reads' clients, seconds: a read abandoned at the
#: polling interval (:class:`~pytest_lagscale.sources.bounded.BoundedLagReads`) ends by then.
LAG_READ_REQUEST_TIMEOUT_S = 10.0
#: Seconds a stopping run waits for the producer thread (its flush is bounded by 5 s).
PRODUCER_STOP_S = 10.0
#: The part watch's name for the run's own embedded broker.
BROKER_PART = "kafka"
#: Seconds between the group observer's looks (describe + committed offsets).
GROUP_OBSERVER_INTERVAL_S = 0.5
#: Seconds the run's end waits for the group observer's call in flight (and its admin's close):
#: a broker that died holds such a call for the request timeout, which the run does not wait.
GROUP_OBSERVER_STOP_S = 1.0
#: Seconds the record phase waits for a restarted Prometheus before its second attempt.
RECORD_RETRY_S = 30.0
#: Lag reads are bounded by the policy's polling interval; a policy without one: this.
DEFAULT_LAG_READ_TIMEOUT_S = 5.0


class LoadClock:
    """The run's clock, remembering its first reading after :meth:`arm`: the load's start
    (monotonic, and the wall-clock time read at the same instant for Prometheus queries)."""

    def __init__(self, inner: Clock):
        self.inner = inner
        self.started = threading.Event()
        self.start_monotonic_s = 0.0
        self.start_wall_s = 0.0

    def now(self) -> float:
        value = self.inner.now()
        if not self.started.is_set():
            self.start_wall_s = time.time()
            self.start_monotonic_s = value
            self.started.set()
        return value

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)

    def elapsed_s(self) -> float:
        """Seconds since the load start (0 before it)."""
        return self.inner.now() - self.start_monotonic_s if self.started.is_set() else 0.0


def unprocessed_records(offsets: dict[int, tuple[int, int | None]] | None) -> int | None:
    """Records produced but not yet committed by the group, summed over partitions.

    ``offsets`` is ``{partition: (committed, log_end)}`` as a lag source reads it (committed
    -1: nothing committed yet, so the whole log counts; log_end None: unknown, 0). None in, None
    out (no observation yet). This is what the group still has to process, not KEDA's lag
    metric (which counts 1 for an uncommitted partition under ``latest``).
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


@dataclass
class _Parts:
    """What the phases started, as later phases and the scheduled actions need it."""

    cluster: Any = None
    admin: Any = None
    lag_source: Any = None
    prometheus: Any = None
    platform: Any = None
    template: Any = None
    autoscaler: Any = None
    spark_server: Any = None
    scaler: Any = None
    targets: tuple[str, ...] = ()
    moto: Any = None
    total_lag_source: Any = None
    value_reader: Any = None
    watch: Any = None
    share_admin: Any = None
    group_observer: Any = None


def run_suffix(run_dir_name: str) -> str:
    """The suffix a run on a shared cluster gives its topic and group: the run directory's name
    (unique in its output directory) plus 6 random hex digits (unique across output directories
    and harness processes), lower-cased and cut to Kafka's legal characters; <= 64 characters."""
    name = re.sub(r"[^a-z0-9._-]", "-", run_dir_name.lower())[:56]
    return f"-{name}-{uuid.uuid4().hex[:6]}"


class Run:
    """One run while its parts are up: :meth:`execute` runs :data:`PHASES` in order.

    Args:
        plan: the checked plan.
        layout: the run directory.
        clock: the runner's clock (``RealClock`` in runs).
        progress: the live display, or None.
        cluster: a started cluster to share, or None. On a shared cluster (this one, or
            ``--kafka external``) the topic and group get a run suffix (:func:`run_suffix`).
    """

    def __init__(self, plan: RunPlan, layout: RunDir, clock: Clock,
                 progress: RunProgress | None, cluster: Any = None):
        self.plan, self.layout, self.progress = plan, layout, progress
        self.clock = LoadClock(clock)
        # a shared cluster (the session's, or an external one other runs may use at the same
        # time) gets a topic and group of the run's own; a broker of the run's own keeps the
        # manifests' names
        shared = cluster is not None or plan.settings.kafka == "external"
        suffix = run_suffix(layout.name) if shared else ""
        self.topic = f"{plan.profile.topic}{suffix}"
        self.group = f"{plan.deployment.group}{suffix}"
        command = plan.deployment.command
        #: the output topic a command consumer writes (its manifest's name + the suffix), or None
        self.output_topic = (f"{command.output_topic}{suffix}"
                             if command is not None and command.output_topic else None)
        self.parts = _Parts(cluster=cluster)
        self.events = EventLog(layout.source_events("runner"), source="runner", clock=clock)
        self.produce_result: Any = None
        self.timeline: Any = None
        self.actions_done: list[dict[str, Any]] = []
        self.actions: Any = None  # the ActionScheduler, from the load on
        self.settled = False
        #: the lag and replicas when the settle phase gave up ("" when it settled)
        self.unsettled_state = ""
        #: CPU seconds of the harness process per wall second from the load start to the
        #: record phase (a share of one core), None before
        self.harness_cpu_fraction: float | None = None
        self._harness_cpu_start: tuple[float, float] | None = None
        #: What the ``sources`` phase started (kind, addresses; ``run_info.lag_source``).
        self.lag_signal: dict[str, Any] = {}
        #: A share-group run's group configs (``_share_group``); empty for a consumer group.
        self.share_group: dict[str, Any] = {}
        #: A command consumer's exactness, read in the record phase (None: not read).
        self.output_reconciliation: Any = None
        self.committed_exactness: Any = None
        #: The spark-connect engine's server URL (the plan's, or the run's own server's).
        self.spark_remote: str | None = plan.spark_remote
        #: The checkout's commit when the run started (``benchmark.json`` ``commit_info``): the
        #: replicas load the code then, and a run of an hour must not name a later commit.
        self.commit_info: dict[str, Any] = commit_info()
        #: The reconciliation's Spark, started on a thread when a part died (see
        #: :meth:`_warm_reconciliation`); stopped by :func:`run_plan`.
        self.warm_spark: Any = None

    def execute(self, stack: ExitStack) -> None:
        """Run every phase; each registers what it starts on ``stack``."""
        stack.callback(self.events.close)
        try:
            self._phases(stack)
        finally:  # before the stack stops the parts: their stops are not deaths, nor restarts
            if self.parts.watch is not None:
                self.parts.watch.stop()

    def _phases(self, stack: ExitStack) -> None:
        from .watch import PartDied

        for name, phase in PHASES:
            self.events.emit("run_phase", phase=name)
            try:
                phase(self, stack)
            except PartDied:
                if self.clock.started.is_set() and name in ("load", "settle"):
                    self._warm_reconciliation()
                    self._record_what_was_seen(stack)
                if getattr(self.parts.platform, "graceful", None) is not None:
                    # the run is over: no drain (a dead broker takes no commit), replicas go now
                    self.parts.platform.graceful = False
                raise

    # -- phases --------------------------------------------------------------------------
    def broker(self, stack: ExitStack) -> None:
        from ..kafka.client_log import librdkafka_log_to

        stack.enter_context(librdkafka_log_to(self.layout.librdkafka_log))
        if self.parts.cluster is None:
            from ..kafka import make_cluster

            settings = self.plan.settings
            cluster = make_cluster(settings.kafka, settings.kafka_bootstrap,
                                   dict(settings.kafka_config))
            stack.callback(cluster.stop)
            cluster.start()
            self.parts.cluster = cluster
        from .watch import PartWatch

        watch = self.parts.watch = PartWatch(self.events, self.clock.inner.now)
        stack.callback(watch.stop)  # before any part is stopped
        cluster = self.parts.cluster
        if getattr(cluster, "process", None) is not None:  # an embedded broker: cannot come back
            watch.add(BROKER_PART, lambda: cluster.process, tail=cluster._log_tail)
        watch.start()

    def topic_phase(self, stack: ExitStack) -> None:
        from ..kafka.admin import KafkaAdmin
        from ..sources.bounded import BoundedLagReads

        cluster = self.parts.cluster
        self.parts.admin = KafkaAdmin(cluster.bootstrap_servers, cluster.client_config)
        # closed after everything that reads lag through it has stopped, before the broker
        stack.callback(self.parts.admin.close)
        self.parts.admin.create_topic(self.topic, self.plan.profile.partitions)
        if self.output_topic is not None:
            self.parts.admin.create_topic(self.output_topic, self.plan.profile.partitions)
        def new_admin() -> Any:
            return KafkaAdmin(cluster.bootstrap_servers, cluster.client_config,
                              timeout_s=LAG_READ_REQUEST_TIMEOUT_S)

        if self.plan.group_type == "share":
            new_admin = self._share_group(stack, new_admin)
        lag_reads = BoundedLagReads(new_admin, self.group, self.topic,
                                    timeout_s=self.lag_read_timeout_s(), clock=self.clock.inner.now)
        stack.callback(lag_reads.close)
        self.parts.lag_source = lag_reads

    def _share_group(self, stack: ExitStack, new_admin: Callable[[], Any]) -> Callable[[], Any]:
        """A share-group run: set the group's configs (:data:`SHARE_GROUP_CONFIG`) before any
        member joins, record every ``share.`` config the broker then reports (``share_group``
        event, benchmark.json ``run_info.share_group``), start the share-group admin service (a
        watched part) and return the factory of the lag reads' admins, which read the share
        group's lag as offsets (:class:`~pytest_lagscale.sources.share_group.ShareGroupOffsetsAdmin`)."""
        from ..kafka.share_admin import ShareGroupAdmin
        from ..sources.share_group import ShareGroupOffsetsAdmin

        from ..contract.errors import BrokerError

        admin = self.parts.admin
        admin.alter_group_config(self.group, SHARE_GROUP_CONFIG)
        started = self.clock.inner.now()
        while True:  # the broker applies a config change through its metadata log: read it back
            config = {k: v for k, v in sorted(admin.group_config(self.group).items()) if k.startswith("share.")}
            if all(config.get(k) == v for k, v in SHARE_GROUP_CONFIG.items()):
                break
            if self.clock.inner.now() - started > SHARE_CONFIG_TIMEOUT_S:
                raise BrokerError(f"share group {self.group!r}: the broker still reports {config} "
                                  f"{SHARE_CONFIG_TIMEOUT_S:g} s after {SHARE_GROUP_CONFIG} was set")
            self.clock.inner.sleep(0.2)
        share = ShareGroupAdmin(self.parts.cluster.bootstrap_servers, log_dir=self.layout.root / "share-admin")
        stack.callback(share.stop)
        share.start()
        self.parts.share_admin = share
        self.parts.watch.add("share-admin", lambda: share.process)
        self.share_group = {"group_config": config, "set_by_run": dict(SHARE_GROUP_CONFIG)}
        self.events.emit("share_group", group=self.group, **self.share_group)
        return lambda: ShareGroupOffsetsAdmin(new_admin(), share)

    def spark(self, stack: ExitStack) -> None:
        """The spark-connect engine without a ``--spark-remote``: start the run's own Spark
        Connect server (stopped with the run) and point the replicas at it."""
        if self.plan.engine != "spark-connect" or self.plan.spark_remote:
            return
        from ..spark_connect import SparkConnectServer

        self._show("starting the Spark Connect server")
        server = SparkConnectServer(self.layout.spark_connect_dir)
        stack.callback(server.stop)
        server.start()
        self.parts.spark_server = server
        self.parts.watch.add("spark-connect", lambda: server.process)
        self.spark_remote = server.url
        self.events.emit("spark_connect_ready", url=server.url, startup_s=server.startup_s,
                         pid=server.pid)

    def scaler(self, stack: ExitStack) -> None:
        """A policy (the run's, or one a ``switch_policy`` action switches to) whose external
        trigger the run serves itself: start ``lagscale scaler serve`` (stopped with the run);
        the autoscaler sends it the run's cluster, group and topic."""
        switched = [a.action.policy for a in self.plan.actions
                    if getattr(a.action, "name", "") == "switch_policy"]
        policies = [self.plan.build_policy(), *map(self._build_policy, switched)]
        kinds = {p.local_scaler_kind for p in policies if getattr(p, "needs_local_scaler", False)}
        if not kinds:
            return
        if len(kinds) > 1:
            raise ConfigError(f"the run's policies need scalers of {len(kinds)} kinds ({', '.join(sorted(kinds))}); "
                              "a run serves one: switch between policies served by one kind")
        from ..scalers.persistent_lag.process import ScalerProcess

        self._show("starting the scaler")
        scaler = ScalerProcess(self.layout.scaler_log, kind=kinds.pop())
        stack.callback(scaler.stop)
        scaler.start()
        self.parts.scaler = scaler
        self.parts.watch.add("scaler", lambda: scaler.process)
        self.events.emit("scaler_ready", address=scaler.address, startup_s=scaler.startup_s,
                         pid=scaler.pid)

    def observe(self, stack: ExitStack) -> None:
        from ..observe.lag_exporter import serve_lag_exporter
        from ..observe.prometheus import PrometheusServer

        prometheus = self.parts.prometheus = stack.enter_context(
            PrometheusServer(self.layout.root))
        # a dead Prometheus comes back on its data directory; the outage is recorded
        self.parts.watch.add("prometheus", lambda: prometheus.process,
                             restart=lambda: prometheus.restart(graceful=False))
        extra = []
        if self.parts.spark_server is not None:
            from ..observe.machine import BusyRatioCollector

            extra.append(BusyRatioCollector(self.parts.spark_server.busy_ratio))
        exporter = stack.enter_context(serve_lag_exporter(
            self.parts.lag_source, self.group, self.topic, extra_collectors=extra))
        self.parts.prometheus.set_targets("lag_exporter", [f"127.0.0.1:{exporter.port}"])

    def sources(self, stack: ExitStack) -> None:
        """The lag source's counterparts and readers (:func:`.lag_signal.start_lag_sources`)."""
        from .lag_signal import start_lag_sources

        start_lag_sources(self, stack)

    def deploy(self, stack: ExitStack) -> None:
        from ..platform import make_platform
        from ..platform.local import template_from_deployment

        plan = self.plan
        observer = self._observe_group(stack)
        if plan.deployment.command is not None:
            overrides = dict(plan.flag_overrides)
        else:
            overrides = {"--topic": self.topic, "--group": self.group, **plan.flag_overrides,
                         **({"--spark-remote": self.spark_remote} if self.spark_remote else {})}
        connection = {"KAFKA_TOPIC": self.topic, "KAFKA_GROUP": self.group,
                      **({"KAFKA_OUTPUT_TOPIC": self.output_topic} if self.output_topic else {})}
        self.parts.template = template_from_deployment(
            plan.deployment, self.parts.cluster.bootstrap_servers, flag_overrides=overrides,
            connection=connection)
        platform = make_platform(plan.settings.platform, self.parts.template, self.layout,
                                 graceful=plan.settings.graceful)
        if plan.deployment.command is not None and plan.deployment.readiness is None:
            use = getattr(platform, "use_group_membership", None)
            if use is None:
                raise ConfigError(f"{plan.deployment.source}: the consumer has no readinessProbe "
                                  f"and the {plan.settings.platform} platform cannot use group "
                                  "membership instead; add a readinessProbe")
            use(observer.members_with_partitions)
        configure = getattr(platform, "configure", None)
        if configure is not None:  # a platform that needs the plan (kubernetes: HPA timing)
            configure(plan)
        self.parts.platform = stack.enter_context(platform)
        for name, process in getattr(platform, "watched_processes", lambda: [])():
            self.parts.watch.add(name, lambda process=process: process)
        self._show("starting")
        platform.scale(plan.min_replicas)
        platform.wait_ready(plan.min_replicas, within_s=READY_TIMEOUT_S)

    def _observe_group(self, stack: ExitStack) -> Any:
        """Start the group observer (``group.events.jsonl``: members, rebalances, committed
        offsets every :data:`GROUP_OBSERVER_INTERVAL_S`; a share group's members and
        assignments through the share-group admin service) on an admin of its own whose requests
        are bounded by :data:`LAG_READ_REQUEST_TIMEOUT_S`, so a broker that stops answering
        delays a look, never the run; stopped before its admin is closed, each waiting at most
        :data:`GROUP_OBSERVER_STOP_S` for a call in flight."""
        from ..kafka.admin import KafkaAdmin
        from ..observe.group import GroupObserver

        cluster = self.parts.cluster
        share = self.parts.share_admin
        if share is not None:  # a share group: its members and assignments, no committed offsets
            admin: Any = share
        else:
            admin = KafkaAdmin(cluster.bootstrap_servers, cluster.client_config,
                               timeout_s=LAG_READ_REQUEST_TIMEOUT_S)
            stack.callback(admin.close, GROUP_OBSERVER_STOP_S)
        observer = GroupObserver(admin, self.group, self.topic,
                                 self.layout.source_events("group"),
                                 interval_s=GROUP_OBSERVER_INTERVAL_S, committed=share is None)
        stack.callback(observer.stop, GROUP_OBSERVER_STOP_S)
        self.parts.group_observer = observer.start()
        return observer

    def autoscale(self, stack: ExitStack) -> None:
        policy = self.plan.build_policy(created_at_s=self.clock.inner.now())
        own = getattr(self.parts.platform, "make_autoscaler", None)
        if own is not None:  # a platform with its own autoscaler (kubernetes: KEDA + HPA)
            self._show("applying the ScaledObject")
            autoscaler = own(self.plan, self.layout.source_events("controller"),
                             bootstrap=self.parts.cluster.bootstrap_servers, group=self.group,
                             topic=self.topic)
        else:
            autoscaler = self._local_autoscaler(policy)
        self.parts.autoscaler = stack.enter_context(autoscaler)
        self.parts.prometheus.set_targets("controller",
                                          [f"127.0.0.1:{autoscaler.metrics_port}"])
        self._sync_targets()
        self._wait_first_decision(getattr(autoscaler, "first_decision_within_s", None)
                                  or policy.first_decision_within_s)
        self.clock.inner.sleep(PRE_LOAD_SCRAPES * self.parts.prometheus.scrape_interval_s)

    def _local_autoscaler(self, policy: Any) -> Any:
        """The embedded KEDA + HPA (:class:`~pytest_lagscale.platform.autoscaler.LocalAutoscaler`)."""
        from ..platform.autoscaler import LocalAutoscaler
        from ..platform.pod_metrics import PrometheusPodMetrics

        return LocalAutoscaler(
            policy, self.parts.platform, self.parts.lag_source,
            self.layout.source_events("controller"), clock=self.clock.inner,
            cpu_request_millicores=self.parts.template.cpu_request_millicores,
            external_scalers=self._external_scalers(),
            # read only by a policy with a Pods metric (also after a switch_policy to one)
            pod_metrics=PrometheusPodMetrics(self.parts.prometheus.url),
            value_triggers=self.parts.value_reader, total_lag_source=self.parts.total_lag_source)

    def load(self, stack: ExitStack) -> None:
        """Produce the profile (a thread) with phase marks and scheduled actions on time;
        meanwhile keep Prometheus's targets and the progress line fresh (its lag is the
        autoscaler's last observation: no extra broker reads)."""
        from ..load.producer import ProduceSettings, produce_profile, write_run
        from .actions import ActionContext, ActionScheduler

        plan, cluster = self.plan, self.parts.cluster
        producer_events = EventLog(self.layout.source_events("producer"), source="producer")
        stack.callback(producer_events.close)
        stop, broker_gone = threading.Event(), threading.Event()
        stack.callback(stop.set)
        marks = threading.Thread(target=self._announce, args=(producer_events, stop),
                                 name="lagscale-phases", daemon=True)
        marks.start()
        settings = ProduceSettings(cluster.bootstrap_servers, cluster.client_config)
        outcome: dict[str, Any] = {}

        def produce() -> None:
            try:
                outcome["result"] = produce_profile(
                    replace(plan.profile, topic=self.topic), settings, clock=self.clock,
                    should_stop=stop.is_set, acks_lost=broker_gone.is_set,
                    max_partitions=plan.max_partitions)
            except BaseException as exc:  # re-raised in the main thread
                outcome["error"] = exc

        producer = threading.Thread(target=produce, name="lagscale-producer", daemon=True)
        producer.start()
        self.clock.started.wait()
        self._harness_cpu_start = (time.process_time(), self.clock.inner.now())
        context = ActionContext(self.parts.admin, self.topic, self.group, self.parts.platform,
                                self.parts.autoscaler, cluster, self._build_policy,
                                self.clock.inner.now, prometheus=self.parts.prometheus,
                                watch=self.parts.watch)
        # closed by settle (an action under way at the load's end runs on while the run
        # settles), or here when the load fails, or by the stack when settling fails
        actions = self.actions = stack.enter_context(ActionScheduler(
            plan.actions, context, self.events, self.clock.inner, self.clock.start_monotonic_s))
        self.actions_done = actions.done  # filled as the actions end
        try:
            while producer.is_alive():
                self.parts.watch.check()
                self._sync_targets()
                self._show("load", self._load_lag())
                producer.join(1.0)
        except BaseException as exc:
            if getattr(exc, "part", None) == BROKER_PART:
                broker_gone.set()  # no acknowledgement can come: purge at once
            stop.set()  # the producer stops, waits a few seconds for acks, purges the rest
            producer.join(PRODUCER_STOP_S)
            actions.close()
            if "result" in outcome:
                self.produce_result = outcome["result"]
                write_run(self.produce_result, self.layout.root)
            raise
        actions.finish_scheduling()
        if "error" in outcome:
            actions.close()
            raise outcome["error"]
        self._raise_action_errors()
        self.produce_result = outcome["result"]
        write_run(self.produce_result, self.layout.root)
        marks.join(5)

    def _raise_action_errors(self) -> None:
        """Raises LagscaleError naming every scheduled action that failed so far."""
        if self.actions is not None and self.actions.errors:
            self.actions.close()
            raise LagscaleError("scheduled action failed: " + "; ".join(self.actions.errors))

    def settle(self, stack: ExitStack) -> None:
        """Wait for lag 0, replicas back at minReplicaCount and the scheduled actions under
        way ended (bounded); then stop the actions (an unfinished one says ``interrupted``)."""
        try:
            self._settle()
        finally:
            if self.actions is not None:
                self.actions.close()
        self._raise_action_errors()

    def _settle(self) -> None:
        plan, platform, clock = self.plan, self.parts.platform, self.clock.inner
        deadline = clock.now() + plan.settings.settle_timeout_s
        while True:
            self.parts.watch.check()
            self._sync_targets()
            lag = _read_unprocessed(self.parts.lag_source)
            at_floor = platform.desired_replicas == platform.current_replicas \
                == plan.min_replicas
            self._show("settling", lag)
            acting = self.actions is not None and self.actions.running
            if lag == 0 and at_floor and not acting:
                self.settled = True
                platform.wait_terminated(within_s=60)
                return
            if clock.now() >= deadline:
                log.warning("run %s: not settled within %.0f s (lag %s, %d replicas%s)",
                            self.layout.name, plan.settings.settle_timeout_s, lag,
                            platform.current_replicas, ", an action under way" if acting else "")
                self.unsettled_state = (f" (at the end: lag {'unread' if lag is None else f'{lag:,}'}"
                                        f" records, {platform.current_replicas} replicas, "
                                        f"minReplicaCount {plan.min_replicas}"
                                        f"{', a scheduled action under way' if acting else ''})")
                return
            clock.sleep(1.0)

    def record(self, stack: ExitStack) -> None:
        from ..observe.recorder import Recorder, default_queries

        self.clock.inner.sleep(FINAL_SCRAPE_S)
        end_wall_s = time.time()
        if self._harness_cpu_start is not None and self.harness_cpu_fraction is None:
            cpu0, t0 = self._harness_cpu_start
            wall = self.clock.inner.now() - t0
            # the harness process's own threads (producer, controller, exporter, lag reads):
            # the broker, Prometheus, Spark and the replicas are processes of their own
            self.harness_cpu_fraction = round((time.process_time() - cpu0) / wall, 4) \
                if wall > 0 else None
        self._show("recording")
        recorder = Recorder(self.parts.prometheus.url,
                            default_queries(self.group, self.plan.deployment.kind))
        try:
            self.timeline = recorder.record(self.layout.root, self.clock.start_wall_s,
                                            end_wall_s)
        except LagscaleError as exc:  # Prometheus died under the queries: the watch restarts it
            log.warning("%s; recording again once Prometheus is back", exc)
            self._wait_prometheus(RECORD_RETRY_S)
            self.timeline = recorder.record(self.layout.root, self.clock.start_wall_s,
                                            end_wall_s)
        if self.plan.deployment.command is not None:
            self._read_exactness()

    def _read_exactness(self) -> None:
        """A command consumer's exactness, read while the broker is up: its output topic's
        record times (``output-times.parquet``) and its reconciliation on Spark
        (:func:`~..analyze.reconcile_topic.reconcile_topic_run`), else its
        group's committed offsets against the manifest (no loss; duplicates unmeasured). A read
        that fails leaves the figure missing (logged), never a guess."""
        from ..analyze.committed_exactness import consumed_from_committed
        from ..analyze.reconcile_topic import reconcile_topic_run

        cluster = self.parts.cluster
        self.output_reconciliation = self.committed_exactness = None
        try:
            if self.output_topic is not None:
                from ..observe.output_topic import OUTPUT_TIMES_FILE, read_output_times

                self._show("reading the output topic")
                read_output_times(cluster.bootstrap_servers, self.output_topic,
                                  self.layout.root / OUTPUT_TIMES_FILE,
                                  client_config=cluster.client_config)
                self._show("reconciling the output topic")
                self.output_reconciliation = reconcile_topic_run(
                    self.layout, cluster.bootstrap_servers, self.output_topic,
                    client_config=cluster.client_config)
            else:
                committed = self.parts.admin.committed_offsets(self.group, self.topic)
                self.committed_exactness = consumed_from_committed(
                    {p: (None if o < 0 else o) for p, o in committed.items()},
                    self.produce_result.manifest)
        except LagscaleError as exc:
            log.warning("run %s: exactness not measured: %s", self.layout.name, exc)

    def _wait_prometheus(self, within_s: float) -> None:
        """Wait until the run's Prometheus answers ready (bounded)."""
        deadline = self.clock.inner.now() + within_s
        while self.clock.inner.now() < deadline and not self.parts.prometheus._ready():
            self.clock.inner.sleep(0.5)

    def _record_what_was_seen(self, stack: ExitStack) -> None:
        """A part died: record the timeline up to now while Prometheus still runs (the
        analysis of an incomplete run); a failure here is logged, the death is what is raised."""
        self.events.emit("run_phase", phase="record")
        try:
            self.record(stack)
        except Exception as exc:  # the part's death is the run's error, not this
            log.warning("run %s: could not record the timeline after a part died: %s",
                        self.layout.name, exc)

    def _warm_reconciliation(self) -> None:
        """Start the incomplete run's reconciliation Spark now, on a thread, so its JVM start
        overlaps recording and stopping the parts (the run must end within seconds of a
        death); not when the session's shared worker reconciles, nor for a command consumer
        (reconciled from its output topic while the broker was up)."""
        from ..analyze.local_spark import WarmingSpark
        from ..analyze.reconcile_worker import shared_enabled

        if self.plan.deployment.command is None and not shared_enabled():
            self.warm_spark = WarmingSpark(log_path=self.layout.reconcile_log)

    def stop_warm_spark(self) -> None:
        """Stop the reconciliation Spark started by :meth:`_warm_reconciliation`, if any."""
        warm, self.warm_spark = self.warm_spark, None
        if warm is not None:
            warm.stop()

    # -- helpers -------------------------------------------------------------------------
    def lag_read_timeout_s(self) -> float:
        """The bound of one lag read, seconds: the policy's polling interval (KEDA's
        ``pollingInterval``, else the HPA's sync period), so the controller keeps its cadence;
        :data:`DEFAULT_LAG_READ_TIMEOUT_S` for a policy with neither."""
        return self.plan.lag_poll_interval_s or DEFAULT_LAG_READ_TIMEOUT_S

    def _announce(self, events: EventLog, stop: threading.Event) -> None:
        """Write the profile's phase events at their scheduled instants (thread body)."""
        while not self.clock.started.wait(0.05):
            if stop.is_set():
                return
        plan = self.plan
        marks: list[tuple[float, str, dict[str, Any]]] = [(0.0, "load_start", {})]
        for step in plan.profile.schedule():
            marks.append((step.start_s, "phase", {"label": step.label,
                                                  "rate_per_s": step.rate_per_s}))
        if plan.spike is not None:
            marks += [(plan.spike[0], "spike_start", {}), (plan.spike[1], "spike_end", {})]
        marks.append((plan.profile.duration_s, "load_end", {}))
        for at_s, name, fields in sorted(marks, key=lambda mark: mark[0]):
            delay = self.clock.start_monotonic_s + at_s - self.clock.inner.now()
            if delay > 0 and stop.wait(delay):
                return
            events.emit(name, scheduled_s=at_s, **fields)

    def _load_lag(self) -> int | None:
        """The progress line's lag: the autoscaler's last observation when its policy reads
        lag, else one read of the lag source (a CPU policy reads none)."""
        autoscaler = self.parts.autoscaler
        if autoscaler.controller.needs_lag and autoscaler.last_offsets is not None:
            return unprocessed_records(autoscaler.last_offsets)
        return _read_unprocessed(self.parts.lag_source)

    def _external_scalers(self) -> Any:
        """The reader of external triggers' scalers: the run's own scaler (if started) for local
        triggers, sent this run's cluster, group and topic; None when it has none."""
        if self.parts.scaler is None:
            return None
        from ..platform.external import ExternalScalerReader
        from ..scalers import run_metadata

        return ExternalScalerReader(self.parts.scaler.address, run_metadata(
            self.parts.scaler.kind, self.parts.cluster.bootstrap_servers, self.group, self.topic))

    def _build_policy(self, ref: str) -> Any:
        from ..config.bundled import resolve_manifest
        from ..config.policy import load_policy_manifest
        from ..control.policy.build import build_policy

        config = load_policy_manifest(resolve_manifest(ref, "switch_policy"))
        return build_policy(config, created_at_s=self.clock.inner.now())

    def _sync_targets(self) -> None:
        """Point Prometheus's ``replicas`` job at the replicas that run now (target groups when
        the platform gives them: a cluster's pods through the apiserver's pod proxy)."""
        groups = getattr(self.parts.platform, "metrics_target_groups", lambda: None)()
        if groups is not None:
            key = tuple(str(g["labels"]) for g in groups)
            if key != self.parts.targets:
                self.parts.prometheus.set_target_groups("replicas", groups)
                self.parts.targets = key
            return
        targets = tuple(sorted(self.parts.platform.metrics_targets()))
        if targets != self.parts.targets:
            self.parts.prometheus.set_targets("replicas", list(targets))
            self.parts.targets = targets

    def _show(self, phase: str, lag_records: int | None = None) -> None:
        if self.progress is None:
            return
        platform = self.parts.platform
        self.progress.update(phase=phase, elapsed_s=self.clock.elapsed_s(),
                             total_s=self.plan.profile.duration_s, lag_records=lag_records,
                             desired_replicas=platform.desired_replicas if platform else None,
                             ready_replicas=platform.ready_replicas if platform else None)

    def _wait_first_decision(self, within_s: float) -> None:
        """Block until the autoscaler decided once (within ``within_s`` + the slack seconds), so
        t = 0 already shows desired replicas."""
        clock = self.clock.inner
        deadline = clock.now() + within_s + FIRST_DECISION_SLACK_S
        while clock.now() < deadline:
            if self.parts.autoscaler.has_decided():
                return
            clock.sleep(0.1)
        raise LagscaleError("autoscaler: no scaling decision within the policy's period + "
                            f"{FIRST_DECISION_SLACK_S:g} s; see controller.events.jsonl")


#: The run's phases in order (name, method).
PHASES: tuple[tuple[str, Callable[[Run, ExitStack], None]], ...] = (
    ("broker", Run.broker), ("topic", Run.topic_phase), ("spark", Run.spark),
    ("scaler", Run.scaler), ("observe", Run.observe), ("sources", Run.sources),
    ("deploy", Run.deploy), ("autoscale", Run.autoscale), ("load", Run.load),
    ("settle", Run.settle), ("record", Run.record))


def run_experiment(settings: RunSettings, *, cluster: Any = None,
                   progress: RunProgress | None = None,
                   on_run_dir: Callable[[Path], None] | None = None,
                   clock: Clock | None = None) -> RunResult:
    """Plan (:func:`.plan.plan_run`) and run one experiment: see :func:`run_plan`.

    Raises:
        ConfigError: bad settings, profile, manifests or actions (before anything starts).
        BrokerError, ReplicaError, LagscaleError: as :func:`run_plan`.
    """
    return run_plan(plan_run(settings), cluster=cluster, progress=progress,
                    on_run_dir=on_run_dir, clock=clock)


def run_plan(plan: RunPlan, *, cluster: Any = None, progress: RunProgress | None = None,
             on_run_dir: Callable[[Path], None] | None = None,
             clock: Clock | None = None) -> RunResult:
    """Run one planned experiment and analyse it.

    Args:
        plan: from :func:`.plan.plan_run` (every input already checked).
        cluster: a started Kafka cluster to use (the session's); None starts one of
            ``plan.settings.kafka`` for this run and stops it afterwards. On a shared cluster
            the topic and group get a run suffix so runs do not see each other's offsets. A
            plan with an action that stops or pauses the broker (``needs_own_broker``) does
            not use it: the run starts its own.
        progress: a live display (phase, elapsed/total, lag, replicas), or None.
        on_run_dir: called with the run directory as soon as it exists.
        clock: the runner's clock (default ``RealClock``).

    Returns:
        The analysed :class:`RunResult`; the artifacts of :meth:`RunDir.artifacts` are written.

    Raises:
        BrokerError, ReplicaError, LagscaleError: a part failed; everything started is stopped.
    """
    clock = clock or RealClock()
    started_s = clock.now()
    own = [a.action.name for a in plan.actions if getattr(a.action, "needs_own_broker", False)]
    if cluster is not None and own:
        # a paused or restarted broker would be every other run's on a shared cluster (and a
        # restarted one a new process the session did not start): this run starts its own
        log.info("run %s: %s needs the run's own broker; not using the shared cluster",
                 plan.settings.label(), ", ".join(own))
        cluster = None
    layout = RunDir.create(plan.settings.out_dir, plan.settings.label())
    if on_run_dir is not None:
        on_run_dir(layout.root)
    run = Run(plan, layout, clock, progress, cluster)
    from .watch import PartDied

    try:
        with ExitStack() as stack:
            run.execute(stack)
            kafka_version = getattr(run.parts.cluster, "version", "unknown")
            broker = dict(getattr(run.parts.cluster, "settings", {}) or {})
    except PartDied as exc:
        raise PartDied(f"{exc}{_analyse_incomplete(run, str(exc), clock.now() - started_s)}",
                       exc.part) from None
    finally:
        run.stop_warm_spark()
    if not run.clock.started.is_set():
        raise LagscaleError(f"run {layout.root}: the load never started")
    if progress is not None:
        progress.update(phase="analysing")
    from .analysis import analyse

    return analyse(run, broker, kafka_version, clock.now() - started_s)


def _analyse_incomplete(run: Run, why: str, wall_time_s: float) -> str:
    """Analyse what a run whose part died recorded up to then (marked incomplete); returns the
    text that tells where it is, or why there is none."""
    if not run.clock.started.is_set() or run.timeline is None or run.produce_result is None:
        return "; the load had not produced a record to analyse"
    from .analysis import analyse

    try:
        result = analyse(run, dict(getattr(run.parts.cluster, "settings", {}) or {}),
                         getattr(run.parts.cluster, "version", "unknown"), wall_time_s,
                         incomplete=why)
    except Exception as exc:  # the death is the error; the analysis is a bonus
        log.warning("run %s: the analysis of the incomplete run failed: %s", run.layout.name,
                    exc)
        return f"; the analysis of what was recorded failed: {exc}"
    return f"; what was recorded is analysed in {result.benchmark_path} (marked incomplete)"
