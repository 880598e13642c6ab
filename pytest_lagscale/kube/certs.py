"""Per-run certificates of the local control plane (the ``cryptography`` library, ECDSA P-256):
two CAs and the leaf certificates every part needs, as PEM files (keys 0600) in the run's
``kube/pki/``, valid from one hour before ``now`` for ``valid_s``:

=========================  =========================================  ===========  ==========
file stem                  subject (CN / O)                           usage        SANs
=========================  =========================================  ===========  ==========
``ca``                     lagscale-kube-ca                           CA           -
``front-proxy-ca``         lagscale-front-proxy-ca                    CA           -
``etcd``                   etcd                                       server       loopback
``apiserver``              kube-apiserver                             server       loopback
``apiserver-etcd-client``  kube-apiserver-etcd-client                 client       -
``front-proxy-client``     front-proxy-client (front-proxy-ca)        client       -
``admin``                  lagscale-admin / system:masters            client       -
``controller-manager``     system:kube-controller-manager             server+client loopback
``keda-operator``          keda-operator / system:masters             server+client loopback
``keda-adapter``           keda-metrics-apiserver / system:masters    server+client loopback +
                                                                                   adapter svc
``kubelet``                system:node:lagscale-node / +masters       client       -
``scheduler``              system:kube-scheduler                      server+client loopback
=========================  =========================================  ===========  ==========

"loopback" is IP 127.0.0.1 and DNS ``localhost`` only. The adapter's certificate also names
``<service>.<namespace>.svc``, the TLS server name kube-aggregator checks (kube-aggregator
``handler_proxy.go`` ``updateAPIService``). KEDA's operator and adapter serve and dial their
gRPC link with one certificate (keda ``pkg/metricsservice/utils/tls.go``
``LoadGrpcTLSCredentials``), copied as ``ca.crt``/``tls.crt``/``tls.key`` into ``keda-operator/``
and ``keda-adapter/`` (in ``system:masters``: no KEDA RBAC); ``sa.key``/``sa.pub`` signs tokens. Source: kubernetes.io/docs/setup/
best-practices/certificates; docs/kubernetes.md "Certificates and kubeconfigs".
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from pathlib import Path

from ..contract.errors import ConfigError

LOOPBACK_IP = "127.0.0.1"
LOOPBACK_DNS = "localhost"
#: The one Node of the kubelet node (``--node kubelet``).
NODE_NAME = "lagscale-node"
DEFAULT_VALID_S = 7 * 24 * 3600.0
BACKDATE_S = 3600.0


@dataclass(frozen=True)
class CertSpec:
    """One leaf certificate.

    Attributes:
        stem: file stem (``apiserver`` -> ``apiserver.crt``/``apiserver.key``).
        common_name, organizations: the subject (CN is the Kubernetes user, O its groups).
        server, client: extended key usages serverAuth / clientAuth.
        dns_names, ip_addresses: subject alternative names (servers only).
        issuer: ``"ca"`` or ``"front-proxy-ca"``.
    """

    stem: str
    common_name: str
    organizations: tuple[str, ...] = ()
    server: bool = False
    client: bool = False
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[str, ...] = ()
    issuer: str = "ca"


def adapter_service_name(service: str, namespace: str) -> str:
    """The TLS server name kube-aggregator expects of an APIService backend: ``svc.ns.svc``."""
    return f"{service}.{namespace}.svc"


def leaf_specs(adapter_service: str = "keda-metrics-apiserver",
               adapter_namespace: str = "keda") -> tuple[CertSpec, ...]:
    """Every leaf certificate of the control plane (the table of the module docstring)."""
    loop = {"dns_names": (LOOPBACK_DNS,), "ip_addresses": (LOOPBACK_IP,)}
    masters = ("system:masters",)
    return (
        CertSpec("etcd", "etcd", server=True, **loop),
        CertSpec("apiserver", "kube-apiserver", server=True, **loop),
        CertSpec("apiserver-etcd-client", "kube-apiserver-etcd-client", client=True),
        CertSpec("front-proxy-client", "front-proxy-client", client=True, issuer="front-proxy-ca"),
        CertSpec("admin", "lagscale-admin", masters, client=True),
        CertSpec("controller-manager", "system:kube-controller-manager", server=True,
                 client=True, **loop),
        CertSpec("keda-operator", "keda-operator", masters, server=True, client=True, **loop),
        CertSpec("keda-adapter", "keda-metrics-apiserver", masters, server=True, client=True,
                 dns_names=(LOOPBACK_DNS, adapter_service_name(adapter_service, adapter_namespace)),
                 ip_addresses=(LOOPBACK_IP,)),
        # the kubelet node: no Node authorizer on the apiserver (RBAC only), so the kubelet's
        # identity is also in system:masters
        CertSpec("kubelet", f"system:node:{NODE_NAME}", ("system:nodes", *masters), client=True),
        CertSpec("scheduler", "system:kube-scheduler", server=True, client=True, **loop),
    )


@dataclass(frozen=True)
class Pki:
    """The written files of one run.

    Attributes:
        dir: the directory holding them.
        stems: every certificate's stem (CAs included).
    """

    dir: Path
    stems: tuple[str, ...] = field(default=())

    def crt(self, stem: str) -> Path:
        """``<dir>/<stem>.crt``."""
        return self.dir / f"{stem}.crt"

    def key(self, stem: str) -> Path:
        """``<dir>/<stem>.key``."""
        return self.dir / f"{stem}.key"

    @property
    def sa_key(self) -> Path:
        """The service-account signing key (private, PEM)."""
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        """The service-account verification key (public, PEM)."""
        return self.dir / "sa.pub"

    def keda_dir(self, which: str) -> Path:
        """``<dir>/keda-operator`` or ``<dir>/keda-adapter``: ``ca.crt``, ``tls.crt``, ``tls.key``.

        Raises:
            ConfigError: ``which`` is not ``keda-operator`` or ``keda-adapter``.
        """
        if which not in ("keda-operator", "keda-adapter"):
            raise ConfigError(f"KEDA cert dir {which!r}: not one of keda-operator, keda-adapter")
        return self.dir / which


def generate(dir: Path, now: dt.datetime, *, valid_s: float = DEFAULT_VALID_S,
             specs: tuple[CertSpec, ...] | None = None) -> Pki:
    """Create the CAs, every leaf of ``specs`` (default :func:`leaf_specs`) and the SA key pair.

    Args:
        dir: created if missing; existing files are overwritten (one set per run).
        now: aware UTC datetime; certificates are valid from ``now - 1 h`` to ``now + valid_s``.
        valid_s: lifetime in seconds (> 0).

    Raises:
        ConfigError: ``now`` is naive, ``valid_s`` <= 0, or a spec names an unknown issuer.
    """
    from cryptography.hazmat.primitives.asymmetric import ec

    if now.tzinfo is None:
        raise ConfigError(f"now {now!r}: a naive datetime; pass an aware UTC datetime")
    if not valid_s > 0:
        raise ConfigError(f"valid_s {valid_s!r}: must be > 0 seconds")
    specs = leaf_specs() if specs is None else specs
    dir.mkdir(parents=True, exist_ok=True)
    window = (now - dt.timedelta(seconds=BACKDATE_S), now + dt.timedelta(seconds=valid_s))
    cas = {}
    for stem, cn in (("ca", "lagscale-kube-ca"), ("front-proxy-ca", "lagscale-front-proxy-ca")):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(CertSpec(stem, cn), key, key, None, window, is_ca=True)
        _write(dir, stem, cert, key)
        cas[stem] = (cert, key)
    for spec in specs:
        if spec.issuer not in cas:
            raise ConfigError(f"certificate {spec.stem!r}: issuer {spec.issuer!r} is not one of "
                              f"{', '.join(cas)}")
        ca_cert, ca_key = cas[spec.issuer]
        key = ec.generate_private_key(ec.SECP256R1())
        _write(dir, spec.stem, _certificate(spec, key, ca_key, ca_cert, window), key)
    _write_sa_pair(dir)
    for which in ("keda-operator", "keda-adapter"):
        if any(s.stem == which for s in specs):
            _keda_dir(dir, which)
    return Pki(dir, ("ca", "front-proxy-ca") + tuple(s.stem for s in specs))


def _certificate(spec, key, issuer_key, issuer_cert, window, *, is_ca: bool = False):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in spec.organizations]
    subject = x509.Name(attrs + [x509.NameAttribute(NameOID.COMMON_NAME, spec.common_name)])
    builder = (x509.CertificateBuilder()
               .subject_name(subject)
               .issuer_name(issuer_cert.subject if issuer_cert is not None else subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(window[0]).not_valid_after(window[1])
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                              critical=False))
    if is_ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_encipherment=False, key_cert_sign=False, crl_sign=False,
            content_commitment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if spec.server else []) + \
                 ([ExtendedKeyUsageOID.CLIENT_AUTH] if spec.client else [])
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            issuer_key.public_key()), critical=False)
        sans = [x509.DNSName(n) for n in spec.dns_names] + \
               [x509.IPAddress(IPv4Address(ip)) for ip in spec.ip_addresses]
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(dir: Path, stem: str, cert, key) -> None:
    from cryptography.hazmat.primitives import serialization

    (dir / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(dir / f"{stem}.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _write_sa_pair(dir: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    _write_private(dir / "sa.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (dir / "sa.pub").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def _keda_dir(dir: Path, which: str) -> None:
    target = dir / which
    target.mkdir(exist_ok=True)
    (target / "ca.crt").write_bytes((dir / "ca.crt").read_bytes())
    (target / "tls.crt").write_bytes((dir / f"{which}.crt").read_bytes())
    _write_private(target / "tls.key", (dir / f"{which}.key").read_bytes())
