"""The node agent's pure part: a pod -> a replica process, and the pod status a kubelet reports.

With no kubelet on the local control plane, the harness's node agent (docs/kubernetes.md) runs
each pod of the consumer Deployment as a replica process. This module holds what needs no
apiserver: reading a pod (the API's JSON: camelCase dicts, as the ``kubernetes`` client's
``ApiClient().sanitize_for_serialization(V1Pod)`` or a raw watch event gives them) into a
:class:`ReplicaSpec`, the replica's argv with the per-replica flags the node sets, and the
bodies the agent sends back: the binding to its node, status patches (Running; Ready and
ContainersReady; Failed) and the final delete's options.

Source: kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-
variables (``$(VAR)`` expansion; ``$$`` escapes; unresolved references stay);
kubernetes.io/docs/concepts/workloads/pods/downward-api (``fieldRef`` paths available to env);
kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle ("Pod conditions", "Termination of
Pods": grace period, then the kubelet's final delete with grace 0); kubernetes pkg/kubelet
status_manager.go v1.36 (the final delete's UID precondition).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..config.deployment import LOCAL_PORT_ANNOTATION, HttpProbe, container_probe
from ..config.replica_args import program_end, without_flags
from ..contract.flags import PLATFORM_FLAGS
from ..contract.errors import ConfigError

NODE_NAME = "lagscale-local"
LOOPBACK_IP = "127.0.0.1"
DEFAULT_GRACE_S = 30.0
#: ``valueFrom.fieldRef.fieldPath`` values the agent can fill (the downward API's env subset a
#: local process can honour).
FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
               "spec.serviceAccountName", "status.podIP", "status.hostIP")
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass(frozen=True)
class ReplicaSpec:
    """One pod reduced to what a replica process needs.

    Attributes:
        namespace, pod_name, uid: the pod's identity.
        container_name: the consumer container's name.
        argv: command + args after ``$(VAR)`` expansion, ``python`` replaced by the harness's
            interpreter; the per-replica flags are added by :func:`replica_argv`.
        env: the container's environment (literal values and field references resolved).
        termination_grace_period_s: ``spec.terminationGracePeriodSeconds`` (default 30 s).
        readiness_path: the readiness probe's HTTP path (``/ready``), or None without a probe.
        readiness_period_s, readiness_failure_threshold, readiness_success_threshold: the probe's
            ``periodSeconds`` (s), ``failureThreshold`` and ``successThreshold`` (Kubernetes
            defaults 10 s, 3, 1).
        kind: ``replica`` (the container runs ``spark_consumer``: the node adds the per-replica
            flags) or ``command`` (any other consumer, run as written: docs/byo-consumer.md).
        readiness: a command consumer's readiness probe (httpGet, tcpSocket or exec; a port
            equal to the port variable's declared value is the pod's own port), or None: the
            pod is ready once it is a member of the group holding partitions.
        port_env: the env variable named by the pod's ``pytest-lagscale.io/local-port-env``
            annotation (set to the pod's own port), or None.
    """

    namespace: str
    pod_name: str
    uid: str
    container_name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    termination_grace_period_s: float = DEFAULT_GRACE_S
    readiness_path: str | None = None
    readiness_period_s: float = 10.0
    readiness_failure_threshold: int = 3
    readiness_success_threshold: int = 1
    kind: str = "replica"
    readiness: HttpProbe | None = None
    port_env: str | None = None


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: ``$$`` -> ``$``, unknown references stay as written.

    Example:
        >>> expand("--bootstrap=$(K) $$(K) $(X)", {"K": "127.0.0.1:9092"})
        '--bootstrap=127.0.0.1:9092 $(K) $(X)'
    """
    return _VAR_REF.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


def pod_id(pod: Mapping[str, Any]) -> str:
    """``<namespace>/<name>`` of a pod (for messages and keys)."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def replica_spec(pod: Mapping[str, Any], *, python: str, node_name: str = NODE_NAME,
                 pod_ip: str = LOOPBACK_IP, port: int | None = None) -> ReplicaSpec:
    """Read a pod into a :class:`ReplicaSpec`.

    Args:
        pod: the pod as the API's JSON (camelCase).
        python: the interpreter replacing a command's ``python``/``python3``.
        node_name, pod_ip: what ``spec.nodeName`` and ``status.podIP``/``status.hostIP``
            references resolve to (the agent's node; pods share the host's loopback).
        port: the pod's own port on the host; a command consumer's port variable (annotation
            ``pytest-lagscale.io/local-port-env``) is set to it before ``$(VAR)`` expansion.

    Raises:
        ConfigError: every problem at once, each naming the pod and the field: no container
            running the replica program in a pod of several containers, a non-string
            command/args item, an env ``valueFrom`` other than a ``fieldRef`` to one of
            :data:`FIELD_PATHS`, an invalid readiness probe of a command consumer.
    """
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    who = f"pod {pod_id(pod)!r}"
    problems: list[str] = []
    index, container = _consumer_container(spec.get("containers") or [])
    if container is None:
        raise ConfigError(f"{who}: spec.containers has several containers and none runs "
                          "'python -m spark_consumer'; give the consumer a pod of its own")
    path = f"spec.containers[{index}]"
    fields = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", ""),
              "metadata.uid": meta.get("uid", ""), "spec.nodeName": node_name,
              "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
              "status.podIP": pod_ip, "status.hostIP": pod_ip}
    env = _env(container.get("env") or [], fields, f"{who}: {path}.env", problems)
    raw = []
    for key in ("command", "args"):
        for i, item in enumerate(container.get(key) or []):
            if not isinstance(item, str):
                problems.append(f"{who}: {path}.{key}[{i}]: {item!r} is not a string; quote it")
            else:
                raw.append(item)
    kind = "replica" if program_end([expand(a, env) for a in raw]) is not None else "command"
    port_env = (meta.get("annotations") or {}).get(LOCAL_PORT_ANNOTATION) if kind == "command" else None
    declared = env.get(str(port_env)) if port_env else None
    if port_env and port is not None:
        env[str(port_env)] = str(port)
    if problems:
        raise ConfigError(problems)
    argv = tuple(python if a in ("python", "python3") else expand(a, env) for a in raw)
    readiness = None
    if kind == "command":
        readiness = container_probe(container, "readinessProbe", path=path, env=env, source=who)
        if readiness is not None and port is not None and str(readiness.port) == declared:
            readiness = replace(readiness, port=port)
    probe = container.get("readinessProbe") or {}
    get = probe.get("httpGet") or {}
    grace = spec.get("terminationGracePeriodSeconds")
    return ReplicaSpec(
        namespace=str(meta.get("namespace", "")), pod_name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")), container_name=str(container.get("name", "")),
        argv=argv, env=env,
        termination_grace_period_s=float(DEFAULT_GRACE_S if grace is None else grace),
        readiness_path=get.get("path", "/") if get else None,
        readiness_period_s=float(probe.get("periodSeconds", 10)),
        readiness_failure_threshold=int(probe.get("failureThreshold", 3)),
        readiness_success_threshold=int(probe.get("successThreshold", 1)),
        kind=kind, readiness=readiness, port_env=str(port_env) if port_env else None)


def _consumer_container(containers: Sequence[Any]) -> tuple[int, Mapping[str, Any] | None]:
    for i, c in enumerate(containers):
        if not isinstance(c, Mapping):
            continue
        words = [str(a) for a in (c.get("command") or []) + (c.get("args") or [])]
        if program_end(words) is not None or len(containers) == 1:
            return i, c
    return -1, None


def _env(items: Sequence[Any], fields: Mapping[str, str], where: str,
         problems: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            problems.append(f"{where}[{i}]: {item!r} has no string 'name'")
            continue
        if "valueFrom" in item:
            ref = (item.get("valueFrom") or {}).get("fieldRef") or {}
            path = ref.get("fieldPath")
            if path not in FIELD_PATHS:
                problems.append(f"{where}[{i}].valueFrom: {item['valueFrom']!r} is not a fieldRef "
                                f"to one of {', '.join(FIELD_PATHS)}; use a literal value")
                continue
            env[name] = fields[path]
        else:
            env[name] = expand(str(item.get("value", "")), env)
    return env


def replica_argv(spec: ReplicaSpec, platform_flags: Mapping[str, str]) -> tuple[str, ...]:
    """``spec.argv`` with the node's per-replica flags set (replaced if the pod gave them).

    Args:
        platform_flags: ``{"--metrics-port": "41234", "--store": ..., "--replica-id": ...,
            "--event-log": ...}``; keys must be :data:`~pytest_lagscale.contract.flags.
            PLATFORM_FLAGS`.

    Raises:
        ConfigError: a key that is not a platform flag.
    """
    unknown = sorted(set(platform_flags) - set(PLATFORM_FLAGS))
    if unknown:
        raise ConfigError(f"platform flags {unknown!r}: not in {', '.join(PLATFORM_FLAGS)}")
    return (without_flags(spec.argv, platform_flags)
            + tuple(f"{k}={v}" for k, v in platform_flags.items()))


# --- what the agent sends to the apiserver ------------------------------------------------------

def rfc3339(at: dt.datetime) -> str:
    """``2026-11-26T04:00:00Z`` (seconds precision, as Kubernetes' ``metav1.Time``).

    Raises:
        ConfigError: a naive datetime.
    """
    if at.tzinfo is None:
        raise ConfigError(f"time {at!r}: a naive datetime; pass an aware UTC datetime")
    return at.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def binding(pod: Mapping[str, Any], node_name: str = NODE_NAME) -> dict:
    """The ``pods/binding`` body assigning ``pod`` to the agent's node (the scheduler's act)."""
    meta = pod.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}


def _condition(kind: str, status: bool, at: str) -> dict:
    return {"type": kind, "status": "True" if status else "False", "lastTransitionTime": at}


def running_status(spec: ReplicaSpec, started_at: dt.datetime, *, image: str = "",
                   pod_ip: str = LOOPBACK_IP) -> dict:
    """The status patch of a pod whose replica process just started (not yet ready).

    Returns:
        ``{"status": {...}}``: phase Running, PodScheduled and Initialized True, Ready and
        ContainersReady False, the container running since ``started_at``, pod and host IP.
    """
    at = rfc3339(started_at)
    return {"status": {
        "phase": "Running", "hostIP": pod_ip, "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
        "startTime": at,
        "conditions": [_condition("PodScheduled", True, at), _condition("Initialized", True, at),
                       _condition("ContainersReady", False, at), _condition("Ready", False, at)],
        "containerStatuses": [_container_status(spec, image, ready=False,
                                                state={"running": {"startedAt": at}})],
    }}


def _container_status(spec: ReplicaSpec, image: str, *, ready: bool, state: dict,
                      restarts: int = 0) -> dict:
    return {"name": spec.container_name, "image": image, "imageID": "", "ready": ready,
            "started": "running" in state, "restartCount": restarts, "state": state}


def current_ready(pod: Mapping[str, Any]) -> bool | None:
    """The pod's ``Ready`` condition (True/False), or None when it has none."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return None


def ready_patch(pod: Mapping[str, Any], spec: ReplicaSpec, ready: bool, at: dt.datetime, *,
                image: str = "") -> dict | None:
    """The status patch flipping Ready and ContainersReady to ``ready``, or None if unchanged.

    Conditions merge by ``type`` (strategic merge patch); ``containerStatuses`` is replaced
    whole, keeping the running state's ``startedAt`` from the pod.
    """
    if current_ready(pod) is ready:
        return None
    stamp = rfc3339(at)
    started = next((c.get("state", {}).get("running", {}).get("startedAt")
                    for c in (pod.get("status") or {}).get("containerStatuses") or []
                    if c.get("name") == spec.container_name), None) or stamp
    return {"status": {
        "conditions": [_condition("ContainersReady", ready, stamp), _condition("Ready", ready, stamp)],
        "containerStatuses": [_container_status(spec, image, ready=ready,
                                                state={"running": {"startedAt": started}})],
    }}


def failed_status(spec: ReplicaSpec, exit_code: int, started_at: dt.datetime,
                  finished_at: dt.datetime, *, image: str = "") -> dict:
    """The status patch of a pod whose replica exited on its own: phase Failed, not ready.

    The agent then deletes the pod; its ReplicaSet counts only active pods (not Failed or
    Succeeded) and creates a replacement.
    """
    end = rfc3339(finished_at)
    state = {"terminated": {"exitCode": int(exit_code), "reason": "Completed" if exit_code == 0
                            else "Error", "startedAt": rfc3339(started_at), "finishedAt": end}}
    return {"status": {
        "phase": "Failed",
        "conditions": [_condition("ContainersReady", False, end), _condition("Ready", False, end)],
        "containerStatuses": [_container_status(spec, image, ready=False, state=state)],
    }}


def is_terminating(pod: Mapping[str, Any]) -> bool:
    """Whether the pod has a ``metadata.deletionTimestamp`` (deletion requested)."""
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def termination_grace_s(pod: Mapping[str, Any]) -> float:
    """Seconds between SIGTERM and SIGKILL for a pod being deleted.

    ``metadata.deletionGracePeriodSeconds`` (set by the delete call) wins over
    ``spec.terminationGracePeriodSeconds``; 30 s when neither is present.
    """
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    for value in (meta.get("deletionGracePeriodSeconds"), spec.get("terminationGracePeriodSeconds")):
        if value is not None:
            return float(value)
    return DEFAULT_GRACE_S


def final_delete_options(pod: Mapping[str, Any]) -> dict:
    """The kubelet's final delete once the process is gone: grace 0, only this pod's UID.

    The UID precondition keeps a same-named later pod (a StatefulSet's) from being deleted.
    """
    return {"gracePeriodSeconds": 0,
            "preconditions": {"uid": (pod.get("metadata") or {}).get("uid")}}


def matches_selector(pod: Mapping[str, Any], match_labels: Mapping[str, str]) -> bool:
    """Whether the pod's labels include every ``match_labels`` pair (a Deployment's selector)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in match_labels.items())
