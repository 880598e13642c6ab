"""The local stand-in for the KEDA operator and the HPA controller: a thin I/O loop.

:class:`LocalAutoscaler` owns time and the world; the decisions are a
:class:`~pytest_lagscale.control.policy.ScalingPolicy`'s (KEDA + HPA from a ScaledObject, a
plain CPU HPA, ...). Each :meth:`~LocalAutoscaler.step` at ``now_s``:

1. asks the policy whether a step is due (the KEDA poll every ``pollingInterval`` with the first
   at once, the HPA sync every sync period: the schedule is the policy's);
2. ``observe``: reads ``{partition: (committed, log_end)}`` from the lag source if the policy
   needs lag (a failed read is a ``lag_read_failed`` event and a trigger error, as in KEDA),
   replica counts, when the Deployment requests CPU, per-replica CPU (a ``replica_cpu``
   event, millicores per replica; the policy sees it only if it needs CPU), for every
   ``type: external`` trigger, its scaler's answers over gRPC (GetMetricSpec once, GetMetrics
   and IsActive each step: :mod:`.external`; a failed call is an ``external_read_failed``
   event and a trigger error) and, for a policy with a ``type: Pods`` metric
   (``pod_metric_name``), that metric per replica from the run's Prometheus as
   prometheus-adapter would serve it (:mod:`.pod_metrics`; a ``pod_metrics`` event with the
   value of each replica, None = missing; ``pod_metrics_failed`` when the query failed, which
   leaves the HPA without the metric this sync);
3. ``decide``: the policy's steps (``keda_poll``, ``hpa_sync``, ...);
4. ``apply``: each step goes to ``controller.events.jsonl`` under its event name with its inputs
   and outputs; a step that changed the replica count is also a ``decision`` event and scales
   the Deployment.

The series are exported as Prometheus gauges named like KEDA's and kube-state-metrics':
``keda_scaler_metrics_value``, ``keda_scaler_active``, ``keda_scaler_errors_total``,
``kube_horizontalpodautoscaler_status_desired_replicas`` and
``kube_horizontalpodautoscaler_status_current_replicas``. :meth:`~LocalAutoscaler.set_policy`
replaces the policy mid-run (event ``policy_switched``).
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from ..contract.clock import Clock, RealClock
from ..control.hpa import PodCpu, PodMetric
from ..control.observation import ExternalMetric, Observation, ValueReading
from ..control.policy.base import PolicyStep, ScalingPolicy, step_record
from ..contract.eventlog import EventLog
from ..lifecycle import StartStop
from ..sources.base import LagSource, TotalLag, offsets_total_records, utc_now
from .base import Platform
from .cpu import CpuSampler

__all__ = ["ControllerMetrics", "LagSource", "LocalAutoscaler", "ScaledDeployment"]


#: What the autoscaler reads and sets: the platform seam's :class:`~.base.Platform` (it uses the
#: replica counts, ``replicas()`` for CPU and ``scale``).
ScaledDeployment = Platform


class ControllerMetrics:
    """The controller's Prometheus series, on their own registry.

    Labels follow KEDA (``scaledObject``, ``scaler``, ``metric``, ``triggerIndex``) and
    kube-state-metrics (``horizontalpodautoscaler``).
    """

    def __init__(self, scaled_object: str, hpa_name: str):
        self.registry = CollectorRegistry()
        self.scaled_object, self.hpa_name = scaled_object, hpa_name
        labels = ["namespace", "scaledObject", "scaler", "metric", "triggerIndex"]
        self.metric_value = Gauge("keda_scaler_metrics_value", "Metric value of a scaler as "
                                  "given to the HPA", labels, registry=self.registry)
        self.active = Gauge("keda_scaler_active", "1 when the scaler is active", labels,
                            registry=self.registry)
        self.errors = Counter("keda_scaler_errors", "Errors of a scaler", labels,
                              registry=self.registry)
        hpa_labels = ["namespace", "horizontalpodautoscaler"]
        self.desired = Gauge("kube_horizontalpodautoscaler_status_desired_replicas",
                             "Desired replicas computed by the HPA", hpa_labels,
                             registry=self.registry)
        self.current = Gauge("kube_horizontalpodautoscaler_status_current_replicas",
                             "Current replicas of the scale target", hpa_labels,
                             registry=self.registry)
        self.ready = Gauge("kube_deployment_status_replicas_ready", "Ready replicas of the "
                           "scale target (kube-state-metrics' name), read at scrape time",
                           ["namespace", "deployment"], registry=self.registry)

    def read_ready(self, deployment: str, ready: Any) -> None:
        """Serve ``ready()`` (ready replicas) as ``kube_deployment_status_replicas_ready``."""
        self.ready.labels("default", deployment).set_function(lambda: float(ready()))

    def record(self, decision: PolicyStep) -> None:
        """Update the series from one step (its trigger evaluations, if it has any)."""
        for t in getattr(decision, "triggers", ()):
            labels = ("default", self.scaled_object, f"{t.type}Scaler", t.metric_name,
                      str(t.index))
            if t.metric_value is not None:
                self.metric_value.labels(*labels).set(t.metric_value)
            self.active.labels(*labels).set(1 if t.active else 0)
            if t.error is not None:
                self.errors.labels(*labels).inc()
        if decision.sets_desired_replicas:
            self.desired.labels("default", self.hpa_name).set(decision.replicas_after)
        self.current.labels("default", self.hpa_name).set(decision.replicas_after)


class LocalAutoscaler(StartStop):
    """Runs a :class:`~pytest_lagscale.control.policy.ScalingPolicy` against a Deployment on a clock.

    Args:
        policy: the pure decision maker (``config.policy.build_policy``).
        deployment: the replicas it scales (the platform's Deployment).
        lag_source: offsets reader; may be None for a policy that does not need lag.
        event_log_path: the controller's JSONL event log.
        clock: time source (``RealClock`` in runs, ``FakeClock`` in tests).
        cpu_request_millicores: per-replica CPU request (millicores); with it, every due step
            samples the replicas' CPU (``replica_cpu`` events) and CPU policies decide on it.
        name: object name in metric labels (default: the policy's ``metrics_name``).
        cpu_sampler: ``sample(replicas, now_s) -> {replica_id: millicores}`` (default: a
            :class:`~pytest_lagscale.platform.cpu.CpuSampler` of the replicas' processes).
        external_scalers: the reader of ``type: external`` triggers' scalers (default: an
            :class:`~pytest_lagscale.platform.external.ExternalScalerReader` without a run-owned
            scaler, made when a policy first has such a trigger); closed by :meth:`stop`.
        pod_metrics: ``read(metric_name, replicas) -> PodMetricsReading`` (a
            :class:`~pytest_lagscale.platform.pod_metrics.PrometheusPodMetrics`), read only for a
            policy with a Pods metric; None: such a policy sees no values (no change).
        value_triggers: ``read(triggers) -> {trigger_index: ValueReading}`` (a
            :class:`~pytest_lagscale.platform.value_triggers.ValueTriggerReader`), read for a
            policy with ``prometheus``, ``aws-cloudwatch`` or ``metrics-api`` triggers; None:
            such triggers read as errors.
        total_lag_source: a :class:`~pytest_lagscale.sources.base.TotalLagSource` without
            offsets per partition (``--lag-source`` prometheus, cloudwatch, confluent): a policy
            that ``reads_total_lag`` (lag-per-slot) decides on its ``total_lag()`` instead of
            ``lag_source``'s offsets. None: every policy reads ``lag_source``.

    Every step event and ``decision`` event of a step that read lag carries ``signal``: the
    source kind, the value in records, ``datapoint_utc`` and ``staleness_s`` (from
    :class:`~pytest_lagscale.sources.base.TotalLag`; the broker's offsets are dated at the read,
    0 s old), and per value trigger its ``datapoint_utc`` and ``staleness_s``.

    Attributes:
        decisions: every step applied so far, in order.
        last_offsets: offsets of the newest observation (``{partition: (committed, log_end)}``),
            None before the first one, when its read failed or the policy needs no lag.
        metrics_port: the ``/metrics`` port after :meth:`start` (None before, or without).
    """

    def __init__(self, policy: ScalingPolicy, deployment: ScaledDeployment,
                 lag_source: LagSource | None, event_log_path: str | Path, *,
                 clock: Clock | None = None, cpu_request_millicores: int | None = None,
                 name: str | None = None, cpu_sampler: Any = None, external_scalers: Any = None,
                 pod_metrics: Any = None, value_triggers: Any = None, total_lag_source: Any = None):
        self.policy = policy
        self.deployment = deployment
        self.lag_source = lag_source
        self.clock = clock or RealClock()
        self.events = EventLog(event_log_path, source="controller", clock=self.clock)
        name = name or policy.metrics_name
        self.metrics = ControllerMetrics(name, f"keda-hpa-{name}")
        if hasattr(deployment, "ready_replicas"):
            self.metrics.read_ready(getattr(deployment, "name", name),
                                    lambda: deployment.ready_replicas)
        self.cpu_request_millicores = cpu_request_millicores
        self._cpu = (cpu_sampler or CpuSampler()) if cpu_request_millicores else None
        self.external_scalers = external_scalers
        self.pod_metrics = pod_metrics
        self.value_triggers = value_triggers
        self.total_lag_source = total_lag_source
        self._signal: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self.metrics_port: int | None = None
        self.decisions: list[PolicyStep] = []
        self.last_offsets: dict[int, tuple[int, int | None]] | None = None

    @property
    def controller(self) -> ScalingPolicy:
        """The policy (the old name of :attr:`policy`)."""
        return self.policy

    def has_decided(self) -> bool:
        """A step that sets the desired replica count (the HPA sync) has run."""
        return any(step.sets_desired_replicas for step in list(self.decisions))

    def set_policy(self, policy: ScalingPolicy, now_s: float) -> None:
        """Replace the policy (fresh history, its schedule starting at the next step); writes a
        ``policy_switched`` event.

        Args:
            policy: the new policy, not yet used.
            now_s: the switch time in seconds on the autoscaler's clock.
        """
        with self._lock:
            previous, self.policy = self.policy, policy
            self.events.emit("policy_switched", now_s=now_s, from_policy=previous.name,
                             from_object=previous.metrics_name, to_policy=policy.name,
                             to_object=policy.metrics_name, min_replicas=policy.min_replicas,
                             max_replicas=policy.max_replicas,
                             lag_threshold_records=policy.lag_threshold_records)

    # -- one tick ------------------------------------------------------------------------
    def step(self, now_s: float) -> list[PolicyStep]:
        """Observe, decide and apply if the policy has a step due at ``now_s``; returns the
        steps applied."""
        with self._lock:
            policy = self.policy
            if not policy.due(now_s):
                return []
            decision = policy.decide(self._observe(now_s, policy), now_s)
            for step in decision.steps:
                self._apply(step)
            return list(decision.steps)

    def _observe(self, now_s: float, policy: ScalingPolicy) -> Observation:
        offsets, total_lag, self._signal = None, None, None
        if policy.needs_lag and self.total_lag_source is not None and getattr(policy, "reads_total_lag", False):
            total_lag = self._read_total_lag()
        elif policy.needs_lag and self.lag_source is not None:
            try:
                offsets = self.lag_source.read()
            except Exception as exc:  # BrokerError, transport: a trigger error, as in KEDA
                self.events.emit("lag_read_failed", error=str(exc))
            else:
                self._signal = broker_signal(offsets, utc_now())
        cpu_pods = None
        if self._cpu is not None and self.cpu_request_millicores:
            # Sampled for every policy (what the metrics server would report), so a lag policy's
            # run records its replicas' CPU utilization too; only a CPU policy decides on it.
            replicas = self.deployment.replicas()
            usage = self._cpu.sample(replicas, now_s)
            if usage:
                self.events.emit("replica_cpu", request_millicores=self.cpu_request_millicores,
                                 millicores={k: round(v, 1) for k, v in usage.items()})
            if policy.needs_cpu:
                cpu_pods = tuple(PodCpu(int(usage[r.replica_id]) if r.replica_id in usage
                                        else None, self.cpu_request_millicores, r.ready)
                                 for r in replicas)
        self.last_offsets = offsets
        return Observation(current_replicas=self.deployment.desired_replicas, offsets=offsets,
                           status_replicas=self.deployment.current_replicas,
                           ready_replicas=self.deployment.ready_replicas, cpu_pods=cpu_pods,
                           external=self._read_external(policy),
                           pod_metrics=self._pod_metrics(policy),
                           values=self._read_values(policy), total_lag=total_lag)

    def _read_total_lag(self) -> Any:
        """The total-lag source's reading (None and a ``lag_read_failed`` event on failure)."""
        try:
            reading = self.total_lag_source.total_lag()
        except Exception as exc:  # LagSourceError, transport: the policy holds, as without lag
            self.events.emit("lag_read_failed", source=self.total_lag_source.name, error=str(exc))
            return None
        self._signal = total_lag_signal(reading)
        return reading

    def _read_values(self, policy: ScalingPolicy) -> dict[int, ValueReading] | None:
        """Each value trigger's answer (None: the policy has no such trigger)."""
        triggers = getattr(policy, "value_triggers", ())
        if not triggers:
            return None
        if self.value_triggers is None:
            return {t.trigger_index: ValueReading(error="this run reads no value triggers") for t in triggers}
        readings = self.value_triggers.read(triggers)
        signal = self._signal or {}
        signal["triggers"] = {}
        for index, reading in readings.items():
            if reading.error is not None:
                self.events.emit("value_read_failed", trigger_index=index, error=reading.error)
            signal["triggers"][str(index)] = {"type": next(t.type_name for t in triggers if t.trigger_index == index),
                                              "datapoint_utc": reading.datapoint_utc,
                                              "staleness_s": reading.staleness_s}
        self._signal = signal
        return readings

    def _read_external(self, policy: ScalingPolicy) -> dict[int, ExternalMetric] | None:
        """Each external trigger's scaler over gRPC (None: the policy has no such trigger)."""
        calls = getattr(policy, "external_scalers", ())
        if not calls:
            return None
        if self.external_scalers is None:
            from .external import ExternalScalerReader

            self.external_scalers = ExternalScalerReader()
        readings = self.external_scalers.read(calls)
        for index, reading in readings.items():
            if reading.error is not None:
                self.events.emit("external_read_failed", trigger_index=index, error=reading.error)
        return readings

    def _pod_metrics(self, policy: ScalingPolicy) -> tuple[PodMetric, ...] | None:
        """The policy's Pods metric per live replica (None: no such metric, or the read failed)."""
        name = getattr(policy, "pod_metric_name", None)
        if not name or self.pod_metrics is None:
            return None
        try:
            reading = self.pod_metrics.read(name, self.deployment.replicas())
        except Exception as exc:  # LagscaleError, transport: no value this sync, as a failed adapter
            self.events.emit("pod_metrics_failed", metric=name, error=str(exc))
            return None
        self.events.emit("pod_metrics", metric=name, values=reading.values)
        return reading.pods

    def _apply(self, step: PolicyStep) -> PolicyStep:
        self.decisions.append(step)
        self.metrics.record(step)
        record = step_record(step)
        event = record.pop("event")
        signal = {"signal": self._signal} if self._signal else {}
        self.events.emit(event, **record, ready_replicas=self.deployment.ready_replicas, **signal)
        if step.replicas_after != step.replicas_before:
            # The analysis's one name for "the controller changed the scale" (reaction time's
            # detection ends at the first one with desired_replicas > current_replicas).
            self.events.emit("decision", via=event, desired_replicas=step.replicas_after,
                             current_replicas=step.replicas_before, **signal)
            self.deployment.scale(step.replicas_after)
        return step

    # -- background loop -----------------------------------------------------------------
    def start(self, tick_s: float = 0.25, metrics_port: int | None = 0) -> "LocalAutoscaler":
        """Serve metrics (``metrics_port`` 0 = ephemeral, None = none) and step every
        ``tick_s`` seconds in a daemon thread; returns self."""
        if metrics_port is not None and self._server is None:
            self._server, _ = start_http_server(metrics_port, addr="127.0.0.1",
                                                registry=self.metrics.registry)
            self.metrics_port = self._server.server_port
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, args=(tick_s,),
                                            name="lagscale-autoscaler", daemon=True)
            self._thread.start()
        return self

    def _loop(self, tick_s: float) -> None:
        while not self._stop.is_set():
            try:
                self.step(self.clock.now())
            except Exception as exc:  # keep scaling; the failure is in the event log
                self.events.emit("controller_error", error=f"{type(exc).__name__}: {exc}")
            self._stop.wait(tick_s)

    def stop(self) -> None:
        """Stop the loop and the metrics server. Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self.external_scalers is not None:
            self.external_scalers.close()
        self.events.close()


def total_lag_signal(reading: TotalLag) -> dict[str, Any]:
    """The ``signal`` of a step that read ``reading``: source kind, ``lag_records``,
    ``datapoint_utc`` (UTC ISO-8601, None without a datapoint) and ``staleness_s``."""
    stamp = reading.datapoint_utc
    staleness = reading.staleness_s
    return {"source": reading.source, "lag_records": reading.lag_records,
            "datapoint_utc": None if stamp is None else stamp.isoformat(),
            "staleness_s": None if staleness is None else round(staleness, 3)}


def broker_signal(offsets: Any, read_utc: datetime) -> dict[str, Any]:
    """The ``signal`` of a step that read the broker's offsets at ``read_utc``: their total
    (:func:`~pytest_lagscale.sources.base.offsets_total_records`), dated at the read, 0 s old."""
    return total_lag_signal(TotalLag(float(offsets_total_records(offsets)), read_utc, read_utc, "broker"))
