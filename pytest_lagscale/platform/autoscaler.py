"""The local stand-in for the KEDA operator and the HPA controller: a thin I/O loop.

:class:`LocalAutoscaler` owns time and the world; the decisions are
:class:`pytest_lagscale.control.controller.ScalingController`'s. Each :meth:`~LocalAutoscaler.step`
runs, in order, the steps that are due:

1. ``observe``: read ``{partition: (committed, log_end)}`` from the lag source (a failed read is
   a trigger error, as in KEDA), replica counts and, for CPU triggers, per-replica CPU;
2. ``keda_poll`` every ``pollingInterval`` (first one immediately): the activation step, which
   alone moves 0 <-> N;
3. ``hpa_sync`` every HPA sync period (``lagscale.dev/hpa-sync-period-seconds``, default 15 s):
   metrics -> proposal -> ``HorizontalPodAutoscaler.decide``;
4. ``apply``: set the Deployment's replicas when a step changed them.

Every decision is appended to ``controller.events.jsonl`` with its inputs and outputs and exported
as Prometheus gauges named like KEDA's and kube-state-metrics' series:
``keda_scaler_metrics_value``, ``keda_scaler_active``, ``keda_scaler_errors_total``,
``kube_horizontalpodautoscaler_status_desired_replicas`` and
``kube_horizontalpodautoscaler_status_current_replicas``.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from ..clock import Clock, RealClock
from ..control.controller import Observation, PollDecision, ScalingController, SyncDecision
from ..control.hpa import PodCpu
from ..eventlog import EventLog
from ..lifecycle import StartStop
from .local import CpuSampler, LocalDeployment


class LagSource(Protocol):
    """Anything that returns ``{partition: (committed, log_end)}`` (e.g. ``KafkaLagSource``)."""

    def read(self) -> dict[int, tuple[int, int | None]]: ...


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

    def record(self, decision: PollDecision | SyncDecision) -> None:
        """Update the series from one decision."""
        for t in decision.triggers:
            labels = ("default", self.scaled_object, f"{t.type}Scaler", t.metric_name,
                      str(t.index))
            if t.metric_value is not None:
                self.metric_value.labels(*labels).set(t.metric_value)
            self.active.labels(*labels).set(1 if t.active else 0)
            if t.error is not None:
                self.errors.labels(*labels).inc()
        if isinstance(decision, SyncDecision):
            self.desired.labels("default", self.hpa_name).set(decision.replicas_after)
        self.current.labels("default", self.hpa_name).set(decision.replicas_after)


class LocalAutoscaler(StartStop):
    """Runs a :class:`ScalingController` against a :class:`LocalDeployment` on a clock.

    Args:
        controller: the pure decision maker (built from the ScaledObject or CPU HPA YAML).
        deployment: the replicas it scales.
        lag_source: offsets reader; may be None for a CPU-only controller.
        event_log_path: the controller's JSONL event log.
        clock: time source (``RealClock`` in runs, ``FakeClock`` in tests).
        cpu_request_millicores: per-replica CPU request for CPU triggers.
        name: ScaledObject / HPA name used in metric labels.
    """

    def __init__(self, controller: ScalingController, deployment: LocalDeployment,
                 lag_source: LagSource | None, event_log_path: str | Path, *,
                 clock: Clock | None = None, cpu_request_millicores: int | None = None,
                 name: str = "lagscale-consumer"):
        self.controller = controller
        self.deployment = deployment
        self.lag_source = lag_source
        self.clock = clock or RealClock()
        self.events = EventLog(event_log_path, source="controller", clock=self.clock)
        self.metrics = ControllerMetrics(name, f"keda-hpa-{name}")
        self.cpu_request_millicores = cpu_request_millicores
        self._cpu = CpuSampler() if cpu_request_millicores else None
        self._next_poll_s: float | None = None
        self._next_sync_s: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self.metrics_port: int | None = None
        self.decisions: list[PollDecision | SyncDecision] = []
        #: Offsets of the newest observation (``{partition: (committed, log_end)}``), None
        #: before the first one or when its read failed.
        self.last_offsets: dict[int, tuple[int, int | None]] | None = None

    # -- one tick ------------------------------------------------------------------------
    def step(self, now_s: float) -> list[PollDecision | SyncDecision]:
        """Run the steps due at ``now_s`` (poll, sync) and apply their results."""
        made: list[PollDecision | SyncDecision] = []
        poll_every = self.controller.polling_interval_s
        if poll_every is not None and (self._next_poll_s is None or now_s >= self._next_poll_s):
            self._next_poll_s = now_s + poll_every
            made.append(self._apply(self.controller.poll(now_s, self._observe(now_s))))
        if self._next_sync_s is None:
            self._next_sync_s = now_s + self.controller.sync_period_s
        elif now_s >= self._next_sync_s:
            self._next_sync_s = now_s + self.controller.sync_period_s
            made.append(self._apply(self.controller.sync(now_s, self._observe(now_s))))
        return made

    def _observe(self, now_s: float) -> Observation:
        offsets = None
        error = None
        if self.lag_source is not None:
            try:
                offsets = self.lag_source.read()
            except Exception as exc:  # BrokerError, transport: a trigger error, as in KEDA
                error = str(exc)
        cpu_pods = None
        if self._cpu is not None and self.cpu_request_millicores:
            usage = self._cpu.sample(self.deployment.replicas(), now_s)
            cpu_pods = tuple(PodCpu(int(usage[r.replica_id]) if r.replica_id in usage else None,
                                    self.cpu_request_millicores, r.ready)
                             for r in self.deployment.replicas())
        if error is not None:
            self.events.emit("lag_read_failed", error=error)
        self.last_offsets = offsets
        return Observation(current_replicas=self.deployment.desired_replicas, offsets=offsets,
                           status_replicas=self.deployment.current_replicas,
                           ready_replicas=self.deployment.ready_replicas, cpu_pods=cpu_pods)

    def _apply(self, decision: PollDecision | SyncDecision) -> PollDecision | SyncDecision:
        self.decisions.append(decision)
        self.metrics.record(decision)
        record = dataclasses.asdict(decision)
        event = record.pop("event")
        self.events.emit(event, **record, ready_replicas=self.deployment.ready_replicas)
        if decision.replicas_after != decision.replicas_before:
            # The analysis's one name for "the controller changed the scale" (reaction time's
            # detection ends at the first one with desired_replicas > current_replicas).
            self.events.emit("decision", via=event, desired_replicas=decision.replicas_after,
                             current_replicas=decision.replicas_before)
            self.deployment.scale(decision.replicas_after)
        return decision

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
        self.events.close()
