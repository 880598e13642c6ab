"""The consumer Deployment as the kubelet node runs it (``--node kubelet``).

:func:`kubelet_deployment` takes the run's Deployment (:func:`~pytest_lagscale.platform.
kubernetes.deployment_object`: the committed manifest with the run's command line) and
returns what is applied to the run's control plane, whose one node is this host:

* the consumer container runs the replica image (``imagePullPolicy: Never``: it is imported
  into the node's containerd, there is no registry);
* ``hostNetwork: true`` (``dnsPolicy: Default``), so the broker, Prometheus and the store stay
  on this host's loopback; the container's ``ports`` are dropped, since on one node hostNetwork
  pods declaring the same port exclude each other (the scheduler's NodePorts filter);
* the per-replica flags come from the pod itself: ``POD_NAME`` from the downward API, and
  ``--replica-id=$(POD_NAME)``, ``--metrics-port=0`` (each replica binds a free port and
  writes it to ``--port-file``), ``--event-log`` and ``--store`` under the run directory, which
  is mounted at the same path (hostPath);
* ``httpGet`` probes become ``exec`` probes doing the same GET with bash's ``/dev/tcp`` on the
  port the replica wrote (same path, period, thresholds and timeout);
* no service account token is mounted (the replica never calls the API);
* a CPU request larger than the node's cores over the policy's maxReplicaCount is lowered to
  that share, so every replica the policy may ask for is schedulable: on this 2-core machine
  the ci Deployment's 500m would admit four pods of the eight the spike needs. The request is
  lowered, not dropped: without one, the pods' cgroups get ``cpu.shares`` 2 and starve behind
  the host's processes (measured: seven concurrent Spark cold starts of 30-39 s).

Every rewrite is listed in the returned notes, which the run records.

Source: kubernetes.io/docs/concepts/workloads/pods/downward-api; kubernetes
pkg/scheduler/framework/plugins/nodeports (host ports of hostNetwork pods).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ..contract.flags import PLATFORM_FLAGS

PORT_FILE = "metrics.port"
PROBES = ("readinessProbe", "livenessProbe", "startupProbe")
#: An HTTP GET in bash alone (the image has no curl): ``$0`` the replicas directory, ``$1`` the
#: path; passes on a status 200-399, as the kubelet's httpGet probe.
HTTP_GET_SCRIPT = ('read -r port < "$0/$POD_NAME/' + PORT_FILE + '" && '
                   'exec 3<>"/dev/tcp/127.0.0.1/$port" && '
                   'printf "GET %s HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n" "$1" >&3 && '
                   'read -r _ code _ <&3 && [ "$code" -ge 200 ] && [ "$code" -lt 400 ]')
POD_FLAGS = ("--port-file",)


def exec_probe(probe: dict[str, Any], replicas_dir: Path) -> dict[str, Any]:
    """``probe`` with its ``httpGet`` replaced by the equivalent ``exec`` (other kinds kept)."""
    if "httpGet" not in probe:
        return probe
    out = {k: v for k, v in probe.items() if k != "httpGet"}
    out["exec"] = {"command": ["bash", "-c", HTTP_GET_SCRIPT, str(replicas_dir),
                               str(probe["httpGet"].get("path") or "/")]}
    return out


def pod_flags(replicas_dir: Path, store: Path, event_log_name: str) -> dict[str, str]:
    """The per-replica flags, each pod's own through ``$(POD_NAME)``."""
    pod_dir = f"{replicas_dir}/$(POD_NAME)"
    return {"--replica-id": "$(POD_NAME)", "--metrics-port": "0",
            "--port-file": f"{pod_dir}/{PORT_FILE}", "--event-log": f"{pod_dir}/{event_log_name}",
            "--store": str(store)}


def millicores(quantity: str | int | float) -> int:
    """A Kubernetes CPU quantity (``500m``, ``2``, ``0.25``) in millicores.

    Raises:
        ValueError: not a CPU quantity.
    """
    text = str(quantity).strip()
    if text.endswith("m"):
        return int(float(text[:-1]))
    return int(round(float(text) * 1000))


def kubelet_deployment(body: dict[str, Any], *, image: str, run_root: Path, replicas_dir: Path,
                       store: Path, event_log_name: str, node_cpu_millicores: int,
                       max_replicas: int) -> tuple[dict[str, Any], list[str]]:
    """``body`` (a Deployment of the replica program) rewritten for the kubelet node.

    Args:
        body: the run's Deployment (not modified).
        image: the replica image reference (``lagscale.local/lagscale-replica:<version>``).
        run_root: the run directory, mounted at the same path in every pod.
        replicas_dir, store: the run's replica and store directories (under ``run_root``).
        event_log_name: the replica event log's file name.
        node_cpu_millicores: the node's allocatable CPU (this machine's cores x 1000).
        max_replicas: the policy's maxReplicaCount (>= 1).

    Returns:
        ``(deployment, notes)``: notes name each rewrite, one sentence each.
    """
    doc = copy.deepcopy(body)
    spec = doc["spec"]["template"]["spec"]
    notes = [f"image {image} (imported into the node's containerd, imagePullPolicy Never)",
             "hostNetwork: every address on this host's loopback"]
    spec["hostNetwork"] = True
    spec["automountServiceAccountToken"] = False
    spec["dnsPolicy"] = "Default"
    spec["volumes"] = [{"name": "run", "hostPath": {"path": str(run_root), "type": "Directory"}}]
    for container in spec["containers"]:
        container["image"] = image
        container["imagePullPolicy"] = "Never"
        if container.pop("ports", None):
            notes.append(f"{container['name']}: ports dropped (hostNetwork pods with one port "
                         "exclude each other on one node); each replica binds a free port")
        drop = set(PLATFORM_FLAGS) | set(POD_FLAGS)
        kept = [a for a in container.get("command", []) if a.split("=", 1)[0] not in drop]
        container["command"] = kept + [f"{k}={v}" for k, v in
                                       pod_flags(replicas_dir, store, event_log_name).items()]
        env = [e for e in container.get("env", []) if e.get("name") != "POD_NAME"]
        container["env"] = [{"name": "POD_NAME",
                             "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}] + env
        for name in PROBES:
            if "httpGet" in container.get(name, {}):
                container[name] = exec_probe(container[name], replicas_dir)
                notes.append(f"{container['name']}: {name} httpGet -> exec (the same GET on the "
                             "port the replica wrote)")
        requests = (container.get("resources") or {}).get("requests") or {}
        share = max(1, node_cpu_millicores // max(1, max_replicas))
        if "cpu" in requests and millicores(requests["cpu"]) > share:
            notes.append(f"{container['name']}: cpu request {requests['cpu']} -> {share}m (the "
                         f"node's {node_cpu_millicores}m over maxReplicaCount {max_replicas})")
            requests["cpu"] = f"{share}m"
        container["volumeMounts"] = [{"name": "run", "mountPath": str(run_root)}]
    return doc, notes


def cluster_deployment(body: dict[str, Any], *, image: str) -> tuple[dict[str, Any], list[str]]:
    """The run's Deployment as a ``--kubeconfig`` cluster with kubelets runs it.

    The consumer container (the first, as :func:`~pytest_lagscale.platform.kubernetes.
    deployment_object` chose it) runs ``image`` (``--replica-image``) with the manifest's pull
    policy, and ``hostPath`` volumes are dropped with their mounts: they name paths on the
    cluster's machines, and the run's record of what was processed is the output topic there
    (:mod:`pytest_lagscale.config.cluster_consumer`). No service-account token is mounted
    unless the manifest sets ``automountServiceAccountToken``. Ports, probes, grace period and requests
    stay as written: the pods have addresses of their own. Pure: returns (a copy, notes).
    """
    doc = copy.deepcopy(body)
    spec = doc["spec"]["template"]["spec"]
    consumer = spec["containers"][0]
    notes = [f"{consumer['name']}: image {consumer.get('image')} -> {image} (--replica-image)"]
    consumer["image"] = image
    if "automountServiceAccountToken" not in spec:
        spec["automountServiceAccountToken"] = False
        notes.append("no service-account token (the consumer never calls the API; set "
                     "automountServiceAccountToken in the manifest to have one)")
    host_paths = {v["name"] for v in spec.get("volumes") or [] if "hostPath" in v}
    if host_paths:
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in host_paths]
        for container in spec["containers"]:
            mounts = container.get("volumeMounts") or []
            container["volumeMounts"] = [m for m in mounts if m["name"] not in host_paths]
        notes.append(f"hostPath volumes dropped ({', '.join(sorted(host_paths))}): paths on the "
                     "cluster's machines; the output topic is the run's record")
    return doc, notes
