"""``--platform kubernetes``: the real KEDA operator and Kubernetes HPA scale a real Deployment.

:class:`KubernetesDeployment` is the :class:`~.base.Platform` of a run on Kubernetes. It starts
the local control plane (:class:`~pytest_lagscale.kube.control_plane.ControlPlane`: etcd,
kube-apiserver, kube-controller-manager at the ScaledObject's ``lagscale.dev/hpa-*`` timing,
KEDA; built by ``scripts/bootstrap --with-kube``) in ``<run_dir>/kube/``, applies the committed
consumer Deployment with the run's command line, and has its pods run by the kubelet node
(``--node kubelet``: :class:`~pytest_lagscale.kube.kubelet_node.KubeletNode`) or the node agent
(``--node process``). ``scale(n)`` patches ``spec.replicas`` (the deploy phase only); the
replica counts are the Deployment's, read every 0.2 s (``deployment_status`` events).

With ``--kubeconfig PATH`` (the run's ``settings.kubeconfig``) no control plane is started:
the run goes to the cluster of that kubeconfig (``lagscale kube up`` keeps one running), in a
namespace of its own (``lagscale-<run id>``), after :func:`~pytest_lagscale.kube.cluster.preflight`
checked KEDA and that no kubelet would take the pods; on every exit path the run's objects are
deleted and the cluster keeps running. No metrics tap sits in front of that cluster's KEDA
adapter, so the HPA's reads are its ``status.currentMetrics`` and the shadow's verdict is not
computed. With ``--replica-image REF`` too, the cluster's own kubelets run the pods (node
``cluster``; docs/kubernetes.md "Clusters with kubelets"): the image ``REF``, the consumer
measured from the broker, metrics through the apiserver's pod proxy.

The autoscale phase's part on this platform is :class:`~.kube_autoscaler.KubeAutoscaler`
(the ScaledObject applied, the real HPA observed). :meth:`KubernetesDeployment.run_info` adds
the versions, the control plane's start and the shadow HPA's verdict to the benchmark JSON.

Only ScaledObjects run here (KEDA makes their HPA); the plain-HPA manifests (``hpa-cpu``,
``hpa-pods-lag``) would need metrics-server or prometheus-adapter, and the harness's own
policies (lag-per-slot, persistent-lag) have no KEDA counterpart: the plan refuses them.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.clock import Clock, RealClock
from ..contract.rundir import REPLICA_EVENT_LOG, RunDir
from ..contract.errors import ConfigError, ReplicaError
from ..contract.eventlog import EventLog
from ..lifecycle import StartStop
from ..kube.kubelet_node import kubelet_node_problems
from ..kube.policy import NAMESPACE, check_policy, hpa_timing

POLL_S = 0.2
#: Seconds the Deployment may stay after its pods went (the foreground deletion's finalizer is
#: removed by the garbage collector once the ReplicaSets are gone).
DEPLOYMENT_GONE_S = 15.0
#: The kubelet's pod start histograms the run records (kubernetes v1.36.3
#: pkg/kubelet/metrics/metrics.go). The SLI one skips pods with a hostPath volume ("stateful"
#: in pkg/kubelet/util/pod_startup_latency_tracker.go), as the run's replicas have: it stays
#: empty, and the total (creation -> running observed by watch, image pulls included: none
#: here) is the one with samples.
POD_START_METRICS = ("kubelet_pod_start_sli_duration_seconds",
                     "kubelet_pod_start_total_duration_seconds",
                     "kubelet_pod_start_duration_seconds")


@dataclass(frozen=True)
class DeploymentStatus:
    """One observation of the Deployment (``t_s`` on the run's clock)."""

    t_s: float
    spec_replicas: int
    status_replicas: int
    ready_replicas: int


def deployment_object(manifest: str | Path, argv: tuple[str, ...], env: dict[str, str],
                      python: str | None = None, *, kind: str = "replica") -> dict:
    """The committed Deployment with the run's replica command line, at 0 replicas.

    The consumer container's ``command`` becomes ``argv`` (this interpreter written back as
    ``python``) and its ``args`` empty; the template's env is merged over the manifest's.
    ``kind`` ``command``: the manifest's only container is the consumer (any command:
    docs/byo-consumer.md); ``argv`` is its command and args with the plan's overrides.

    Raises:
        ConfigError: the manifest has no container running ``spark_consumer`` (kind
            ``replica``).
    """
    import yaml

    doc = yaml.safe_load(Path(manifest).read_text())
    containers = doc["spec"]["template"]["spec"]["containers"]
    consumer = next((c for c in containers
                     if kind == "command"
                     or "spark_consumer" in " ".join(c.get("command", []) + c.get("args", []))),
                    None)
    if consumer is None:
        raise ConfigError(f"{manifest}: spec.template.spec.containers has no container running "
                          "'python -m spark_consumer'")
    interpreter = python or sys.executable
    consumer["command"] = ["python" if a == interpreter else a for a in argv]
    consumer["args"] = []
    merged = {e["name"]: e for e in consumer.get("env", [])}
    merged.update({k: {"name": k, "value": v} for k, v in env.items()})
    consumer["env"] = list(merged.values())
    doc["spec"]["replicas"] = 0
    doc["metadata"].pop("namespace", None)
    return doc


class KubernetesDeployment(StartStop):
    """The consumer Deployment on the local control plane, its pods run by the node agent.

    Args:
        template: the replica template (:func:`~.local.template_from_deployment`; its
            ``manifest`` is the committed Deployment applied).
        run_dir: the run directory (``kube/`` holds the control plane).
        graceful: False: a deleted pod's replica is SIGKILLed at once.
        clock: time source.

    :meth:`configure` (called by the runner before :meth:`start`) gives the plan: the HPA
    timing comes from its ScaledObject.

    Raises:
        ConfigError: no manifest in the template; a policy KEDA cannot run (:func:`check_policy`).
        LagscaleError: the control plane's binaries are not built (names
            ``scripts/bootstrap --with-kube``), or a part did not start.
        ReplicaError: replicas not ready in time (:meth:`wait_ready`).
    """

    def __init__(self, template: Any, run_dir: RunDir | str | Path, *, graceful: bool = True,
                 clock: Clock | None = None):
        if not getattr(template, "manifest", None):
            raise ConfigError("--platform kubernetes: the replica template has no Deployment "
                              "manifest to apply")
        self.template = template
        self.layout = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
        self.graceful = graceful
        self.clock = clock or RealClock()
        self.events = EventLog(self.layout.source_events("platform"), source="platform",
                               clock=self.clock)
        self.namespace = NAMESPACE
        self.kubeconfig: Path | None = None
        self.cluster: Any = None
        self.cleanup_errors: list[str] = []
        self._cleaned = False
        self.name = ""
        self.timing: Any = None
        self.control_plane: Any = None
        self.api: Any = None
        self.agent: Any = None
        self.image: Any = None
        self.series: list[DeploymentStatus] = []
        self._status = DeploymentStatus(0.0, 0, 0, 0)
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._group_members: Any = None
        self.node_kind = "process"
        self.node: Any = None
        self.observer: Any = None
        self.node_info: dict[str, Any] = {}
        self.max_replicas = 1
        self.replica_image: str | None = None
        self.metrics_port: int | None = None
        self.relay: Any = None

    def use_group_membership(self, members: Any) -> None:
        """A command consumer without a readinessProbe: its pods are ready by group membership
        (:meth:`~pytest_lagscale.kube.node_agent.NodeAgent.use_group_membership`)."""
        self._group_members = members
        if self.agent is not None:
            self.agent.use_group_membership(members)

    # -- set-up ----------------------------------------------------------------------------
    @staticmethod
    def check_plan(plan: Any) -> None:
        """Refuse, before anything starts, a plan this platform cannot run.

        Raises:
            ConfigError: a policy KEDA cannot run (:func:`check_policy`); without
                ``--kubeconfig``, the control plane's binaries are not built (names
                ``scripts/bootstrap --with-kube``); with it, what
                :func:`~pytest_lagscale.kube.cluster.preflight` finds missing.
        """
        from ..kube import build

        check_policy(plan.policy_config)
        kubeconfig = getattr(plan.settings, "kubeconfig", None)
        if kubeconfig:
            from kubernetes import config

            from ..kube.cluster import preflight, run_namespace
            from ..process import run_id

            image = getattr(plan.settings, "replica_image", None)
            preflight(config.new_client_from_config(config_file=str(kubeconfig)),
                      replica_image=image,
                      bootstrap=getattr(plan.settings, "kafka_bootstrap", None),
                      probe_namespace=f"{run_namespace(run_id())}-probe" if image else None)
            return
        reason = build.missing_reason()
        if reason is not None:
            raise ConfigError(f"--platform kubernetes: {reason}")
        if node_kind(plan) == "kubelet":
            _check_kubelet_node(plan)

    def configure(self, plan: Any) -> None:
        """Take the plan's policy (its HPA timing; refused if KEDA cannot run it) and its
        ``--kubeconfig`` (the run then gets a namespace of its own on that cluster)."""
        from ..kube.cluster import run_namespace
        from ..process import run_id

        check_policy(plan.policy_config)
        self.timing = hpa_timing(plan.policy_config)
        kubeconfig = getattr(plan.settings, "kubeconfig", None)
        self.kubeconfig = Path(kubeconfig) if kubeconfig else None
        self.node_kind = node_kind(plan)
        self.max_replicas = int(getattr(plan, "replica_range", (1, 1))[1])
        if self.kubeconfig is not None:
            self.namespace = run_namespace(run_id())
        self.replica_image = getattr(plan.settings, "replica_image", None)
        deployment = getattr(plan, "deployment", None)
        readiness = getattr(deployment, "readiness", None)
        command = getattr(deployment, "command", None)
        self.metrics_port = (getattr(readiness, "port", None)
                             or getattr(command, "port", None))

    def start(self) -> "KubernetesDeployment":
        from kubernetes import config

        from ..kube.control_plane import keda_control_plane
        from ..kube.metrics_tap import MetricsTap
        from ..kube.node_agent import NodeAgent
        from .image import prepare_template_image

        if self.api is not None:
            return self
        if self.kubeconfig is not None:
            from ..kube.cluster import create_namespace, preflight
            from ..process import run_id

            self.api = config.new_client_from_config(config_file=str(self.kubeconfig))
            self.cluster = preflight(self.api, replica_image=self.replica_image)
            create_namespace(self.api, self.namespace, run_id())
            self.events.emit("cluster_ready", server=self.cluster.server,
                             version=self.cluster.version, namespace=self.namespace)
        else:
            from ..kube.commands import HpaTiming

            self.control_plane = keda_control_plane(
                self.layout.kube_dir, self.timing or HpaTiming(), self.namespace,
                clock=self.clock,
                tap=lambda layout: MetricsTap(layout.pki, layout.ports.keda_adapter,
                                              clock=self.clock))
            self.control_plane.start()
            self.events.emit("control_plane_ready", ready_s=self.control_plane.ready_s,
                             versions=self.control_plane.versions)
            self.api = config.new_client_from_config(
                config_file=self.control_plane.layout.kubeconfig("admin"))
        image_env: dict[str, str] = {}
        if self.node_kind == "process":  # the kubelet node's replicas run the replica image
            self.image, image_env = prepare_template_image(self.template,
                                                           self.layout.image_build_log)
            self.events.emit("image_prepared", engine=self.image.engine,
                             image=getattr(self.template, "image", None),
                             cds_archive=self.image.cds_archive, duration_s=self.image.duration_s)
        body = deployment_object(self.template.manifest, self.template.argv,
                                 dict(self.template.env),
                                 kind=getattr(self.template, "kind", "replica"))
        if self.node_kind == "kubelet":
            body = self._start_kubelet_node(body)
        elif self.node_kind == "cluster":
            from ..kube.pod_proxy import PodProxyRelay
            from ..kube.pod_template import cluster_deployment

            body, notes = cluster_deployment(body, image=str(self.replica_image))
            self.relay = PodProxyRelay(self.api, self.namespace).start()
            self.node_info = {"image": self.replica_image, "rewrites": notes,
                              "nodes_ready": self.cluster.nodes_ready,
                              "metrics": f"through the apiserver's pod proxy (relay "
                                         f"{self.relay.address}, port {self.metrics_port})"}
        self.name = body["metadata"]["name"]
        selector = body["spec"]["selector"]["matchLabels"]
        from kubernetes import client

        client.AppsV1Api(self.api).create_namespaced_deployment(self.namespace, body)
        if self.node_kind in ("kubelet", "cluster"):
            from ..kube.pod_observer import PodObserver

            self.observer = PodObserver(
                self.api, self.namespace, selector, self.layout.replicas_dir, self.events,
                self.node.layout.socket if self.node is not None else None,
                metrics_port=self.metrics_port if self.node is None else None,
                clock=self.clock).start()
        else:
            self.agent = NodeAgent(self.api, self.namespace, selector, self.layout, self.events,
                                   clock=self.clock, graceful=self.graceful, image_env=image_env)
            if self._group_members is not None:
                self.agent.use_group_membership(self._group_members)
            self.agent.start()
        self._poller = threading.Thread(target=self._poll_loop, name="lagscale-deployment-poll",
                                        daemon=True)
        self._poller.start()
        return self

    def _start_kubelet_node(self, body: dict[str, Any]) -> dict[str, Any]:
        """Start the kubelet node (containerd, kube-scheduler, the kubelet), give its
        containerd the replica image, and return ``body`` as the node runs it
        (:func:`~pytest_lagscale.kube.pod_template.kubelet_deployment`)."""
        from ..kafka.embedded import free_port
        from ..kube.kubelet_node import KubeletNode
        from ..kube.pod_template import kubelet_deployment
        from ..process import run_id

        node = KubeletNode(self.control_plane, run_id(), free_port=free_port, clock=self.clock)
        image = node.start_with_image(self.layout.image_build_log)
        self.node, ref = node, image.ref
        body, notes = kubelet_deployment(body, image=ref, run_root=self.layout.root,
                                         replicas_dir=self.layout.replicas_dir,
                                         store=self.layout.store,
                                         event_log_name=REPLICA_EVENT_LOG,
                                         node_cpu_millicores=(os.cpu_count() or 1) * 1000,
                                         max_replicas=self.max_replicas)
        if not self.graceful:
            body["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 0
            notes.append("terminationGracePeriodSeconds 0 (--no-graceful; the kubelet still "
                         "sends SIGTERM and waits its minimum of 2 s before SIGKILL)")
        self.layout.replicas_dir.mkdir(parents=True, exist_ok=True)
        self.layout.store.mkdir(parents=True, exist_ok=True)
        self.node_info = {"image": ref, "archive": image.archive.name,
                          "image_build_s": image.build_s, "image_import_s": image.import_s,
                          "ready_s": dict(self.node.ready_s),
                          "node_ready_s": self.node.node_ready_s, "rewrites": notes}
        self.events.emit("kubelet_node_ready", **self.node_info)
        return body

    def watched_processes(self) -> list[tuple[str, Any]]:
        """``(name, process)`` of the control plane's processes (etcd, kube-apiserver,
        kube-controller-manager, the KEDA operator and adapter) and, with ``--node kubelet``,
        the node's (containerd, kube-scheduler, the kubelet), for the run's part watch; none on
        a ``--kubeconfig`` cluster."""
        parts = self.control_plane.processes() if self.control_plane is not None else []
        return parts + (self.node.processes() if self.node is not None else [])

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop the node agent (every replica within its grace period), then the control
        plane; on a ``--kubeconfig`` cluster delete the run's objects instead (failures are
        kept in ``cleanup_errors`` and the events). Idempotent."""
        from ..kube.cluster import delete_run_objects

        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
        if self.agent is not None:
            self.agent.stop(timeout_s)
        if self.node is not None:
            self._stop_kubelet_node(timeout_s)
        elif self.observer is not None and "pods" not in self.node_info:  # a cluster's kubelets
            self._delete_pods(timeout_s)
            self.node_info["pods"] = self.observer.pods()
        if self.relay is not None:
            self.node_info["relay"] = {"forwarded_total": self.relay.forwarded_total,
                                       "failed_total": self.relay.failed_total}
            self.relay.stop()
            self.relay = None
        if self.control_plane is not None:
            self.control_plane.stop()
        elif self.cluster is not None and not self._cleaned:
            self._cleaned = True
            self.cleanup_errors += delete_run_objects(self.api, self.namespace)
            self.events.emit("cluster_cleanup", namespace=self.namespace,
                             server=self.cluster.server, errors=self.cleanup_errors)
        self.events.close()

    def _stop_kubelet_node(self, timeout_s: float | None) -> None:
        """Delete the Deployment (its pods get the kubelet's SIGTERM and grace period), wait
        for the pods to go, read the kubelet's pod start SLI, stop the node."""
        from ..kube.kubelet_node import histogram

        node, self.node = self.node, None
        try:
            self.node_info["metrics"] = {
                name: histogram(node.metrics_text(), name)
                for name in POD_START_METRICS}
        except Exception as exc:  # recorded: the run's JSON says it is missing
            self.node_info["metrics"] = {"error": f"{type(exc).__name__}: {exc}"}
        self._delete_pods(timeout_s)
        self.node_info["pods"] = [] if self.observer is None else self.observer.pods()
        self.node_info["stop"] = node.stop()
        self.events.emit("kubelet_node_stopped", outcomes=self.node_info["stop"],
                         errors=self.cleanup_errors)

    def _delete_pods(self, timeout_s: float | None) -> None:
        """Delete the Deployment (Foreground: its pods get the kubelet's SIGTERM and grace
        period), wait until the observer sees no pod left (grace + 10 s, or ``timeout_s``),
        then stop the observer; what did not go is kept in ``cleanup_errors``."""
        from kubernetes import client

        from ..wait import poll_until

        if self.observer is None or not self.name:
            return
        grace = float(getattr(self.template, "termination_grace_period_s", 30.0))
        wait_s = grace + 10.0 if timeout_s is None else timeout_s
        try:
            client.AppsV1Api(self.api).delete_namespaced_deployment(
                self.name, self.namespace, propagation_policy="Foreground")
            if not poll_until(lambda: self.observer.live_pod_count() == 0, wait_s,
                              clock=self.clock):
                self.cleanup_errors.append(f"pods still running {wait_s:.0f} s after the "
                                           "Deployment's deletion; the node removes them")
            elif not poll_until(self._deployment_gone, DEPLOYMENT_GONE_S, clock=self.clock):
                self.cleanup_errors.append(f"Deployment {self.name} still there "
                                           f"{DEPLOYMENT_GONE_S:.0f} s after its pods went "
                                           "(the garbage collector's foreground deletion)")
        except Exception as exc:  # the node's stop (or the namespace's deletion) follows
            self.cleanup_errors.append(f"{type(exc).__name__}: {exc}")
        self.observer.stop()

    def _deployment_gone(self) -> bool:
        from kubernetes import client

        try:
            client.AppsV1Api(self.api).read_namespaced_deployment(self.name, self.namespace)
        except client.exceptions.ApiException as exc:
            return exc.status == 404
        return False

    # -- the Platform members ----------------------------------------------------------------
    @property
    def desired_replicas(self) -> int:
        return self._status.spec_replicas

    @property
    def current_replicas(self) -> int:
        return self._status.status_replicas

    @property
    def ready_replicas(self) -> int:
        return self._status.ready_replicas

    def scale(self, replicas: int) -> None:
        """Patch the Deployment's ``spec.replicas`` (the ReplicaSet creates or deletes pods)."""
        if replicas < 0:
            raise ConfigError(f"replicas: {replicas!r} is negative; use >= 0")
        from kubernetes import client

        before = self._status.spec_replicas
        client.AppsV1Api(self.api).patch_namespaced_deployment_scale(
            self.name, self.namespace, {"spec": {"replicas": replicas}})
        self._read_status()
        if before != replicas:
            self.events.emit("scaled", replicas_before=before, replicas_after=replicas)

    def replicas(self) -> list[Any]:
        if self.observer is not None:
            return self.observer.replicas()
        return [] if self.agent is None else self.agent.replicas()

    def metrics_targets(self) -> list[str]:
        """``127.0.0.1:<port>`` of each live pod; none for a command consumer without a port
        variable (it serves no metrics the run can find)."""
        if (getattr(self.template, "kind", "replica") == "command"
                and getattr(self.template, "port_env", None) is None):
            return []
        return [f"127.0.0.1:{r.metrics_port}" for r in self.replicas()
                if r.metrics_port is not None]

    def metrics_target_groups(self) -> list[dict[str, Any]] | None:
        """Prometheus target groups of a cluster's pods, scraped through the apiserver's pod
        proxy (:func:`~pytest_lagscale.kube.pod_proxy.target_groups`); None elsewhere (the
        runner uses :meth:`metrics_targets`)."""
        if self.relay is None or self.metrics_port is None:
            return None
        from ..kube.pod_proxy import target_groups

        return target_groups(self.relay.address, self.namespace,
                             [r.replica_id for r in self.replicas()], self.metrics_port)

    def wait_ready(self, n: int, within_s: float) -> float:
        started = self.clock.now()
        while self.ready_replicas < n:
            if self.clock.now() - started > within_s:
                where = (f"kubectl --kubeconfig {self.kubeconfig} -n {self.namespace} describe "
                         "pods" if self.node_kind == "cluster" else
                         f"{self.layout.root}/replicas/*/ and {self.layout.root}/kube/*.log")
                raise ReplicaError(f"{self.name}: {self.ready_replicas} of {n} pods ready after "
                                   f"{within_s:.0f} s; see {where}")
            self.clock.sleep(0.2)
        return self.clock.now() - started

    def wait_terminated(self, within_s: float) -> None:
        if self.agent is not None:
            self.agent.wait_terminated(within_s)

    def kill_replica(self, replica_id: str, signum: int) -> None:
        """Signal a live replica: its process (``--node process``) or its container through
        containerd (``--node kubelet``).

        Raises:
            ConfigError: ``replica_id`` is not a live replica (the live ones named).
        """
        if self.node_kind == "cluster":
            raise ConfigError(f"kill_replica: {replica_id!r} is a pod on the cluster's nodes "
                              "(--replica-image), which the harness does not signal")
        source = self.observer if self.observer is not None else self.agent
        pod = None if source is None else source.by_replica_id(replica_id)
        if pod is None or pod.terminating or pod not in self.replicas():
            live = ", ".join(r.replica_id for r in self.replicas()) or "none"
            raise ConfigError(f"kill_replica: replica_id {replica_id!r} is not a live replica; "
                              f"live: {live}")
        self.events.emit("replica_signalled", replica_id=replica_id, signal=int(signum))
        if self.observer is not None:
            self.observer.signal(replica_id, signum)
        else:
            pod.process.signal(signum)

    def make_autoscaler(self, plan: Any, events_path: Path, *, bootstrap: str, group: str,
                        topic: str) -> Any:
        """The autoscale phase's part on this platform
        (:class:`~.kube_autoscaler.KubeAutoscaler`)."""
        from .kube_autoscaler import KubeAutoscaler

        return KubeAutoscaler(self, plan, events_path, bootstrap=bootstrap, group=group,
                              topic=topic, clock=self.clock)

    def run_info(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """``{"kubernetes": {...}}`` for the benchmark JSON's ``run``: the pinned versions, the
        control plane's readiness times (s), the HPA timing, and the shadow HPA's verdict over
        the run (:func:`~pytest_lagscale.kube.conformance.run_conformance`; an ``error`` when
        it cannot be computed)."""
        from ..kube.conformance import run_conformance

        timing = self.control_plane.timing if self.control_plane is not None else self.timing
        info: dict[str, Any] = {
            "versions": self.versions,
            "cluster": None if self.kubeconfig is None else {
                "kubeconfig": str(self.kubeconfig), "namespace": self.namespace,
                "replica_image": self.replica_image,
                "nodes_ready": getattr(self.cluster, "nodes_ready", None),
                "server_version": getattr(self.cluster, "version", None),
                "hpa_timing": "assumed from the ScaledObject's lagscale.dev/hpa-* annotations: "
                              "the cluster's kube-controller-manager flags are not visible"},
            "control_plane_ready_s": dict(getattr(self.control_plane, "ready_s", {}) or {}),
            "hpa_timing": None if timing is None else {
                "sync_period_s": timing.sync_period_s, "tolerance": timing.tolerance,
                "downscale_stabilization_s": timing.downscale_stabilization_s},
            "node": self.node_kind,
            "kubelet_node": self.node_info or None if self.node_kind == "kubelet" else None,
            "cluster_pods": self.node_info or None if self.node_kind == "cluster" else None,
            "node_agent_errors": getattr(self.agent, "errors", None)}
        if self.control_plane is None:
            info["conformance"] = {"error": "not computed: the shadow needs the metrics tap, "
                                            "which only a control plane the run starts has "
                                            "(--kubeconfig given)"}
            return {"kubernetes": info}
        try:
            report = run_conformance(records, sync_period_s=timing.sync_period_s,
                                     tolerance=timing.tolerance,
                                     downscale_stabilization_s=timing.downscale_stabilization_s)
            info["conformance"] = report.to_json()
        except Exception as exc:  # recorded, never fatal to the run's analysis
            info["conformance"] = {"error": f"{type(exc).__name__}: {exc}"}
        return {"kubernetes": info}

    @property
    def versions(self) -> dict[str, str]:
        """The pinned versions of the control plane the run starts; on a ``--kubeconfig``
        cluster its API server's ``gitVersion`` and the KEDA version ``lagscale kube up``
        recorded in it (``unknown`` elsewhere)."""
        from ..kube import pins

        if self.cluster is None:
            return pins.pinned_versions()
        return {"kubernetes": self.cluster.version, "keda": self.cluster.keda_version}

    # -- the poller --------------------------------------------------------------------------
    def _read_status(self) -> DeploymentStatus:
        from kubernetes import client

        dep = client.AppsV1Api(self.api).read_namespaced_deployment(self.name, self.namespace)
        status = DeploymentStatus(self.clock.now(), int(dep.spec.replicas or 0),
                                  int(dep.status.replicas or 0),
                                  int(dep.status.ready_replicas or 0))
        previous, self._status = self._status, status
        if (previous.spec_replicas, previous.status_replicas, previous.ready_replicas) != (
                status.spec_replicas, status.status_replicas, status.ready_replicas):
            self.series.append(status)
            self.events.emit("deployment_status", spec_replicas=status.spec_replicas,
                             status_replicas=status.status_replicas,
                             ready_replicas=status.ready_replicas)
        return status

    def _poll_loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self._read_status()
            except Exception as exc:  # the next poll retries
                self.events.emit("platform_error", error=f"{type(exc).__name__}: {exc}")


def node_kind(plan: Any) -> str:
    """``kubelet`` or ``process``: the plan's ``--node``; without one, ``kubelet`` for the
    replica program and ``process`` for a command consumer (its program is built on this host,
    not in the replica image: docs/byo-consumer.md); with ``--kubeconfig``, ``cluster`` when
    ``--replica-image`` is given (the cluster's kubelets run the pods), else ``process`` (the
    node agent runs that cluster's pods here)."""
    if getattr(plan.settings, "kubeconfig", None):
        return "cluster" if getattr(plan.settings, "replica_image", None) else "process"
    chosen = getattr(plan.settings, "node", None)
    if chosen:
        return chosen
    return "process" if getattr(plan.deployment, "command", None) is not None else "kubelet"


def _check_kubelet_node(plan: Any) -> None:
    """Refuse ``--node kubelet`` when the node cannot run here.

    Raises:
        ConfigError: :func:`kubelet_node_problems`, or the Deployment is a command consumer
            (its program is not in the replica image: ``--node process``).
    """
    problems = kubelet_node_problems()
    if getattr(plan.deployment, "command", None) is not None:
        problems.append("the Deployment runs its own consumer command, which the replica image "
                        "does not hold; run it with --node process")
    if problems:
        raise ConfigError("\n".join(f"--node kubelet: {p}" for p in problems))
