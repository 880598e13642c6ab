"""The kubelet node's files and command lines (pure): containerd, the kubelet, kube-scheduler.

A run with ``--node kubelet`` (docs/kubernetes.md "The kubelet node") runs its pods as
containers: containerd 1.6 with runc (Debian's packages) serves the CRI, the kubelet v1.36.3
built from the Kubernetes pin registers one Node and runs the pods, kube-scheduler binds them.
Given where things go (:class:`NodeLayout`), this module writes nothing: it returns
containerd's ``config.toml`` text, the CNI network list, the ``KubeletConfiguration`` and the
three :class:`~.commands.Command` values; :mod:`.kubelet_node` writes and runs them.

Every address stays on loopback: pods use ``hostNetwork: true`` and the node's network is made
ready by a CNI list with only the ``loopback`` plugin (no bridge, no iptables chains). A node
that stands in for a cluster with a pod network (``lagscale kube up --node kubelet``) uses the
``bridge`` network instead: pods get addresses of :data:`BRIDGE_SUBNET` and reach this host at
:data:`BRIDGE_GATEWAY` (no NAT, no iptables chains: nothing leaves the bridge). Paths
holding sockets are short (a unix socket path has at most 107 bytes), so containerd's state
and the kubelet's root live under :attr:`NodeLayout.state_dir` (``/run/lagscale/<run id>``).

Source: containerd v1.6 docs/cri/config.md (``restrict_oom_score_adj``: root here lacks
CAP_SYS_RESOURCE, so runc cannot set the sandbox's -998); kubernetes
staging/src/k8s.io/kubelet/config/v1beta1/types.go v1.36.3 (``failCgroupV1``,
``makeIPTablesUtilChains``, ``containerRuntimeEndpoint``); kubernetes cmd/kube-scheduler
options v1.36.3; containernetworking/plugins v1.1.1 plugins/main/loopback, plugins/main/bridge
(``isGateway``, ``ipMasq``) and plugins/ipam/host-local (``ranges``, ``dataDir``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .certs import LOOPBACK_IP, NODE_NAME, Pki
from .commands import Command, Readiness, _flags

#: Where Debian's containernetworking-plugins installs the CNI plugins.
CNI_BIN_DIR = Path("/usr/lib/cni")
#: The sandbox image, built here from ``data/kube/pause/pause.c`` (:mod:`.images`).
SANDBOX_IMAGE = "lagscale.local/pause:1"
#: The CNI network of the node: loopback only (pods share the host's network).
CNI_NETWORK = "lagscale-loopback"
#: The node's pod networks: ``loopback`` (hostNetwork pods, a run's node) or ``bridge``.
POD_NETWORKS = ("loopback", "bridge")
#: The bridge network's Linux bridge, its subnet and this host's address on it (one kubelet
#: node per host, so one name serves).
BRIDGE_NAME = "lagscale0"
BRIDGE_SUBNET = "10.244.0.0/24"
BRIDGE_GATEWAY = "10.244.0.1"


@dataclass(frozen=True)
class NodeLayout:
    """Where one run's kubelet node lives.

    Attributes:
        node_dir: ``<run>/kube/node``: configuration files and logs.
        state_dir: a short directory for sockets and state (``/run/lagscale/<run id>``):
            containerd's state and socket, the kubelet's root and certificate directory.
        containerd_root: containerd's root (content store, snapshots): the per-user cache, so
            images are imported once per machine.
        kubelet_port, kubelet_healthz_port, scheduler_port: loopback ports.
        cni_bin_dir: the CNI plugins' directory.
        node_name: the Node's name.
        sandbox_image: the pause image's reference.
    """

    node_dir: Path
    state_dir: Path
    containerd_root: Path
    kubelet_port: int
    kubelet_healthz_port: int
    scheduler_port: int
    cni_bin_dir: Path = CNI_BIN_DIR
    node_name: str = NODE_NAME
    sandbox_image: str = SANDBOX_IMAGE

    @property
    def containerd_state(self) -> Path:
        return self.state_dir / "containerd"

    @property
    def socket(self) -> Path:
        """containerd's gRPC socket (the kubelet's CRI endpoint)."""
        return self.state_dir / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.state_dir / "kubelet"

    @property
    def cni_conf_dir(self) -> Path:
        return self.node_dir / "cni"

    @property
    def containerd_config_path(self) -> Path:
        return self.node_dir / "containerd.toml"

    @property
    def kubelet_config_path(self) -> Path:
        return self.node_dir / "kubelet.yaml"


def _toml_string(value: str | Path) -> str:
    return json.dumps(str(value))  # a TOML basic string is a JSON string for these paths


def containerd_config(layout: NodeLayout) -> str:
    """containerd's ``config.toml`` (version 2) for the node: its own root, state and socket,
    the CRI plugin with runc under the cgroupfs driver, the overlayfs snapshotter, the local
    pause image and the loopback-only CNI directory."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return "\n".join([
        "version = 2",
        f"root = {_toml_string(layout.containerd_root)}",
        f"state = {_toml_string(layout.containerd_state)}",
        "[grpc]",
        f"  address = {_toml_string(layout.socket)}",
        "[ttrpc]",
        f"  address = {_toml_string(str(layout.socket) + '.ttrpc')}",
        f"[{cri}]",
        f"  sandbox_image = {_toml_string(layout.sandbox_image)}",
        "  restrict_oom_score_adj = true",
        f"  stream_server_address = {_toml_string(LOOPBACK_IP)}",
        f"[{cri}.containerd]",
        '  snapshotter = "overlayfs"',
        '  default_runtime_name = "runc"',
        f"[{cri}.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        f"[{cri}.containerd.runtimes.runc.options]",
        "  SystemdCgroup = false",
        f"[{cri}.cni]",
        f"  bin_dir = {_toml_string(layout.cni_bin_dir)}",
        f"  conf_dir = {_toml_string(layout.cni_conf_dir)}",
        "",
    ])


def cni_conflist(network: str = "loopback", ipam_dir: Path | None = None) -> dict[str, Any]:
    """The node's CNI network list: the ``loopback`` plugin alone (NetworkReady, no bridge), or
    the ``bridge`` plugin on :data:`BRIDGE_NAME` with host-local addresses of
    :data:`BRIDGE_SUBNET` kept in ``ipam_dir`` (no masquerade).

    Raises:
        ValueError: ``network`` not in :data:`POD_NETWORKS`, or bridge without ``ipam_dir``.
    """
    if network == "loopback":
        return {"cniVersion": "1.0.0", "name": CNI_NETWORK, "plugins": [{"type": "loopback"}]}
    if network != "bridge" or ipam_dir is None:
        raise ValueError(f"pod network {network!r}: one of {', '.join(POD_NETWORKS)} (bridge "
                         "needs an ipam_dir)")
    return {"cniVersion": "1.0.0", "name": "lagscale-bridge", "plugins": [{
        "type": "bridge", "bridge": BRIDGE_NAME, "isGateway": True, "ipMasq": False,
        "ipam": {"type": "host-local", "dataDir": str(ipam_dir),
                 "ranges": [[{"subnet": BRIDGE_SUBNET, "gateway": BRIDGE_GATEWAY}]]}}]}


def kubelet_config(layout: NodeLayout, pki: Pki) -> dict[str, Any]:
    """The ``KubeletConfiguration`` (kubelet.config.k8s.io/v1beta1) of the node.

    cgroupfs driver and ``failCgroupV1: false`` (this host has cgroup v1), no iptables chains,
    listeners on loopback, client certificates of the run's CA accepted on its API (anonymous
    off), no eviction on disk or memory thresholds (a run's pods are never evicted for the
    harness's own use of the disk), image garbage collection off (the replica image stays).
    """
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "makeIPTablesUtilChains": False,
        "containerRuntimeEndpoint": f"unix://{layout.socket}",
        "address": LOOPBACK_IP,
        "port": layout.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": LOOPBACK_IP,
        "healthzPort": layout.kubelet_healthz_port,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(pki.crt("ca"))}},
        "authorization": {"mode": "AlwaysAllow"},
        "failSwapOn": False,
        "resolvConf": "",
        "evictionHard": {"memory.available": "0%", "nodefs.available": "0%",
                         "imagefs.available": "0%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "syncFrequency": "1s",
        "fileCheckFrequency": "20s",
        "nodeStatusUpdateFrequency": "2s",
    }


def containerd_command(layout: NodeLayout, binary: str = "containerd") -> Command:
    """containerd with the node's config; ready when its socket answers (checked by
    :mod:`.kubelet_node` through ``ctr version``: no HTTP endpoint)."""
    return Command("containerd", (binary, "--config", str(layout.containerd_config_path)))


def kubelet_command(layout: NodeLayout, binary: str, kubeconfig: str | Path) -> Command:
    """The kubelet: registers :attr:`NodeLayout.node_name` with the run's apiserver; ready when
    its ``/healthz`` on loopback says ``ok``."""
    argv = [binary] + _flags([
        ("config", layout.kubelet_config_path), ("kubeconfig", kubeconfig),
        ("root-dir", layout.kubelet_root), ("cert-dir", layout.kubelet_root / "pki"),
        ("hostname-override", layout.node_name), ("v", 1),
    ])
    return Command("kubelet", tuple(argv), readiness=Readiness(
        f"http://{LOOPBACK_IP}:{layout.kubelet_healthz_port}/healthz", body="ok"))


def scheduler_command(layout: NodeLayout, binary: str, kubeconfig: str | Path, pki: Pki) -> Command:
    """kube-scheduler (one instance, no leader election) on loopback, authenticating as
    ``system:kube-scheduler``; ready when its ``/healthz`` says ``ok``."""
    argv = [binary] + _flags([
        ("kubeconfig", kubeconfig), ("authentication-kubeconfig", kubeconfig),
        ("authorization-kubeconfig", kubeconfig), ("leader-elect", "false"),
        ("bind-address", LOOPBACK_IP), ("secure-port", layout.scheduler_port),
        ("tls-cert-file", pki.crt("scheduler")), ("tls-private-key-file", pki.key("scheduler")),
        ("profiling", "false"),
    ])
    return Command("kube-scheduler", tuple(argv), readiness=Readiness(
        f"https://{LOOPBACK_IP}:{layout.scheduler_port}/healthz", ca=pki.crt("ca"), body="ok"))
