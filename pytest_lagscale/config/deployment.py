"""Load the consumer ``Deployment`` (apps/v1) and its replica contract (DESIGN.md).

Reads what the local platform needs to behave like the Deployment: the replica program's flags
(from ``command`` + ``args`` with Kubernetes ``$(VAR)`` expansion from literal ``env`` values),
``terminationGracePeriodSeconds``, the readiness probe, the liveness probe (optional) and the CPU
request. Pod-spec fields the harness does not read are accepted as long as they are valid
Kubernetes keys.

Two kinds of consumer (:attr:`DeploymentConfig.kind`). ``spark_consumer``: the container runs
the replica program, whose flags are read and checked (:mod:`.replica_args`). ``command``: any
other program or image; the harness knows it only through its env, which must define
:data:`CONNECTION_ENV` (``KAFKA_BOOTSTRAP``, ``KAFKA_TOPIC``, ``KAFKA_GROUP``: the run replaces
their values with its broker, topic and group, and ``$(VAR)`` references in ``args`` expand to
them; ``KAFKA_OUTPUT_TOPIC``, if defined, names the output topic it writes), and its probes. A replica of a command consumer shares this machine's network
with the others, so the pod-template annotation :data:`LOCAL_PORT_ANNOTATION` may name an env
variable whose value is a ``containerPort``: the local platform gives each replica a port of its
own there (probes and scrapes follow it).

The replica program's probes are ``httpGet`` probes on its ``--metrics-port``; a command
consumer's may be ``httpGet``, ``tcpSocket`` or ``exec`` (as a kubelet runs them), or absent:
then a replica is ready once it is a member of the group. A missing field takes the
Kubernetes default (``initialDelaySeconds`` 0, ``periodSeconds`` 10, ``timeoutSeconds`` 1,
``successThreshold`` 1, ``failureThreshold`` 3) and a bad one is refused with the range the
Kubernetes API allows (kubernetes.io API reference, core/v1 Probe: ``periodSeconds``,
``timeoutSeconds``, ``successThreshold`` and ``failureThreshold`` minimum 1,
``initialDelaySeconds`` minimum 0, ``successThreshold`` must be 1 for liveness; a probe's own
``terminationGracePeriodSeconds`` minimum 1, the pod's value when unset).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._objects import ObjectMeta, collect_envelope
from pytest_lagscale.config._problems import MISSING, Problems, index, join
from pytest_lagscale.config.replica_args import ReplicaArgs, collect_replica_args, program_end

DEPLOYMENT_SPEC_KEYS = ("replicas", "selector", "template", "strategy", "minReadySeconds",
                        "revisionHistoryLimit", "paused", "progressDeadlineSeconds")
POD_SPEC_KEYS = (
    "containers", "initContainers", "ephemeralContainers", "volumes", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "dnsConfig", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName", "hostNetwork",
    "hostPID", "hostIPC", "hostUsers", "shareProcessNamespace", "securityContext", "imagePullSecrets",
    "hostname", "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases",
    "priorityClassName", "priority", "readinessGates", "runtimeClassName", "enableServiceLinks",
    "preemptionPolicy", "overhead", "topologySpreadConstraints", "setHostnameAsFQDN", "os",
    "schedulingGates", "resourceClaims", "resources")
CONTAINER_KEYS = ("name", "image", "command", "args", "workingDir", "ports", "envFrom", "env",
                  "resources", "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices",
                  "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
                  "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty")
PROBE_KEYS = ("exec", "httpGet", "tcpSocket", "grpc", "initialDelaySeconds", "timeoutSeconds",
              "periodSeconds", "successThreshold", "failureThreshold", "terminationGracePeriodSeconds")
CONNECTION_ENV = ("KAFKA_BOOTSTRAP", "KAFKA_TOPIC", "KAFKA_GROUP")
"""Env names through which the harness gives a command consumer its broker, topic and group."""
OUTPUT_TOPIC_ENV = "KAFKA_OUTPUT_TOPIC"
"""Optional env name of the output topic a command consumer writes each processed record to."""
LOCAL_PORT_ANNOTATION = "pytest-lagscale.io/local-port-env"
"""Pod-template annotation: the env variable holding the port each local replica gets."""
PROBE_KINDS = ("httpGet", "tcpSocket", "exec")
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_CPU = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(m?)")


@dataclass(frozen=True)
class HttpProbe:
    """A probe (Kubernetes defaults filled): ``httpGet`` (``path`` on ``port``), ``tcpSocket``
    (a connection to ``port``) or ``exec`` (``command`` exits 0).

    Attributes:
        path: URL path, e.g. ``/ready`` (``httpGet``; "" otherwise).
        port: TCP port (a named port is resolved through the container's ``ports``; 0 for
            ``exec``).
        initial_delay_s: seconds before the first probe (default 0).
        period_s: seconds between probes (default 10).
        timeout_s: seconds per probe (default 1).
        success_threshold: consecutive successes to become ready (default 1).
        failure_threshold: consecutive failures to become unready (default 3).
        kind: ``httpGet``, ``tcpSocket`` or ``exec``.
        command: the ``exec`` probe's argv (after ``$(VAR)`` expansion); () otherwise.
    """

    path: str
    port: int
    initial_delay_s: int = 0
    period_s: int = 10
    timeout_s: int = 1
    success_threshold: int = 1
    failure_threshold: int = 3
    kind: str = "httpGet"
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReadinessProbe(HttpProbe):
    """The ``readinessProbe``: ``/ready`` of the replica program (required there)."""


@dataclass(frozen=True)
class LivenessProbe(HttpProbe):
    """The ``livenessProbe`` (optional): ``/healthz``; after ``failure_threshold`` consecutive
    failures the container is restarted (``success_threshold`` is always 1).

    Attributes:
        termination_grace_period_s: the probe's own ``terminationGracePeriodSeconds`` for the
            restart's SIGTERM -> SIGKILL, or None (the pod's).
    """

    termination_grace_period_s: int | None = None


@dataclass(frozen=True)
class CommandConsumer:
    """A consumer the harness runs by its command alone (kind ``command``).

    Attributes:
        topic: ``KAFKA_TOPIC``'s value in the manifest.
        group: ``KAFKA_GROUP``'s value in the manifest.
        raw_args: ``command + args`` as written (``$(VAR)`` expanded per replica, from the
            run's env).
        port_env: the env variable named by :data:`LOCAL_PORT_ANNOTATION`, or None.
        port: that variable's value in the manifest (a ``containerPort``), or None.
        output_topic: ``KAFKA_OUTPUT_TOPIC``'s value, or None: the consumer writes no output
            topic (exactness then comes from committed offsets, duplicates unmeasured).
    """

    topic: str
    group: str
    raw_args: tuple[str, ...]
    port_env: str | None = None
    port: int | None = None
    output_topic: str | None = None


@dataclass(frozen=True)
class DeploymentConfig:
    """The consumer Deployment as the local platform needs it.

    Attributes:
        source: file it was read from.
        meta: name, namespace, labels, annotations.
        replicas: ``spec.replicas`` (None when unset: the autoscaler owns it).
        container_name: the container running ``spark_consumer``.
        image: its image.
        argv: ``command + args`` after ``$(VAR)`` expansion.
        env: literal env values (entries with ``valueFrom`` are left out).
        replica: the replica program's flags (kind ``spark_consumer``), or None.
        command: the command consumer (kind ``command``), or None.
        termination_grace_period_s: seconds between SIGTERM and SIGKILL (default 30).
        readiness: the readiness probe (None: a command consumer without one is ready once it
            is a member of the group).
        liveness: the liveness probe, or None when the container has none.
        cpu_request_millicores: ``resources.requests.cpu`` in millicores (None when unset).
        sha256: hex SHA-256 of the file's bytes as :func:`load_deployment` read them (None for
            a document parsed from memory): two runs had the same Deployment when these match.
    """

    source: str
    meta: ObjectMeta
    replicas: int | None
    container_name: str
    image: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    replica: ReplicaArgs | None
    readiness: ReadinessProbe | None
    termination_grace_period_s: int = 30
    cpu_request_millicores: int | None = None
    selector: Mapping[str, str] = field(default_factory=dict)
    liveness: LivenessProbe | None = None
    command: CommandConsumer | None = None
    sha256: str | None = None

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name

    @property
    def kind(self) -> str:
        """``spark_consumer`` (the replica program) or ``command`` (any other consumer)."""
        return "spark_consumer" if self.replica is not None else "command"

    @property
    def topic(self) -> str:
        """The topic the consumer reads, as the manifest says."""
        return self.replica.topic if self.replica is not None else self._command().topic

    @property
    def group(self) -> str:
        """The consumer group id, as the manifest says."""
        return self.replica.group if self.replica is not None else self._command().group

    def _command(self) -> CommandConsumer:
        assert self.command is not None, "a Deployment has a replica program or a command"
        return self.command


def load_deployment(path: str | Path) -> DeploymentConfig:
    """Read and validate the consumer Deployment YAML.

    Raises:
        ConfigError: every problem in the file, one line each.
    """
    config = parse_deployment(_read.load_yaml(path), source=str(path))
    return replace(config, sha256=hashlib.sha256(Path(path).read_bytes()).hexdigest())


def parse_deployment(doc: Any, *, source: str = "<string>") -> DeploymentConfig:
    """Validate a loaded Deployment document (see :func:`load_deployment`).

    Raises:
        ConfigError: every problem, one line each.
    """
    p = Problems(source)
    meta, spec = collect_envelope(doc, p, api_version="apps/v1", kind="Deployment")
    if spec is None:
        p.raise_if_any()
    assert spec is not None
    p.unknown_keys(spec, "spec", DEPLOYMENT_SPEC_KEYS)
    replicas = _read.integer(spec, "replicas", "spec", p, default=None, lo=0, unit="replicas")
    selector = _selector(spec, p)
    pod, labels, annotations = _pod_spec(spec, p)
    for key, value in selector.items():
        if labels.get(key) != value:
            p.add(join("spec.selector.matchLabels", key), value, "a label also set in spec.template.metadata.labels",
                  f"add {key}: {value} to the template labels")
    result = _container_part(pod, annotations, p) if pod is not None else None
    p.raise_if_any()
    assert meta is not None and result is not None
    return DeploymentConfig(source=source, meta=meta, replicas=replicas, selector=selector, **result)


def container_probe(container: Mapping[str, Any], key: str, *, path: str, env: Mapping[str, str],
                    source: str) -> HttpProbe | None:
    """A container's ``readinessProbe`` or ``livenessProbe`` (``key``) read as a kubelet reads
    it: ``httpGet``, ``tcpSocket`` or ``exec``, Kubernetes defaults filled, a named port
    resolved through the container's ``ports``, ``$(VAR)`` in an exec command expanded from
    ``env``. None when the container has none.

    Args:
        path: the container's key path for messages (``spec.containers[0]``).
        source: what the container came from (``pod 'ns/name'``).

    Raises:
        ConfigError: the probe is invalid, naming ``source``, the field and the allowed values.
    """
    p = Problems(source)
    probe = (_liveness(container, path, env, p, http_only=False) if key == "livenessProbe"
             else _probe(container, key, path, env, p, http_only=False))
    p.raise_if_any()
    return None if probe is _BAD else probe


def _selector(spec: Mapping[str, Any], p: Problems) -> Mapping[str, str]:
    node = spec.get("selector", MISSING)
    data = _read.mapping(node, "spec.selector", p, "a mapping with 'matchLabels'") if node is not MISSING else None
    if node is MISSING:
        p.add("spec.selector", node, "a mapping with 'matchLabels'", "add selector: {matchLabels: {app: ...}}")
    if data is None:
        return MappingProxyType({})
    p.unknown_keys(data, "spec.selector", ("matchLabels", "matchExpressions"))
    labels = _read.mapping(data.get("matchLabels", {}), "spec.selector.matchLabels", p)
    return MappingProxyType(dict(labels or {}))


def _pod_spec(spec: Mapping[str, Any], p: Problems
              ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any], Mapping[str, Any]]:
    template = _read.mapping(spec.get("template", MISSING), "spec.template", p, "a pod template mapping")
    if template is None:
        return None, {}, {}
    p.unknown_keys(template, "spec.template", ("metadata", "spec"))
    meta = _read.mapping(template.get("metadata", {}), "spec.template.metadata", p) or {}
    labels = _read.mapping(meta.get("labels", {}), "spec.template.metadata.labels", p) or {}
    annotations = _read.mapping(meta.get("annotations", {}), "spec.template.metadata.annotations", p) or {}
    pod = _read.mapping(template.get("spec", MISSING), "spec.template.spec", p, "a pod spec mapping")
    if pod is not None:
        p.unknown_keys(pod, "spec.template.spec", POD_SPEC_KEYS)
    return pod, labels, annotations


def _container_part(pod: Mapping[str, Any], annotations: Mapping[str, Any], p: Problems) -> dict[str, Any] | None:
    """Pick the consumer container and read its argv, env, probe, request and the grace period."""
    path = "spec.template.spec"
    grace = _read.integer(pod, "terminationGracePeriodSeconds", path, p, default=30, lo=0, unit="seconds")
    containers = _read.sequence(pod, "containers", path, p, required=True) or []
    chosen = _choose_container(containers, p)
    if chosen is None:
        return None
    cpath, container = chosen
    p.unknown_keys(container, cpath, CONTAINER_KEYS)
    env = _env(container, cpath, p)
    raw = tuple(str(a) for a in _argv(container, cpath, p))
    argv = tuple(_expand(a, env) for a in raw)
    if argv and program_end(argv) is None:
        command = _command_consumer(container, cpath, env, raw, annotations, p)
        readiness = _probe(container, "readinessProbe", cpath, env, p, http_only=False)
        liveness = _liveness(container, cpath, env, p, http_only=False)
        if command is None or grace is None or readiness is _BAD or liveness is _BAD:
            return None
        return dict(container_name=str(container.get("name", "")), image=str(container.get("image", "")),
                    argv=argv, env=MappingProxyType(env), replica=None, command=command,
                    readiness=readiness, liveness=liveness, termination_grace_period_s=grace,
                    cpu_request_millicores=_cpu_request(container, cpath, p))
    replica = collect_replica_args(argv, join(cpath, "args"), p)
    readiness = _readiness(container, cpath, env, p)
    liveness = _liveness(container, cpath, env, p)
    if replica is not None and grace is not None and grace <= replica.drain_timeout_s:
        p.add(join(path, "terminationGracePeriodSeconds"), grace,
              f"an integer > --drain-timeout ({replica.drain_timeout_s:g} seconds)",
              f"set it to at least {int(replica.drain_timeout_s) + 10} so the drain ends before SIGKILL")
    for key, probe in (("readinessProbe", readiness), ("livenessProbe", liveness)):
        if replica is not None and isinstance(probe, HttpProbe) and probe.port != replica.metrics_port:
            p.add(f"{cpath}.{key}.httpGet.port", probe.port,
                  f"the --metrics-port ({replica.metrics_port})", f"set the probe port to {replica.metrics_port}")
    if replica is None or readiness is None or grace is None or liveness is _BAD:
        return None
    return dict(container_name=str(container.get("name", "")), image=str(container.get("image", "")),
                argv=argv, env=MappingProxyType(env), replica=replica, readiness=readiness, liveness=liveness,
                termination_grace_period_s=grace, cpu_request_millicores=_cpu_request(container, cpath, p))


def _command_consumer(container: Mapping[str, Any], cpath: str, env: Mapping[str, str], raw: tuple[str, ...],
                      annotations: Mapping[str, Any], p: Problems) -> CommandConsumer | None:
    """The command consumer's topic, group and local port variable, from its env."""
    missing = [name for name in CONNECTION_ENV if not env.get(name)]
    if missing:
        p.add(join(cpath, "env"), sorted(env), f"an env entry with a literal value for each of {', '.join(CONNECTION_ENV)}",
              f"add {', '.join(missing)} (the harness gives the consumer its broker, topic and group through them)")
        return None
    port_env = annotations.get(LOCAL_PORT_ANNOTATION)
    port = None
    if port_env is not None:
        apath = f"spec.template.metadata.annotations[{LOCAL_PORT_ANNOTATION}]"
        declared = {int(item["containerPort"]) for item in container.get("ports") or []
                    if isinstance(item, Mapping) and isinstance(item.get("containerPort"), int)}
        value = env.get(str(port_env), "")
        if not value.isdigit() or int(value) not in declared:
            p.add(apath, port_env, "the name of an env variable whose value is one of the container's "
                  f"containerPorts ({', '.join(map(str, sorted(declared))) or 'none declared'})",
                  "add the variable, e.g. {name: METRICS_PORT, value: '9400'}, and use $(METRICS_PORT) in args")
            return None
        port_env, port = str(port_env), int(value)
    return CommandConsumer(topic=env["KAFKA_TOPIC"], group=env["KAFKA_GROUP"], raw_args=raw,
                           port_env=port_env, port=port, output_topic=env.get(OUTPUT_TOPIC_ENV) or None)


def _choose_container(containers: list[Any], p: Problems) -> tuple[str, Mapping[str, Any]] | None:
    base = "spec.template.spec.containers"
    found = []
    for i, item in enumerate(containers):
        data = _read.mapping(item, index(base, i), p)
        if data is not None:
            argv = [str(a) for a in (data.get("command") or []) + (data.get("args") or [])]
            if "spark_consumer" in " ".join(argv) or "spark-consumer" in " ".join(argv) or len(containers) == 1:
                found.append((index(base, i), data))
    if containers and not found:
        p.add(base, [c.get("name") for c in containers if isinstance(c, Mapping)],
              "a container running 'python -m spark_consumer'", "set the consumer container's command")
    return found[0] if found else None


def _argv(container: Mapping[str, Any], path: str, p: Problems) -> list[Any]:
    out = []
    for key in ("command", "args"):
        items = _read.sequence(container, key, path, p) or []
        for i, item in enumerate(items):
            if not isinstance(item, str):
                p.add(index(join(path, key), i), item, "a string", f"quote it: '{item}'")
        out.extend(items)
    if not out:
        p.add(join(path, "command"), MISSING, "the replica program, e.g. ['python', '-m', 'spark_consumer']",
              "add command: [python, -m, spark_consumer]")
    return out


def _env(container: Mapping[str, Any], path: str, p: Problems) -> dict[str, str]:
    env: dict[str, str] = {}
    for i, item in enumerate(_read.sequence(container, "env", path, p) or []):
        sub = index(join(path, "env"), i)
        data = _read.mapping(item, sub, p)
        if data is None:
            continue
        p.unknown_keys(data, sub, ("name", "value", "valueFrom"))
        name = _read.string(data, "name", sub, p)
        value = data.get("value")
        if name is not None and isinstance(value, str):
            env[name] = _expand(value, env)
        elif name is not None and "valueFrom" not in data:
            p.add(join(sub, "value"), value, "a string", f"quote it: '{value}'")
    return env


def _expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion; ``$$`` escapes, unknown references stay as written."""
    return _VAR_REF.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)


_BAD = object()
"""A probe that is present but invalid (its problems are recorded)."""
_PROBE_NUMBERS = (("initial_delay_s", "initialDelaySeconds", 0, 0),  # (field, key, k8s default, minimum)
                  ("period_s", "periodSeconds", 10, 1),
                  ("timeout_s", "timeoutSeconds", 1, 1),
                  ("success_threshold", "successThreshold", 1, 1),
                  ("failure_threshold", "failureThreshold", 3, 1))


def _readiness(container: Mapping[str, Any], path: str, env: Mapping[str, str], p: Problems) -> ReadinessProbe | None:
    """The replica program's readiness probe (required, ``httpGet``); None when missing or bad."""
    if "readinessProbe" not in container:
        p.add(join(path, "readinessProbe"), MISSING, "an httpGet probe on /ready",
              "add readinessProbe: {httpGet: {path: /ready, port: metrics}}")
        return None
    probe = _probe(container, "readinessProbe", path, env, p)
    return None if probe is _BAD else probe


def _probe(container: Mapping[str, Any], key: str, path: str, env: Mapping[str, str], p: Problems, *,
           http_only: bool = True) -> Any:
    """The readiness probe at ``key``; None when absent, :data:`_BAD` when invalid."""
    sub = join(path, key)
    node = container.get(key, MISSING)
    if node is MISSING:
        return None
    fields = _probe_fields(node, sub, container, env, p, http_only=http_only)
    return _BAD if fields is None else ReadinessProbe(**fields)


def _liveness(container: Mapping[str, Any], path: str, env: Mapping[str, str], p: Problems, *,
              http_only: bool = True) -> Any:
    """The liveness probe; None when the container has none, :data:`_BAD` when it is invalid."""
    sub = join(path, "livenessProbe")
    node = container.get("livenessProbe", MISSING)
    if node is MISSING:
        return None
    fields = _probe_fields(node, sub, container, env, p, liveness=True, http_only=http_only)
    if fields is None:
        return _BAD
    grace = _read.integer(node, "terminationGracePeriodSeconds", sub, p, default=None, lo=1, unit="seconds")
    if "terminationGracePeriodSeconds" in node and grace is None:
        return _BAD
    return LivenessProbe(**fields, termination_grace_period_s=grace)


def _probe_fields(node: Any, sub: str, container: Mapping[str, Any], env: Mapping[str, str], p: Problems, *,
                  liveness: bool = False, http_only: bool = True) -> dict[str, Any] | None:
    """The fields of the probe at ``sub`` (Kubernetes defaults filled), or None."""
    probe = _read.mapping(node, sub, p)
    if probe is None:
        return None
    p.unknown_keys(probe, sub, PROBE_KEYS)
    example = "{path: /healthz, port: metrics}" if liveness else "{path: /ready, port: metrics}"
    kinds = [key for key in PROBE_KINDS if key in probe]
    if http_only and "httpGet" not in probe:
        other = next((key for key in ("exec", "tcpSocket", "grpc") if key in probe), None)
        p.add(join(sub, "httpGet"), MISSING, "an httpGet probe (the harness runs HTTP probes only)",
              f"replace {other} with httpGet: {example}" if other else f"add httpGet: {example}")
        return None
    if len(kinds) != 1:
        p.add(sub, sorted(k for k in probe if k in (*PROBE_KINDS, "grpc")),
              "exactly one of httpGet, tcpSocket or exec", f"e.g. httpGet: {example}")
        return None
    kind = kinds[0]
    numbers = {name: _read.integer(probe, key, sub, p, default=default, lo=lo, unit="seconds" if "Seconds" in key else "")
               for name, key, default, lo in _PROBE_NUMBERS}
    if liveness and numbers["success_threshold"] not in (None, 1):
        p.add(join(sub, "successThreshold"), numbers["success_threshold"], "1 (Kubernetes requires 1 for a liveness probe)",
              "set successThreshold: 1 or leave it out")
        numbers["success_threshold"] = None
    action = _read.mapping(probe[kind], join(sub, kind), p, f"a {kind} mapping")
    if action is None or None in numbers.values():
        return None
    kpath = join(sub, kind)
    if kind == "exec":
        p.unknown_keys(action, kpath, ("command",))
        command = _read.sequence(action, "command", kpath, p, required=True) or []
        if not command or not all(isinstance(c, str) for c in command):
            p.add(join(kpath, "command"), command or MISSING, "a non-empty list of strings", "e.g. command: [cat, /tmp/ready]")
            return None
        return dict(path="", port=0, kind=kind, command=tuple(_expand(c, env) for c in command), **numbers)
    keys = ("path", "port", "host", "scheme", "httpHeaders") if kind == "httpGet" else ("port", "host")
    p.unknown_keys(action, kpath, keys)
    url = _read.string(action, "path", kpath, p, default="/") if kind == "httpGet" else ""
    port = _probe_port(action.get("port", MISSING), container, join(kpath, "port"), p)
    if port is None or url is None:
        return None
    return dict(path=url, port=port, kind=kind, **numbers)


def _probe_port(value: Any, container: Mapping[str, Any], path: str, p: Problems) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return value
    if isinstance(value, str):
        for item in container.get("ports") or []:
            if isinstance(item, Mapping) and item.get("name") == value and isinstance(item.get("containerPort"), int):
                return int(item["containerPort"])
    p.add(path, value, "a port number in [1, 65535] or the name of a container port",
          "use the metrics port, e.g. 9400")
    return None


def _cpu_request(container: Mapping[str, Any], path: str, p: Problems) -> int | None:
    resources = container.get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    value = requests.get("cpu") if isinstance(requests, Mapping) else None
    if value is None:
        return None
    text = str(value)
    match = _CPU.fullmatch(text) if not isinstance(value, bool) else None
    if match is None:
        p.add(f"{path}.resources.requests.cpu", value, "a CPU quantity such as '500m' or '1'",
              "write millicores as '500m' or cores as '1'")
        return None
    number = float(match.group(1))
    return round(number if match.group(2) else number * 1000)
