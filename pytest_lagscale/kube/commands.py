"""The command lines of the local control plane, in start order, with their readiness checks.

Pure: given where things are (:class:`Layout`) and how fast the HPA runs (:class:`HpaTiming`),
returns one :class:`Command` per process: argv, extra environment and the HTTP check that
says it is ready. Every listener is on 127.0.0.1 (the control plane's traffic stays on the
loopback range: docs/kubernetes.md "Loopback only"), with one known exception noted on :func:`keda_adapter`.

Start order: etcd -> kube-apiserver -> kube-controller-manager -> (manifests applied: KEDA's
CRDs, namespace, ``default`` ServiceAccount, the metrics APIService) -> KEDA operator -> KEDA
metrics adapter.

Source: flag names as in kubernetes cmd/kube-apiserver/app/options and
cmd/kube-controller-manager/app/options v1.36.3 (controller names from
cmd/kube-controller-manager/names/controller_names.go); etcd server/etcdmain/help.go v3.6;
kedacore/keda cmd/operator/main.go and cmd/adapter/main.go (main of 2026-08-20, before v2.21.0)
and sigs.k8s.io/custom-metrics-apiserver's AdapterBase flags (``--lister-kubeconfig``, ...);
docs/kubernetes.md "Start order, flags and readiness" (the run-time flags and gotchas measured).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

from ..contract.errors import ConfigError
from .certs import LOOPBACK_IP, Pki

LOOPBACK = LOOPBACK_IP

#: kube-controller-manager's ``--controllers``: what a Deployment scaled by an HPA needs, the
#: serviceaccount controllers (pods are rejected without a ``default`` ServiceAccount; the
#: ServiceAccount admission plugin), the garbage collector (a deleted Deployment's
#: ReplicaSets and pods go with it between runs of one session) and the node lifecycle
#: controller (it lifts the ``node.kubernetes.io/not-ready`` taint a kubelet registers its Node
#: with once the Node is Ready; without a kubelet node there is no Node and it does nothing).
CONTROLLERS = ("deployment-controller", "replicaset-controller",
               "horizontal-pod-autoscaler-controller", "serviceaccount-controller",
               "serviceaccount-token-controller", "garbage-collector-controller",
               "node-lifecycle-controller")
#: Admission plugins enabled on top of the defaults; none of them needs a kubelet or a node.
ADMISSION_PLUGINS = ("NamespaceLifecycle", "LimitRanger", "ServiceAccount",
                     "DefaultTolerationSeconds", "ResourceQuota", "Priority")
#: An allocation range for Service ClusterIPs (required by the apiserver); nothing listens on
#: it and no Service of the harness has a ClusterIP that carries traffic.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
KEDA_NAMESPACE = "keda"


@dataclass(frozen=True)
class Ports:
    """TCP ports on 127.0.0.1, one per listener (pick free ephemeral ports per run)."""

    etcd_client: int
    etcd_peer: int
    etcd_metrics: int
    apiserver: int
    controller_manager: int
    keda_operator_metrics: int
    keda_operator_probe: int
    keda_grpc: int
    keda_adapter: int
    keda_adapter_metrics: int

    def __post_init__(self) -> None:
        problems = [f"port {f.name!r}: {getattr(self, f.name)!r} is not in 1..65535"
                    for f in fields(self) if not (isinstance(getattr(self, f.name), int)
                                                  and 1 <= getattr(self, f.name) <= 65535)]
        values = [getattr(self, f.name) for f in fields(self)]
        dupes = sorted({v for v in values if values.count(v) > 1})
        problems += [f"port {v!r}: given to " + ", ".join(
            repr(f.name) for f in fields(self) if getattr(self, f.name) == v) +
            "; give each listener its own port" for v in dupes]
        if problems:
            raise ConfigError(problems)


@dataclass(frozen=True)
class HpaTiming:
    """The HPA controller's timing, so a ci profile can compress time as the embedded one does.

    Attributes:
        sync_period_s: ``--horizontal-pod-autoscaler-sync-period`` (> 0; default 15 s).
        tolerance: ``--horizontal-pod-autoscaler-tolerance`` (0 <= t < 1; default 0.1).
        downscale_stabilization_s: ``--horizontal-pod-autoscaler-downscale-stabilization``
            (>= 0; default 300 s). A ScaledObject's ``behavior.scaleDown.
            stabilizationWindowSeconds`` overrides it for that HPA.
        initial_readiness_delay_s, cpu_initialization_period_s: the CPU-metric start-up
            windows (>= 0; defaults 30 s and 300 s).

    Source: kubernetes pkg/controller/podautoscaler/config/v1alpha1/defaults.go (defaults).
    """

    sync_period_s: float = 15.0
    tolerance: float = 0.1
    downscale_stabilization_s: float = 300.0
    initial_readiness_delay_s: float = 30.0
    cpu_initialization_period_s: float = 300.0

    def __post_init__(self) -> None:
        problems = []
        if not self.sync_period_s > 0:
            problems.append(f"'sync_period_s': {self.sync_period_s!r} must be > 0 seconds")
        if not 0 <= self.tolerance < 1:
            problems.append(f"'tolerance': {self.tolerance!r} must be in [0, 1)")
        for name in ("downscale_stabilization_s", "initial_readiness_delay_s",
                     "cpu_initialization_period_s"):
            if not getattr(self, name) >= 0:
                problems.append(f"{name!r}: {getattr(self, name)!r} must be >= 0 seconds")
        if problems:
            raise ConfigError(problems)


@dataclass(frozen=True)
class Layout:
    """Where one run's control plane lives.

    Attributes:
        run_dir: the run's ``kube/`` directory (etcd data, apiserver cert dir, logs).
        binaries: binary name (``kube-apiserver``) -> executable path.
        pki: the run's certificates.
        kubeconfigs: identity (``admin``, ``controller-manager``, ``keda-operator``,
            ``keda-adapter``) -> kubeconfig path.
        ports: the listeners.
        keda_namespace: KEDA's namespace (its cluster objects, its adapter Service).
        metrics_service_port: the port the adapter's ExternalName Service names: the metrics
            tap's when one runs (:mod:`.metrics_tap`), else None (the adapter's own port).
    """

    run_dir: Path
    binaries: Mapping[str, Path]
    pki: Pki
    kubeconfigs: Mapping[str, Path]
    ports: Ports
    keda_namespace: str = KEDA_NAMESPACE
    metrics_service_port: int | None = None

    def binary(self, name: str) -> str:
        """The executable of ``name``.

        Raises:
            ConfigError: ``name`` is not in :attr:`binaries`.
        """
        if name not in self.binaries:
            raise ConfigError(f"binary {name!r}: not built; known: {', '.join(sorted(self.binaries))}; "
                              "run scripts/bootstrap --with-kube")
        return str(self.binaries[name])

    def kubeconfig(self, identity: str) -> str:
        """The kubeconfig path of ``identity`` (raises ConfigError when unknown)."""
        if identity not in self.kubeconfigs:
            raise ConfigError(f"kubeconfig {identity!r}: not one of {', '.join(sorted(self.kubeconfigs))}")
        return str(self.kubeconfigs[identity])


@dataclass(frozen=True)
class Readiness:
    """An HTTP(S) GET that answers 200 when the process is ready.

    Attributes:
        url: what to GET.
        ca: CA file verifying an https server (``None`` for http).
        client: certificate stem presenting a client certificate (``None``: none).
        body: expected response body after stripping whitespace (``None``: any).
    """

    url: str
    ca: Path | None = None
    client: str | None = None
    body: str | None = None


@dataclass(frozen=True)
class Command:
    """One process of the control plane."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    readiness: Readiness | None = None


def go_duration(seconds: float) -> str:
    """A Go ``time.ParseDuration`` string: ``15.0`` -> ``"15s"``, ``0.5`` -> ``"0.5s"``."""
    return f"{seconds:g}s"


def _flags(pairs: list[tuple[str, object]]) -> list[str]:
    return [f"--{k}={v}" for k, v in pairs]


def etcd(layout: Layout) -> Command:
    """etcd: one member, TLS with client-certificate auth for clients, plain loopback peer URL.

    ``--unsafe-no-fsync``: the data is thrown away with the run. Ready when
    ``/health`` on the metrics listener says ``"health":"true"``.
    """
    p, pki = layout.ports, layout.pki
    client = f"https://{LOOPBACK}:{p.etcd_client}"
    peer = f"http://{LOOPBACK}:{p.etcd_peer}"
    argv = [layout.binary("etcd")] + _flags([
        ("name", "lagscale"), ("data-dir", layout.run_dir / "etcd"),
        ("listen-client-urls", client), ("advertise-client-urls", client),
        ("listen-peer-urls", peer), ("initial-advertise-peer-urls", peer),
        ("initial-cluster", f"lagscale={peer}"), ("initial-cluster-state", "new"),
        ("listen-metrics-urls", f"http://{LOOPBACK}:{p.etcd_metrics}"),
        ("cert-file", pki.crt("etcd")), ("key-file", pki.key("etcd")),
        ("trusted-ca-file", pki.crt("ca")), ("client-cert-auth", "true"),
        ("unsafe-no-fsync", "true"), ("log-level", "warn"),
    ])
    return Command("etcd", tuple(argv),
                   readiness=Readiness(f"http://{LOOPBACK}:{p.etcd_metrics}/health"))


def kube_apiserver(layout: Layout) -> Command:
    """kube-apiserver on 127.0.0.1 with the aggregation layer on.

    ``--advertise-address`` is loopback, so ``--endpoint-reconciler-type=none`` (otherwise
    the ``kubernetes`` Endpoints reconciler logs an error every 10 s, measured on v1.36.3). The
    aggregation layer: front-proxy client certificate and ``--requestheader-*``; no
    ``--enable-aggregator-routing``: with it the aggregator resolves a Service through its
    endpoints and refuses an ExternalName ("unsupported service type", measured on v1.36.3;
    k8s.io/apiserver pkg/util/proxy ``ResolveEndpoint``), without it ``ResolveCluster`` turns
    the ExternalName into ``https://localhost:<port>`` (docs/kubernetes.md). Ready when
    ``/readyz`` says ``ok``.
    """
    p, pki = layout.ports, layout.pki
    url = f"https://{LOOPBACK}:{p.apiserver}"
    argv = [layout.binary("kube-apiserver")] + _flags([
        ("advertise-address", LOOPBACK), ("bind-address", LOOPBACK), ("secure-port", p.apiserver),
        ("endpoint-reconciler-type", "none"),
        ("cert-dir", layout.run_dir / "apiserver"),
        ("etcd-servers", f"https://{LOOPBACK}:{p.etcd_client}"),
        ("etcd-cafile", pki.crt("ca")), ("etcd-certfile", pki.crt("apiserver-etcd-client")),
        ("etcd-keyfile", pki.key("apiserver-etcd-client")),
        ("tls-cert-file", pki.crt("apiserver")), ("tls-private-key-file", pki.key("apiserver")),
        ("client-ca-file", pki.crt("ca")),
        ("anonymous-auth", "false"), ("authorization-mode", "RBAC"),
        ("service-account-issuer", url), ("service-account-key-file", pki.sa_pub),
        ("service-account-signing-key-file", pki.sa_key),
        ("service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE),
        ("enable-admission-plugins", ",".join(ADMISSION_PLUGINS)),
        ("requestheader-client-ca-file", pki.crt("front-proxy-ca")),
        ("requestheader-allowed-names", "front-proxy-client"),
        ("requestheader-username-headers", "X-Remote-User"),
        ("requestheader-group-headers", "X-Remote-Group"),
        ("requestheader-extra-headers-prefix", "X-Remote-Extra-"),
        ("proxy-client-cert-file", pki.crt("front-proxy-client")),
        ("proxy-client-key-file", pki.key("front-proxy-client")),
        ("profiling", "false"),
    ])
    return Command("kube-apiserver", tuple(argv), readiness=Readiness(
        f"{url}/readyz", ca=pki.crt("ca"), client="admin", body="ok"))


def kube_controller_manager(layout: Layout, timing: HpaTiming) -> Command:
    """kube-controller-manager with :data:`CONTROLLERS` and ``timing``'s HPA flags.

    Each controller uses its own service account's token (``--use-service-account-
    credentials``), so the HPA reads external metrics as
    ``system:serviceaccount:kube-system:horizontal-pod-autoscaler``, which the bootstrap RBAC
    policy allows. Ready when ``/healthz`` (always allowed) says ``ok``.
    """
    p, pki = layout.ports, layout.pki
    kc = layout.kubeconfig("controller-manager")
    argv = [layout.binary("kube-controller-manager")] + _flags([
        ("kubeconfig", kc), ("authentication-kubeconfig", kc), ("authorization-kubeconfig", kc),
        ("bind-address", LOOPBACK), ("secure-port", p.controller_manager),
        ("tls-cert-file", pki.crt("controller-manager")),
        ("tls-private-key-file", pki.key("controller-manager")),
        ("leader-elect", "false"),
        ("controllers", ",".join(CONTROLLERS)),
        ("use-service-account-credentials", "true"),
        ("service-account-private-key-file", pki.sa_key), ("root-ca-file", pki.crt("ca")),
        ("horizontal-pod-autoscaler-sync-period", go_duration(timing.sync_period_s)),
        ("horizontal-pod-autoscaler-tolerance", f"{timing.tolerance:g}"),
        ("horizontal-pod-autoscaler-downscale-stabilization",
         go_duration(timing.downscale_stabilization_s)),
        ("horizontal-pod-autoscaler-initial-readiness-delay",
         go_duration(timing.initial_readiness_delay_s)),
        ("horizontal-pod-autoscaler-cpu-initialization-period",
         go_duration(timing.cpu_initialization_period_s)),
        ("profiling", "false"),
    ])
    return Command("kube-controller-manager", tuple(argv), readiness=Readiness(
        f"https://{LOOPBACK}:{p.controller_manager}/healthz", ca=pki.crt("ca"), body="ok"))


def keda_env(layout: Layout, identity: str) -> dict[str, str]:
    """KEDA outside a cluster: watch all namespaces, its objects in :attr:`Layout.keda_namespace`.

    Source: keda pkg/util/watch.go ``GetWatchNamespaces`` (``WATCH_NAMESPACE``, "" = all),
    pkg/util/env_resolver.go ``GetClusterObjectNamespace`` / ``GetPodNamespace``.
    """
    return {"WATCH_NAMESPACE": "", "KEDA_CLUSTER_OBJECT_NAMESPACE": layout.keda_namespace,
            "POD_NAMESPACE": layout.keda_namespace, "KUBECONFIG": layout.kubeconfig(identity)}


def keda_operator(layout: Layout) -> Command:
    """The KEDA operator: its gRPC metrics service (mTLS, ``--cert-dir``) on 127.0.0.1.

    Certificates come from the run's PKI (``--enable-cert-rotation=false``), so KEDA patches
    no webhook or APIService. Ready when the health probe's ``/readyz`` answers 200.
    """
    p, pki = layout.ports, layout.pki
    argv = [layout.binary("keda-operator")] + _flags([
        ("leader-elect", "false"),
        ("metrics-bind-address", f"{LOOPBACK}:{p.keda_operator_metrics}"),
        ("health-probe-bind-address", f"{LOOPBACK}:{p.keda_operator_probe}"),
        ("metrics-service-bind-address", f"{LOOPBACK}:{p.keda_grpc}"),
        ("cert-dir", pki.keda_dir("keda-operator")),
        ("ca-dir", pki.keda_dir("keda-operator")),
        ("enable-cert-rotation", "false"),
        ("enable-webhook-patching", "false"), ("enable-apiservice-patching", "false"),
        ("zap-log-level", "info"), ("zap-encoder", "console"),
    ])
    return Command("keda-operator", tuple(argv), env=keda_env(layout, "keda-operator"),
                   readiness=Readiness(f"http://{LOOPBACK}:{p.keda_operator_probe}/readyz"))


def keda_adapter(layout: Layout) -> Command:
    """The KEDA metrics adapter: the external.metrics.k8s.io API server on 127.0.0.1.

    Flags as KEDA's own manifest (config/metrics-server/deployment.yaml: ``--client-ca-file``,
    ``--tls-cert-file``, ``--tls-private-key-file``, ``--cert-dir``) plus the three kubeconfigs
    a process outside the cluster needs (docs/kubernetes.md "Start order, flags and readiness").
    Its serving certificate doubles as the gRPC client certificate towards the operator (same
    ``--cert-dir``). Ready when ``/readyz`` answers ``ok`` to the admin identity; the
    APIService turns Available a moment later (its first checks meet the adapter's 401 while its
    requestheader CA loads), which ``lagscale kube up`` and a ``--kubeconfig`` run's preflight
    wait for (:func:`~.cluster.preflight`), and a run's first HPA sync outlasts.

    Known exception to loopback-only: the adapter's own Prometheus endpoint (``--port``) is
    bound as ``":<port>"`` on every interface (keda cmd/adapter/main.go ``RunMetricsServer``);
    no flag narrows it (docs/kubernetes.md, open question).
    """
    p, pki = layout.ports, layout.pki
    kc = layout.kubeconfig("keda-adapter")
    certs = pki.keda_dir("keda-adapter")
    argv = [layout.binary("keda-adapter")] + _flags([
        ("bind-address", LOOPBACK), ("secure-port", p.keda_adapter),
        ("cert-dir", certs), ("client-ca-file", certs / "ca.crt"),
        ("tls-cert-file", certs / "tls.crt"), ("tls-private-key-file", certs / "tls.key"),
        ("lister-kubeconfig", kc), ("authentication-kubeconfig", kc),
        ("authorization-kubeconfig", kc),
        ("metrics-service-address", f"{LOOPBACK}:{p.keda_grpc}"),
        ("port", p.keda_adapter_metrics),
        ("zap-log-level", "info"), ("zap-encoder", "console"),
    ])
    return Command("keda-adapter", tuple(argv), env=keda_env(layout, "keda-adapter"),
                   readiness=Readiness(f"https://{LOOPBACK}:{p.keda_adapter}/readyz",
                                       ca=pki.crt("ca"), client="admin", body="ok"))


def control_plane(layout: Layout, timing: HpaTiming) -> tuple[Command, ...]:
    """Every command in start order (the manifests go in between controller-manager and KEDA)."""
    return (etcd(layout), kube_apiserver(layout), kube_controller_manager(layout, timing),
            keda_operator(layout), keda_adapter(layout))
