"""Command lines of the local control plane and the objects applied at its start (pure)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
import yaml

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kube import commands, manifests
from pytest_lagscale.kube.certs import Pki

PORTS = commands.Ports(etcd_client=23790, etcd_peer=23800, etcd_metrics=23810, apiserver=26443,
                       controller_manager=20257, keda_operator_metrics=28080,
                       keda_operator_probe=28081, keda_grpc=29666, keda_adapter=26444,
                       keda_adapter_metrics=28082)
BINARIES = {n: Path("/bin") / n for n in ("etcd", "kube-apiserver", "kube-controller-manager",
                                           "keda-operator", "keda-adapter")}
KUBECONFIGS = {n: Path(f"/run/kube/{n}.kubeconfig")
               for n in ("admin", "controller-manager", "keda-operator", "keda-adapter")}
LAYOUT = commands.Layout(Path("/run/kube"), BINARIES, Pki(Path("/run/pki")), KUBECONFIGS, PORTS)


def _flags(cmd: commands.Command) -> dict[str, str]:
    out = {}
    for arg in cmd.argv[1:]:
        key, _, value = arg.partition("=")
        assert key.startswith("--") and key[2:] not in out, arg
        out[key[2:]] = value
    return out


def test_start_order_and_binaries():
    cmds = commands.control_plane(LAYOUT, commands.HpaTiming())
    assert [c.name for c in cmds] == ["etcd", "kube-apiserver", "kube-controller-manager",
                                      "keda-operator", "keda-adapter"]
    assert [c.argv[0] for c in cmds] == [str(BINARIES[c.name]) for c in cmds]


def test_every_address_in_every_flag_is_loopback():
    """The control plane's traffic stays on 127.0.0.0/8 (docs/kubernetes.md, "Loopback only")."""
    for cmd in commands.control_plane(LAYOUT, commands.HpaTiming()):
        for arg in cmd.argv[1:]:
            for host in re.findall(r"(?:://|=)(\d+\.\d+\.\d+\.\d+)", arg):
                assert host.startswith("127.") or arg.startswith("--service-cluster-ip-range"), arg
        if cmd.readiness:
            assert re.match(r"https?://127\.0\.0\.1:\d+/", cmd.readiness.url)


def test_apiserver_flags_of_issue_16():
    f = _flags(commands.kube_apiserver(LAYOUT))
    assert f["advertise-address"] == f["bind-address"] == "127.0.0.1"
    assert f["endpoint-reconciler-type"] == "none"
    # ResolveEndpoint (aggregator routing) refuses an ExternalName Service; ResolveCluster takes it
    assert "enable-aggregator-routing" not in f
    assert f["requestheader-client-ca-file"] == "/run/pki/front-proxy-ca.crt"
    assert f["requestheader-allowed-names"] == "front-proxy-client"
    assert f["proxy-client-cert-file"] == "/run/pki/front-proxy-client.crt"
    assert f["service-account-issuer"] == "https://127.0.0.1:26443"
    assert (f["service-account-key-file"], f["service-account-signing-key-file"]) == (
        "/run/pki/sa.pub", "/run/pki/sa.key")
    assert f["etcd-servers"] == "https://127.0.0.1:23790"
    assert "ServiceAccount" in f["enable-admission-plugins"].split(",")
    assert f["cert-dir"] == "/run/kube/apiserver"


def test_controller_manager_controllers_and_hpa_timing():
    timing = commands.HpaTiming(sync_period_s=2.0, tolerance=0.05, downscale_stabilization_s=30.0,
                                initial_readiness_delay_s=0.5, cpu_initialization_period_s=60.0)
    f = _flags(commands.kube_controller_manager(LAYOUT, timing))
    assert f["controllers"].split(",") == [
        "deployment-controller", "replicaset-controller", "horizontal-pod-autoscaler-controller",
        "serviceaccount-controller", "serviceaccount-token-controller",
        "garbage-collector-controller", "node-lifecycle-controller"]
    assert f["horizontal-pod-autoscaler-sync-period"] == "2s"
    assert f["horizontal-pod-autoscaler-tolerance"] == "0.05"
    assert f["horizontal-pod-autoscaler-downscale-stabilization"] == "30s"
    assert f["horizontal-pod-autoscaler-initial-readiness-delay"] == "0.5s"
    assert f["horizontal-pod-autoscaler-cpu-initialization-period"] == "60s"
    assert f["kubeconfig"] == f["authentication-kubeconfig"] == f["authorization-kubeconfig"]
    assert f["leader-elect"] == "false" and f["bind-address"] == "127.0.0.1"


def test_hpa_timing_defaults_are_kubernetes_defaults():
    f = _flags(commands.kube_controller_manager(LAYOUT, commands.HpaTiming()))
    assert (f["horizontal-pod-autoscaler-sync-period"], f["horizontal-pod-autoscaler-tolerance"],
            f["horizontal-pod-autoscaler-downscale-stabilization"]) == ("15s", "0.1", "300s")


def test_hpa_timing_reports_every_bad_field_at_once():
    with pytest.raises(ConfigError) as err:
        commands.HpaTiming(sync_period_s=0.0, tolerance=1.0, downscale_stabilization_s=-1.0)
    assert err.value.problems == [
        "'sync_period_s': 0.0 must be > 0 seconds",
        "'tolerance': 1.0 must be in [0, 1)",
        "'downscale_stabilization_s': -1.0 must be >= 0 seconds"]


def test_ports_must_be_valid_and_distinct():
    with pytest.raises(ConfigError) as err:
        commands.Ports(1, 1, 3, 4, 5, 6, 7, 8, 9, 70000)
    assert err.value.problems == [
        "port 'keda_adapter_metrics': 70000 is not in 1..65535",
        "port 1: given to 'etcd_client', 'etcd_peer'; give each listener its own port"]


def test_keda_processes_outside_a_cluster():
    op, ad = commands.keda_operator(LAYOUT), commands.keda_adapter(LAYOUT)
    for cmd, identity in ((op, "keda-operator"), (ad, "keda-adapter")):
        assert cmd.env == {"WATCH_NAMESPACE": "", "KEDA_CLUSTER_OBJECT_NAMESPACE": "keda",
                           "POD_NAMESPACE": "keda",
                           "KUBECONFIG": f"/run/kube/{identity}.kubeconfig"}
    f = _flags(op)
    assert f["metrics-service-bind-address"] == "127.0.0.1:29666"
    assert f["health-probe-bind-address"] == "127.0.0.1:28081"
    assert f["cert-dir"] == "/run/pki/keda-operator"
    assert f["enable-cert-rotation"] == "false"
    g = _flags(ad)
    assert g["metrics-service-address"] == "127.0.0.1:29666"
    assert {g["lister-kubeconfig"], g["authentication-kubeconfig"],
            g["authorization-kubeconfig"]} == {"/run/kube/keda-adapter.kubeconfig"}
    assert g["cert-dir"] == "/run/pki/keda-adapter"
    assert g["tls-cert-file"] == "/run/pki/keda-adapter/tls.crt"
    assert (g["bind-address"], g["secure-port"]) == ("127.0.0.1", "26444")


def test_readiness_checks():
    cmds = {c.name: c.readiness for c in commands.control_plane(LAYOUT, commands.HpaTiming())}
    assert cmds["etcd"].url == "http://127.0.0.1:23810/health"
    assert (cmds["kube-apiserver"].url, cmds["kube-apiserver"].client,
            cmds["kube-apiserver"].body) == ("https://127.0.0.1:26443/readyz", "admin", "ok")
    assert cmds["kube-controller-manager"].url == "https://127.0.0.1:20257/healthz"
    assert cmds["keda-operator"].url == "http://127.0.0.1:28081/readyz"


def test_missing_binary_names_the_bootstrap_command():
    layout = commands.Layout(Path("/r"), {}, Pki(Path("/p")), KUBECONFIGS, PORTS)
    with pytest.raises(ConfigError, match="binary 'etcd': not built; .*run scripts/bootstrap --with-kube"):
        commands.etcd(layout)


# --- manifests --------------------------------------------------------------------------------

def test_keda_crds_are_read_from_the_module_source_layout(tmp_path):
    crd_dir = manifests.keda_module_crd_dir(tmp_path, "v2.21.0")
    assert crd_dir == tmp_path / "github.com/kedacore/keda/v2@v2.21.0/config/crd/bases"
    crd_dir.mkdir(parents=True)
    for name in ("keda.sh_scaledobjects", "keda.sh_triggerauthentications"):
        plural, group = name.split("_")[1], name.split("_")[0]
        (crd_dir / f"{name}.yaml").write_text(yaml.safe_dump({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"}}, explicit_start=True))
    assert manifests.crd_names(manifests.load_crds(crd_dir)) == [
        "scaledobjects.keda.sh", "triggerauthentications.keda.sh"]


def test_load_crds_reports_missing_and_foreign_documents(tmp_path):
    with pytest.raises(ConfigError, match="no KEDA CRDs .*run scripts/bootstrap --with-kube"):
        manifests.load_crds(tmp_path)
    (tmp_path / "x.yaml").write_text("kind: Deployment\napiVersion: apps/v1\n")
    with pytest.raises(ConfigError) as err:
        manifests.load_crds(tmp_path)
    assert err.value.problems == [f"{str(tmp_path / 'x.yaml')!r}: a 'Deployment' document, not "
                                  "an apiextensions.k8s.io/v1 CustomResourceDefinition"]


def test_bootstrap_objects_route_the_metrics_api_to_localhost():
    objs = manifests.bootstrap_objects("lagscale", "keda", 26444, b"PEM")
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("Namespace", "keda"), ("Namespace", "lagscale"), ("ServiceAccount", "default"),
        ("Service", "keda-metrics-apiserver"), ("APIService", "v1beta1.external.metrics.k8s.io")]
    svc, api = objs[3]["spec"], objs[4]["spec"]
    assert svc == {"type": "ExternalName", "externalName": "localhost",
                   "ports": [{"name": "https", "port": 26444, "protocol": "TCP"}]}
    assert api["service"] == {"name": "keda-metrics-apiserver", "namespace": "keda", "port": 26444}
    assert (api["group"], api["version"]) == ("external.metrics.k8s.io", "v1beta1")
    assert base64.b64decode(api["caBundle"]) == b"PEM"
    assert objs[2]["metadata"]["namespace"] == "lagscale"
    assert len(manifests.bootstrap_objects("default", "keda", 26444, b"P")) == 4


def test_adapter_service_port_checked():
    with pytest.raises(ConfigError, match="adapter port 0: must be in 1..65535"):
        manifests.adapter_service("keda", 0)
