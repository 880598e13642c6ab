"""The kubelet node's configuration (pure): containerd's TOML, the CNI list, the
KubeletConfiguration and the command lines, as the node's parts read them."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

import pytest

from pytest_lagscale.kube import certs
from pytest_lagscale.kube import node_commands as nc


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> certs.Pki:
    return certs.generate(tmp_path_factory.mktemp("pki"), dt.datetime.now(dt.timezone.utc))


def _layout(tmp_path: Path) -> nc.NodeLayout:
    return nc.NodeLayout(node_dir=tmp_path / "kube" / "node", state_dir=Path("/run/lagscale/abc123"),
                         containerd_root=tmp_path / "cache" / "containerd", kubelet_port=41001,
                         kubelet_healthz_port=41002, scheduler_port=41003)


def test_containerd_config_is_toml_with_the_runs_root_state_socket_and_cri_settings(tmp_path) -> None:
    layout = _layout(tmp_path)
    doc = tomllib.loads(nc.containerd_config(layout))
    assert (doc["version"], doc["root"], doc["state"]) == (
        2, str(tmp_path / "cache" / "containerd"), "/run/lagscale/abc123/containerd")
    assert doc["grpc"]["address"] == "/run/lagscale/abc123/containerd.sock"
    cri = doc["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == nc.SANDBOX_IMAGE
    assert cri["restrict_oom_score_adj"] is True  # root here lacks CAP_SYS_RESOURCE
    assert cri["containerd"]["snapshotter"] == "overlayfs"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert cri["cni"] == {"bin_dir": "/usr/lib/cni", "conf_dir": str(layout.cni_conf_dir)}
    assert len(str(layout.socket)) < 108, "a unix socket path has at most 107 bytes"


def test_the_cni_list_is_loopback_only() -> None:
    assert nc.cni_conflist()["plugins"] == [{"type": "loopback"}]


def test_kubelet_config_on_this_cgroup_v1_host_without_iptables_on_loopback(tmp_path, pki) -> None:
    layout = _layout(tmp_path)
    doc = nc.kubelet_config(layout, pki)
    assert (doc["cgroupDriver"], doc["failCgroupV1"], doc["makeIPTablesUtilChains"]) == (
        "cgroupfs", False, False)
    assert doc["containerRuntimeEndpoint"] == "unix:///run/lagscale/abc123/containerd.sock"
    assert (doc["address"], doc["port"], doc["healthzPort"], doc["readOnlyPort"]) == (
        "127.0.0.1", 41001, 41002, 0)
    assert doc["authentication"]["anonymous"] == {"enabled": False}
    assert doc["authentication"]["x509"]["clientCAFile"] == str(pki.crt("ca"))


def test_command_lines_name_the_runs_files_and_loopback_health_checks(tmp_path, pki) -> None:
    layout = _layout(tmp_path)
    kubelet = nc.kubelet_command(layout, "/bin/kubelet", "/k/kubelet.kubeconfig")
    assert "--root-dir=/run/lagscale/abc123/kubelet" in kubelet.argv
    assert f"--hostname-override={certs.NODE_NAME}" in kubelet.argv
    assert kubelet.readiness.url == "http://127.0.0.1:41002/healthz"
    scheduler = nc.scheduler_command(layout, "/bin/kube-scheduler", "/k/s.kubeconfig", pki)
    assert "--leader-elect=false" in scheduler.argv and "--secure-port=41003" in scheduler.argv
    assert scheduler.readiness.url == "https://127.0.0.1:41003/healthz"
    assert nc.containerd_command(layout).argv == (
        "containerd", "--config", str(layout.containerd_config_path))


def test_the_kubelets_identity_is_its_node_in_system_nodes_and_masters() -> None:
    spec = {s.stem: s for s in certs.leaf_specs()}["kubelet"]
    assert spec.common_name == f"system:node:{certs.NODE_NAME}"
    assert set(spec.organizations) == {"system:nodes", "system:masters"}


def test_the_bridge_network_gives_pods_addresses_on_the_gateway_subnet(tmp_path) -> None:
    conf = nc.cni_conflist("bridge", tmp_path / "ipam")
    (plugin,) = conf["plugins"]
    assert plugin["type"] == "bridge" and plugin["bridge"] == nc.BRIDGE_NAME
    assert plugin["isGateway"] is True and plugin["ipMasq"] is False
    assert plugin["ipam"] == {"type": "host-local", "dataDir": str(tmp_path / "ipam"),
                              "ranges": [[{"subnet": nc.BRIDGE_SUBNET,
                                           "gateway": nc.BRIDGE_GATEWAY}]]}


@pytest.mark.parametrize("network, ipam", [("flannel", None), ("bridge", None)])
def test_an_unknown_network_or_a_bridge_without_its_ipam_dir_is_refused(network, ipam) -> None:
    with pytest.raises(ValueError, match="pod network"):
        nc.cni_conflist(network, ipam)
