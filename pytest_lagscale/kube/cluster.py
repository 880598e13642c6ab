"""A cluster given by a kubeconfig (``--kubeconfig``): checked, and a namespace per run.

``lagscale run --platform kubernetes --kubeconfig PATH`` runs on a cluster that is already up
(``lagscale kube up`` keeps the local control plane running between runs) instead of starting
one. Before anything is applied, :func:`preflight` asks the cluster what the run needs and
names what is missing:

* the API answers (``/version``);
* KEDA is installed: the ``scaledobjects.keda.sh`` CRD is ``Established`` and the APIService
  ``v1beta1.external.metrics.k8s.io`` is ``Available`` (the HPA reads KEDA's metric through it);
* without ``--replica-image``, no Node is Ready: the pods are run by the harness's node agent
  as processes on this machine, and the ScaledObject's kafka trigger names the run's broker on
  127.0.0.1, which a cluster with kubelets (kind, a cloud cluster) would not reach;
* with ``--replica-image`` (a cluster with kubelets), a Node is Ready, and a short-lived probe
  pod of that image (:func:`probe_bootstrap`, in a namespace of its own, deleted after)
  connects to the bootstrap address and asks the broker for its metadata from inside the
  cluster: a broker the pods cannot reach, an image the nodes cannot pull, or an image without
  ``python`` and confluent-kafka fails here, with the pod's own words.

Each run gets its own namespace, ``lagscale-<run id>`` (:func:`run_namespace`), so runs against
one cluster do not meet; :func:`delete_run_objects` removes what the run created (ScaledObject,
HPA, Deployment, ReplicaSets, pods; the namespace itself when the cluster runs a namespace
controller, else it stays empty).

Source: kubernetes API conventions (``Established`` CRD condition, ``Available`` APIService
condition, Node ``Ready`` condition); kedacore/keda config/metrics-server/api_service.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..contract.errors import ConfigError, LagscaleError
from .manifests import EXTERNAL_METRICS_APISERVICE

SCALEDOBJECT_CRD = "scaledobjects.keda.sh"
#: Seconds :func:`preflight` waits for KEDA's CRD and APIService conditions to become True.
SETTLE_S = 60.0
RUN_LABEL = "lagscale.dev/run-id"
#: ``kube-public/lagscale-versions``: the pinned versions ``lagscale kube up`` started.
VERSIONS_CONFIGMAP = ("kube-public", "lagscale-versions")


def run_namespace(run_id: str) -> str:
    """``lagscale-<run id>``, lower-cased and cut to a DNS-1123 label (63 characters).

    Example:
        >>> run_namespace("3F2a_b9")
        'lagscale-3f2a-b9'
    """
    slug = re.sub(r"[^a-z0-9-]+", "-", run_id.lower()).strip("-") or "run"
    return f"lagscale-{slug}"[:63].rstrip("-")


@dataclass(frozen=True)
class ClusterInfo:
    """What :func:`preflight` found: the API server's URL, its ``gitVersion``, KEDA's version
    (from :data:`VERSIONS_CONFIGMAP`, else ``unknown``) and the number of Ready nodes (0: the
    node agent runs every pod)."""

    server: str
    version: str
    keda_version: str
    nodes_ready: int


def _condition(obj: Any, kind: str) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def _keda_problems(api: Any, client: Any) -> list[str]:
    """What is missing or not ready of KEDA: its CRD, its metrics APIService (the
    condition's message where it has one)."""
    problems = []
    try:
        crd = api.sanitize_for_serialization(
            client.ApiextensionsV1Api(api).read_custom_resource_definition(SCALEDOBJECT_CRD))
        if not _condition(crd, "Established"):
            problems.append(f"CRD {SCALEDOBJECT_CRD} is not Established")
    except client.exceptions.ApiException as exc:
        problems.append(f"CRD {SCALEDOBJECT_CRD}: {exc.status} {exc.reason}: KEDA is not "
                        "installed")
    try:
        svc = api.sanitize_for_serialization(
            client.ApiregistrationV1Api(api).read_api_service(EXTERNAL_METRICS_APISERVICE))
        if not _condition(svc, "Available"):
            why = next((f" ({c.get('reason')}: {c.get('message')})"
                        for c in (svc.get("status") or {}).get("conditions") or []
                        if c.get("type") == "Available"), "")
            problems.append(f"APIService {EXTERNAL_METRICS_APISERVICE} is not Available{why}: "
                            "KEDA's metrics adapter is not serving")
    except client.exceptions.ApiException as exc:
        problems.append(f"APIService {EXTERNAL_METRICS_APISERVICE}: {exc.status} {exc.reason}: "
                        "KEDA's metrics adapter is not installed")
    return problems


def preflight(api: Any, *, settle_s: float = SETTLE_S, clock: Any = None,
              replica_image: str | None = None, bootstrap: str | None = None,
              probe_namespace: str | None = None, with_nodes: bool | None = None
              ) -> ClusterInfo:
    """Check that the cluster can host a run (module docstring).

    Args:
        api: a ``kubernetes.client.ApiClient`` for the cluster.
        replica_image: ``--replica-image``: the cluster's kubelets run the pods (Ready nodes
            required); None: the node agent does (no Ready node allowed).
        bootstrap: with ``replica_image``, the broker the pods must reach.
        probe_namespace: with ``replica_image`` and ``bootstrap``, the namespace of the probe
            pod (created and deleted here); None skips the probe.
        with_nodes: whether Ready nodes are expected; None: when ``replica_image`` is given
            (``lagscale kube up --node kubelet`` passes True before any run names an image).
        settle_s: seconds to wait for KEDA's CRD to be Established and its APIService
            Available when they exist but are not yet (kube-aggregator's availability check
            can flip to False for a moment on a loaded machine); missing ones fail at once.
        clock: time source (``now``/``sleep``; RealClock when None).

    Raises:
        ConfigError: one line per problem: the API does not answer, KEDA's CRD or metrics
            APIService is missing or not ready, or a Node is Ready.
    """
    from kubernetes import client

    from ..contract.clock import RealClock

    clock = clock or RealClock()
    server = api.configuration.host
    try:
        version = client.VersionApi(api).get_code().git_version
    except Exception as exc:
        raise ConfigError(f"--kubeconfig: the cluster at {server} does not answer "
                            f"({type(exc).__name__}: {exc}); start it (lagscale kube up) or fix "
                            "the kubeconfig") from exc
    problems = _keda_problems(api, client)
    deadline = clock.now() + settle_s
    while problems and not any("not installed" in p for p in problems) and \
            clock.now() < deadline:
        clock.sleep(1.0)  # a condition that flips (the aggregator's checks under load)
        problems = _keda_problems(api, client)
    nodes = client.CoreV1Api(api).list_node().items
    ready = [n.metadata.name for n in nodes
             if _condition(api.sanitize_for_serialization(n), "Ready")]
    if with_nodes is None:
        with_nodes = replica_image is not None
    if ready and not with_nodes:
        problems.append(f"{len(ready)} Node(s) Ready ({', '.join(ready[:3])}): a cluster with "
                        "kubelets runs the pods itself; give --replica-image REF (an image its "
                        "nodes can pull) and --kafka external --kafka-bootstrap HOST:PORT (an "
                        "address its pods reach), or use a cluster without nodes (lagscale "
                        "kube up): docs/kubernetes.md \"Clusters with kubelets\"")
    if not ready and with_nodes:
        problems.append("--replica-image: no Node is Ready, so no kubelet would run the image; "
                        "drop --replica-image to run the pods on this machine (the node agent)")
    if (not problems and replica_image is not None and bootstrap is not None
            and probe_namespace is not None):
        problem = probe_bootstrap(api, replica_image, bootstrap, probe_namespace, clock=clock)
        if problem:
            problems.append(problem)
    if problems:
        raise ConfigError([f"--kubeconfig ({server}): {p}" for p in problems])
    return ClusterInfo(server, version, recorded_versions(api).get("keda", "unknown"),
                       len(ready))


#: The probe pod's program: connect to each bootstrap address, then ask the broker for its
#: metadata (which also reaches the advertised listener); prints what it found, exit 1 on a
#: failure.
PROBE_SCRIPT = """\
import socket, sys
bootstrap = sys.argv[1]
for server in bootstrap.split(","):
    host, _, port = server.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        sys.exit(f"connect {server}: {exc}")
from confluent_kafka.admin import AdminClient
meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
print("brokers", sorted(f"{b.host}:{b.port}" for b in meta.brokers.values()))
"""
#: Seconds the probe pod may take from creation to its end (an image pull included).
PROBE_TIMEOUT_S = 90.0
#: Container waiting reasons that end the probe at once (kubernetes v1.36.3
#: pkg/kubelet/images/types.go: the image cannot be had).
IMAGE_ERRORS = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName")


def probe_bootstrap(api: Any, image: str, bootstrap: str, namespace: str, *,
                    timeout_s: float = PROBE_TIMEOUT_S, clock: Any = None) -> str | None:
    """Run one pod of ``image`` in a new ``namespace`` that connects to ``bootstrap`` and reads
    the broker's metadata (:data:`PROBE_SCRIPT`); delete the namespace after.

    Returns:
        None when the pod succeeded; else one line: the pod's output (exit != 0), or why it did
        not run within ``timeout_s`` (the container's waiting reason, e.g. ``ErrImagePull``).
    """
    from kubernetes import client

    from ..contract.clock import RealClock
    from ..process import run_id

    clock = clock or RealClock()
    core = client.CoreV1Api(api)
    where = f"the probe pod ({image}, {namespace})"
    try:
        create_namespace(api, namespace, run_id())
    except LagscaleError as exc:
        return f"{where}: {exc}"
    try:
        core.create_namespaced_pod(namespace, {
            "metadata": {"name": "bootstrap-probe"},
            "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 0,
                     "activeDeadlineSeconds": int(timeout_s),
                     "containers": [{"name": "probe", "image": image,
                                     "command": ["python", "-c", PROBE_SCRIPT, bootstrap],
                                     # the output in the pod's status: no kubelet connection
                                     "terminationMessagePolicy": "FallbackToLogsOnError"}]}})
        deadline = clock.now() + timeout_s
        pod = None
        while clock.now() < deadline:
            pod = api.sanitize_for_serialization(
                core.read_namespaced_pod("bootstrap-probe", namespace))
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                break
            waiting = _pod_waiting(pod)
            if waiting.split(":", 1)[0] in IMAGE_ERRORS:
                return (f"{where} cannot start: {waiting}; push the image where the nodes "
                        "pull it (kind: kind load docker-image)")
            clock.sleep(0.5)
        else:
            return (f"{where} did not finish within {timeout_s:.0f} s "
                    f"({_pod_waiting(pod)}): can the nodes pull the image? (kind: kind load "
                    "docker-image)")
        if phase == "Succeeded":
            return None
        ended = next(((cs.get("state") or {}).get("terminated") or {}
                      for cs in (pod.get("status") or {}).get("containerStatuses") or []), {})
        said = " / ".join(line for line in str(ended.get("message") or "").splitlines()
                          if line.strip())[-300:] or f"exit code {ended.get('exitCode')}"
        return (f"{where} could not reach the broker at {bootstrap} from inside the cluster: "
                f"{said}; give "
                "--kafka-bootstrap an address the pods reach (and the broker must advertise it)")
    except client.exceptions.ApiException as exc:
        return f"{where}: {exc.status} {exc.reason}"
    finally:
        delete_run_objects(api, namespace)  # best effort: the probe's namespace and pod


def _pod_waiting(pod: Any) -> str:
    """The pod's phase and its container's waiting reason and message, for a message."""
    status = (pod or {}).get("status") or {}
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting")
        if waiting:
            return f"{waiting.get('reason')}: {str(waiting.get('message') or '')[:200]}"
    return f"phase {status.get('phase', 'unknown')}"


def recorded_versions(api: Any) -> dict[str, str]:
    """The versions in :data:`VERSIONS_CONFIGMAP` (empty when the cluster has none)."""
    from kubernetes import client

    try:
        cm = client.CoreV1Api(api).read_namespaced_config_map(VERSIONS_CONFIGMAP[1],
                                                                VERSIONS_CONFIGMAP[0])
    except client.exceptions.ApiException:
        return {}
    return dict(cm.data or {})


def record_versions(api: Any, versions: dict[str, str]) -> None:
    """Write ``versions`` to :data:`VERSIONS_CONFIGMAP` (``lagscale kube up``).

    Raises:
        LagscaleError: the API refused.
    """
    from kubernetes import client

    namespace, name = VERSIONS_CONFIGMAP
    try:
        client.CoreV1Api(api).create_namespaced_config_map(
            namespace, {"metadata": {"name": name}, "data": dict(versions)})
    except client.exceptions.ApiException as exc:
        raise LagscaleError(f"ConfigMap {namespace}/{name}: {exc.status} {exc.reason}") from exc


def create_namespace(api: Any, namespace: str, run_id: str) -> None:
    """Create the run's namespace (labelled with the run id) and its ``default``
    ServiceAccount (pods are refused without it until the serviceaccount controller makes
    it). An existing one is an error: another run owns it.

    Raises:
        LagscaleError: the namespace exists, or the API refused.
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": namespace, "labels": {RUN_LABEL: run_id}}})
    except client.exceptions.ApiException as exc:
        hint = "; another run with this run id owns it" if exc.status == 409 else ""
        raise LagscaleError(f"--kubeconfig: namespace {namespace}: {exc.status} {exc.reason}"
                            f"{hint}") from exc
    try:
        core.create_namespaced_service_account(namespace, {"metadata": {"name": "default"}})
    except client.exceptions.ApiException as exc:
        if exc.status != 409:  # 409: the serviceaccount controller was first
            raise LagscaleError(f"--kubeconfig: ServiceAccount {namespace}/default: "
                                f"{exc.status} {exc.reason}") from exc


def delete_run_objects(api: Any, namespace: str) -> list[str]:
    """Delete what a run created in ``namespace`` (ScaledObjects first, so KEDA and the HPA
    stop scaling; then HPAs, Deployments, ReplicaSets, pods with grace 0), then the namespace.
    Best effort: returns one line per failure, never raises."""
    from kubernetes import client

    errors: list[str] = []
    custom, hpa = client.CustomObjectsApi(api), client.AutoscalingV2Api(api)
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    steps = (
        ("ScaledObjects", lambda: custom.delete_collection_namespaced_custom_object(
            "keda.sh", "v1alpha1", namespace, "scaledobjects")),
        ("HPAs", lambda: hpa.delete_collection_namespaced_horizontal_pod_autoscaler(namespace)),
        ("Deployments", lambda: apps.delete_collection_namespaced_deployment(namespace)),
        ("ReplicaSets", lambda: apps.delete_collection_namespaced_replica_set(namespace)),
        ("Pods", lambda: core.delete_collection_namespaced_pod(namespace,
                                                                grace_period_seconds=0)),
        ("Namespace", lambda: core.delete_namespace(namespace)),
    )
    for what, call in steps:
        try:
            call()
        except Exception as exc:  # the cluster outlives the run; report, go on
            errors.append(f"{namespace}: deleting {what}: {type(exc).__name__}: {exc}")
    return errors


__all__ = ["PROBE_SCRIPT", "RUN_LABEL", "SCALEDOBJECT_CRD", "VERSIONS_CONFIGMAP", "ClusterInfo",
           "create_namespace", "delete_run_objects", "preflight", "probe_bootstrap",
           "record_versions",
           "recorded_versions", "run_namespace"]
