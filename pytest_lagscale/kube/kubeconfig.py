"""Kubeconfig files of the local control plane: one per client identity, certificates by path.

Each file has one cluster (``lagscale``: the apiserver's loopback URL and the run's CA), one
user (client certificate and key files of :mod:`pytest_lagscale.kube.certs`) and one current
context. Written with mode 0600 (they point at private keys).

Source: kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig
(``clusters``/``users``/``contexts``, ``certificate-authority``, ``client-certificate``,
``client-key``); client-go tools/clientcmd/api/v1 types.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from ..contract.errors import ConfigError
from .certs import Pki

CLUSTER = "lagscale"

#: kubeconfig name -> the certificate stem of its user.
IDENTITIES = {
    "admin": "admin",
    "controller-manager": "controller-manager",
    "keda-operator": "keda-operator",
    "keda-adapter": "keda-adapter",
    "kubelet": "kubelet",
    "scheduler": "scheduler",
}


def apiserver_url(port: int, host: str = "127.0.0.1") -> str:
    """``https://127.0.0.1:<port>``.

    Raises:
        ConfigError: port outside 1..65535, or a host outside 127.0.0.0/8 (the control plane
            stays on the loopback range: docs/kubernetes.md "Loopback only").
    """
    if not 1 <= port <= 65535:
        raise ConfigError(f"apiserver port {port!r}: must be in 1..65535")
    if not host.startswith("127."):
        raise ConfigError(f"apiserver host {host!r}: must be in 127.0.0.0/8 (loopback only)")
    return f"https://{host}:{port}"


def render(server: str, ca: Path, cert: Path, key: Path, user: str) -> dict:
    """A kubeconfig document (a dict ready for YAML).

    Args:
        server: the apiserver URL (``https://127.0.0.1:6443``).
        ca: the CA bundle file that verifies the apiserver.
        cert, key: the user's client certificate and key files.
        user: the user entry's name (also the context's).

    Raises:
        ConfigError: ``server`` is not an https URL.
    """
    if urlsplit(server).scheme != "https":
        raise ConfigError(f"server {server!r}: must be an https:// URL")
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": {"server": server,
                                                   "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert),
                                          "client-key": str(key)}}],
        "contexts": [{"name": user, "context": {"cluster": CLUSTER, "user": user}}],
        "current-context": user,
    }


def write_all(dir: Path, pki: Pki, server: str) -> dict[str, Path]:
    """Write ``<dir>/<name>.kubeconfig`` for every entry of :data:`IDENTITIES`.

    Returns:
        name -> path.
    """
    dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, stem in IDENTITIES.items():
        path = dir / f"{name}.kubeconfig"
        text = yaml.safe_dump(render(server, pki.crt("ca"), pki.crt(stem), pki.key(stem), name),
                              sort_keys=False)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        paths[name] = path
    return paths
