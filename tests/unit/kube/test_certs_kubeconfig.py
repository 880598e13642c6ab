"""Per-run certificates and kubeconfigs of the local control plane (no process started)."""

from __future__ import annotations

import datetime as dt
import stat
from ipaddress import IPv4Address

import pytest
import yaml

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kube import certs, kubeconfig

x509 = pytest.importorskip("cryptography.x509", reason="cryptography missing: pip install -e '.[kubernetes]'")
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

NOW = dt.datetime(2026, 11, 26, 4, 0, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return certs.generate(tmp_path_factory.mktemp("pki"), NOW, valid_s=3600.0)


def _load(pki, stem):
    return x509.load_pem_x509_certificate(pki.crt(stem).read_bytes())


def _sans(cert):
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    return set(ext.get_values_for_type(x509.DNSName)), set(ext.get_values_for_type(x509.IPAddress))


def _usages(cert):
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_every_leaf_is_signed_by_its_ca_and_valid_in_the_window(pki):
    for spec in certs.leaf_specs():
        cert = _load(pki, spec.stem)
        issuer = _load(pki, spec.issuer)
        cert.verify_directly_issued_by(issuer)
        assert cert.not_valid_before_utc == NOW - dt.timedelta(hours=1)
        assert cert.not_valid_after_utc == NOW + dt.timedelta(hours=1)
    ca = _load(pki, "ca")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_sans_are_loopback_only_plus_the_adapter_service_name(pki):
    for spec in certs.leaf_specs():
        dns, ips = _sans(_load(pki, spec.stem))
        assert ips <= {IPv4Address("127.0.0.1")}, spec.stem
        allowed = {"localhost"} | ({"keda-metrics-apiserver.keda.svc"}
                                   if spec.stem == "keda-adapter" else set())
        assert dns <= allowed, spec.stem
    assert _sans(_load(pki, "apiserver")) == ({"localhost"}, {IPv4Address("127.0.0.1")})
    assert "keda-metrics-apiserver.keda.svc" in _sans(_load(pki, "keda-adapter"))[0]


@pytest.mark.parametrize("stem, usages, cn, groups", [
    pytest.param("apiserver", {"server"}, "kube-apiserver", [], id="apiserver-serving"),
    pytest.param("admin", {"client"}, "lagscale-admin", ["system:masters"], id="admin-client"),
    pytest.param("controller-manager", {"server", "client"}, "system:kube-controller-manager", [],
                 id="controller-manager-both"),
    pytest.param("keda-operator", {"server", "client"}, "keda-operator", ["system:masters"],
                 id="keda-operator-grpc-mtls-both-ways"),
    pytest.param("keda-adapter", {"server", "client"}, "keda-metrics-apiserver",
                 ["system:masters"], id="keda-adapter-both"),
    pytest.param("front-proxy-client", {"client"}, "front-proxy-client", [],
                 id="front-proxy-client"),
])
def test_subjects_and_usages(pki, stem, usages, cn, groups):
    cert = _load(pki, stem)
    want = {{"server": ExtendedKeyUsageOID.SERVER_AUTH,
              "client": ExtendedKeyUsageOID.CLIENT_AUTH}[u] for u in usages}
    assert _usages(cert) == want
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] == [cn]
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == groups


def test_front_proxy_client_is_signed_by_the_front_proxy_ca_not_the_main_ca(pki):
    cert = _load(pki, "front-proxy-client")
    cert.verify_directly_issued_by(_load(pki, "front-proxy-ca"))
    with pytest.raises(Exception):
        cert.verify_directly_issued_by(_load(pki, "ca"))


def test_keda_cert_dirs_hold_ca_tls_crt_and_key_private(pki):
    for which in ("keda-operator", "keda-adapter"):
        d = pki.keda_dir(which)
        assert sorted(p.name for p in d.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
        assert (d / "tls.crt").read_bytes() == pki.crt(which).read_bytes()
        assert stat.S_IMODE((d / "tls.key").stat().st_mode) == 0o600
    with pytest.raises(ConfigError, match="KEDA cert dir 'keda': not one of keda-operator, keda-adapter"):
        pki.keda_dir("keda")


def test_private_keys_are_0600_and_sa_pair_written(pki):
    for stem in pki.stems:
        assert stat.S_IMODE(pki.key(stem).stat().st_mode) == 0o600, stem
    assert b"PUBLIC KEY" in pki.sa_pub.read_bytes()
    assert stat.S_IMODE(pki.sa_key.stat().st_mode) == 0o600


def test_generate_rejects_naive_time_and_bad_lifetime(tmp_path):
    with pytest.raises(ConfigError, match="a naive datetime"):
        certs.generate(tmp_path, dt.datetime(2026, 1, 1))
    with pytest.raises(ConfigError, match=r"valid_s 0.0: must be > 0 seconds"):
        certs.generate(tmp_path, NOW, valid_s=0.0)


def test_kubeconfigs_point_at_the_loopback_apiserver_with_file_paths(pki, tmp_path):
    server = kubeconfig.apiserver_url(6443)
    paths = kubeconfig.write_all(tmp_path, pki, server)
    assert sorted(paths) == ["admin", "controller-manager", "keda-adapter", "keda-operator",
                            "kubelet", "scheduler"]
    doc = yaml.safe_load(paths["controller-manager"].read_text())
    assert doc["clusters"] == [{"name": "lagscale", "cluster": {
        "server": "https://127.0.0.1:6443", "certificate-authority": str(pki.crt("ca"))}}]
    assert doc["users"][0]["user"] == {"client-certificate": str(pki.crt("controller-manager")),
                                       "client-key": str(pki.key("controller-manager"))}
    assert doc["current-context"] == "controller-manager"
    assert stat.S_IMODE(paths["admin"].stat().st_mode) == 0o600


@pytest.mark.parametrize("port, host, message", [
    pytest.param(0, "127.0.0.1", "apiserver port 0: must be in 1..65535", id="port-zero"),
    pytest.param(6443, "10.0.0.5", "apiserver host '10.0.0.5': must be in 127.0.0.0/8 (loopback only)",
                 id="non-loopback-host"),
])
def test_apiserver_url_rejects(port, host, message):
    with pytest.raises(ConfigError) as err:
        kubeconfig.apiserver_url(port, host)
    assert str(err.value) == message


def test_render_rejects_plain_http(tmp_path):
    with pytest.raises(ConfigError, match="must be an https:// URL"):
        kubeconfig.render("http://127.0.0.1:8080", tmp_path, tmp_path, tmp_path, "admin")
