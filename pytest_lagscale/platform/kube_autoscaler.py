"""The real KEDA + HPA of a ``--platform kubernetes`` run: the ScaledObject applied, the HPA observed.

:class:`KubeAutoscaler` is what the autoscale phase starts on the kubernetes platform instead of
the embedded controller: it applies the ScaledObject (its kafka trigger pointed at the run's
broker, group and topic; the plan's lagThreshold), then watches the HPA KEDA created
(``keda-hpa-<name>``): ``hpa_created`` with its spec, each change of its status an
``hpa_status`` event and, when ``status.desiredReplicas`` changes, a ``decision`` event (the
analysis's one name for "the controller changed the scale"). Every external-metrics read the HPA
makes passes the control plane's metrics tap (:mod:`pytest_lagscale.kube.metrics_tap`): each is a
``metric_read`` event, and its value the ``keda_scaler_metrics_value`` series (on a
``--kubeconfig`` cluster, which has no tap, that series is the value the HPA reports in its
``status.currentMetrics``, also in the ``hpa_status`` events);
``kube_horizontalpodautoscaler_status_desired_replicas`` is the real HPA's
``status.desiredReplicas`` and ``..._current_replicas`` the Deployment's ``spec.replicas`` the HPA
set (its ``status.currentReplicas`` reports that only at the next sync). The
series carry the embedded controller's names, so the timeline is drawn the same way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..contract.clock import Clock, RealClock
from ..contract.errors import ConfigError
from ..contract.eventlog import EventLog
from ..lifecycle import StartStop

POLL_S = 0.2


def scaled_object(source: str | Path, *, bootstrap: str, group: str, topic: str,
                  lag_threshold: int | None, target: str | None = None) -> dict:
    """The ScaledObject manifest with its kafka triggers pointed at the run's broker, group
    and topic (and the plan's lagThreshold when one is given), and its
    ``spec.scaleTargetRef.name`` at ``target``, the run's Deployment (a committed ScaledObject
    names ``lagscale-consumer``; a Deployment given with ``--deployment`` has its own name)."""
    import yaml

    doc = yaml.safe_load(Path(source).read_text())
    doc["metadata"].pop("namespace", None)
    if target is not None:
        doc["spec"].setdefault("scaleTargetRef", {})["name"] = target
    for trigger in doc["spec"]["triggers"]:
        if trigger.get("type") == "kafka":
            meta = trigger.setdefault("metadata", {})
            meta.update(bootstrapServers=bootstrap, consumerGroup=group, topic=topic)
            if lag_threshold is not None:
                meta["lagThreshold"] = str(lag_threshold)
    return doc


def reported_metric(status: Any) -> tuple[str, float] | None:
    """``(metric name, value)`` of the first External metric in an HPA status's
    ``currentMetrics`` (``averageValue``, else ``value``; a Kubernetes quantity), or None.

    Example:
        >>> from types import SimpleNamespace as N
        >>> ext = N(metric=N(name="s0-kafka-events"), current=N(average_value="2500m", value=None))
        >>> reported_metric(N(current_metrics=[N(type="External", external=ext)]))
        ('s0-kafka-events', 2.5)
    """
    from kubernetes.utils import parse_quantity

    for metric in getattr(status, "current_metrics", None) or []:
        ext = getattr(metric, "external", None)
        if getattr(metric, "type", None) != "External" or ext is None or ext.current is None:
            continue
        quantity = ext.current.average_value or ext.current.value
        if quantity is not None:
            return str(ext.metric.name), float(parse_quantity(quantity))
    return None


@dataclass(frozen=True)
class HpaObservation:
    """One change of the real HPA's status (``t_s`` on the run's clock)."""

    t_s: float
    desired_replicas: int
    current_replicas: int
    last_scale_time: str | None


class KubeAutoscaler(StartStop):
    """The real KEDA + HPA for one run: applies the ScaledObject and observes the HPA.

    Offers what the runner and the scheduled actions use of the embedded autoscaler:
    ``has_decided()``, ``metrics_port`` (its Prometheus series), ``controller.needs_lag``
    (False: the progress line reads the lag source), ``last_offsets`` (None) and
    ``set_policy`` (refused: a switch of policy is an embedded-controller action).

    ``first_decision_within_s`` (30 s): KEDA reconciles the ScaledObject into an HPA, whose
    first sync the HPA controller queues at once.
    """

    first_decision_within_s = 30.0

    def __init__(self, platform: Any, plan: Any, events_path: Path, *,
                 bootstrap: str, group: str, topic: str, clock: Clock | None = None):
        from .autoscaler import ControllerMetrics

        self.platform, self.plan = platform, plan
        self.clock = clock or RealClock()
        self.events = EventLog(events_path, source="controller", clock=self.clock)
        self.body = scaled_object(plan.policy_config.source, bootstrap=bootstrap, group=group,
                                  topic=topic, lag_threshold=plan.lag_threshold,
                                  target=getattr(platform, "name", None) or None)
        self.name = self.body["metadata"]["name"]
        self.hpa_name = f"keda-hpa-{self.name}"
        self.metrics = ControllerMetrics(self.name, self.hpa_name)
        self.metrics.read_ready(str(getattr(platform, "name", "") or self.name),
                                lambda: platform.ready_replicas)
        self.controller = SimpleNamespace(needs_lag=False)
        self.last_offsets = None
        self.metrics_port: int | None = None
        self.series: list[HpaObservation] = []
        self.hpa_object: dict | None = None
        self._server: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "KubeAutoscaler":
        from kubernetes import client
        from prometheus_client import start_http_server

        tap = getattr(self.platform.control_plane, "tap", None)
        if tap is not None:
            tap.on_read = self._on_read
        client.CustomObjectsApi(self.platform.api).create_namespaced_custom_object(
            "keda.sh", "v1alpha1", self.platform.namespace, "scaledobjects", self.body)
        self.events.emit("scaled_object_applied", name=self.name,
                         scale_target=self.body["spec"]["scaleTargetRef"]["name"],
                         triggers=self.body["spec"]["triggers"])
        self._server, _ = start_http_server(0, addr="127.0.0.1", registry=self.metrics.registry)
        self.metrics_port = self._server.server_port
        self._thread = threading.Thread(target=self._loop, name="lagscale-hpa-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        tap = getattr(self.platform.control_plane, "tap", None)
        if tap is not None:
            tap.on_read = None
        self.events.close()

    def has_decided(self) -> bool:
        """The HPA exists and has synced once (``status.desiredReplicas`` set)."""
        return bool(self.series)

    def set_policy(self, policy: Any) -> None:
        raise ConfigError("switch_policy: not available on --platform kubernetes (the real "
                          "KEDA runs the applied ScaledObject); use --platform local")

    def _on_read(self, read: Any) -> None:
        self.events.emit("metric_read", read_t_s=read.t_s, metric=read.metric_name,
                         label_selector=read.label_selector, total=read.total,
                         values=list(read.values), status=read.status, error=read.error)
        if read.total is not None:
            self.metrics.metric_value.labels("default", self.name, "kafkaScaler",
                                             read.metric_name, "0").set(read.total)

    def _loop(self) -> None:
        from kubernetes import client

        api = client.AutoscalingV2Api(self.platform.api)
        while not self._stop.wait(POLL_S):
            try:
                hpa = api.read_namespaced_horizontal_pod_autoscaler(self.hpa_name,
                                                                    self.platform.namespace)
            except client.exceptions.ApiException as exc:
                if exc.status != 404:  # 404: KEDA has not created it yet
                    self.events.emit("controller_error", error=f"HPA read: {exc.status} {exc.reason}")
                continue
            except Exception as exc:
                self.events.emit("controller_error", error=f"{type(exc).__name__}: {exc}")
                continue
            if self.hpa_object is None:
                self.hpa_object = self.platform.api.sanitize_for_serialization(hpa)
                self.events.emit("hpa_created", name=self.hpa_name,
                                 spec=self.hpa_object.get("spec"))
            self._observe(hpa)
            # The scale the HPA set, as soon as it set it: its status.currentReplicas says so only
            # at its next sync (a sync period later), which would leave a final scale-down out of
            # a timeline recorded just after the settle; the embedded controller's series is the
            # scale after each decision too.
            self.metrics.current.labels("default", self.hpa_name).set(
                self.platform.desired_replicas)

    def _observe(self, hpa: Any) -> None:
        status = hpa.status
        if status is None or status.desired_replicas is None:
            return
        last = status.last_scale_time.isoformat() if status.last_scale_time else None
        obs = HpaObservation(self.clock.now(), int(status.desired_replicas),
                             int(status.current_replicas or 0), last)
        reported = None
        if getattr(self.platform.control_plane, "tap", None) is None:
            reported = reported_metric(status)
            if reported is not None:
                self.metrics.metric_value.labels("default", self.name, "kafkaScaler",
                                                 reported[0], "0").set(reported[1])
        previous = self.series[-1] if self.series else None
        self.metrics.desired.labels("default", self.hpa_name).set(obs.desired_replicas)
        if previous is not None and (previous.desired_replicas, previous.current_replicas,
                                     previous.last_scale_time) == (
                obs.desired_replicas, obs.current_replicas, obs.last_scale_time):
            return
        self.series.append(obs)
        self.events.emit("hpa_status", desired_replicas=obs.desired_replicas,
                         current_replicas=obs.current_replicas, last_scale_time=last,
                         **({} if reported is None else {"metric": reported[0],
                                                         "metric_value": reported[1]}))
        before = previous.desired_replicas if previous is not None else obs.current_replicas
        if obs.desired_replicas != before:
            self.events.emit("decision", via="hpa_sync", desired_replicas=obs.desired_replicas,
                             current_replicas=before)
