"""The objects the harness applies to a fresh local control plane before KEDA starts.

* KEDA's CRDs, read (not copied into this repository) from the KEDA module source the build
  downloaded: ``$GOMODCACHE/github.com/kedacore/keda/v2@<version>/config/crd/bases/*.yaml``
  (``keda.sh_scaledobjects``, ``keda.sh_scaledjobs``, ``keda.sh_triggerauthentications``,
  ``keda.sh_clustertriggerauthentications``, ``eventing.keda.sh_cloudeventsources``,
  ``eventing.keda.sh_clustercloudeventsources`` at keda v2.20.2 and main of 2026-08-20).
  ``scripts/build-kube`` copies that directory to ``<install>/crds/``, where
  :func:`load_crds` reads it at run time.
* KEDA's namespace, and a ``default`` ServiceAccount in the run's namespace (pods are
  rejected without one: the ServiceAccount admission plugin; the serviceaccount controller
  also creates it, but asynchronously).
* The metrics APIService ``v1beta1.external.metrics.k8s.io`` pointing at an ExternalName
  Service whose ``externalName`` is ``localhost`` and whose port is the adapter's: without
  ``--enable-aggregator-routing`` the aggregator turns an ExternalName into
  ``https://<externalName>:<port>`` (k8s.io/apiserver pkg/util/proxy ``ResolveCluster``,
  measured on v1.36.3), so no Endpoints and no non-loopback address are involved
  (docs/kubernetes.md "Loopback only").

Source: kedacore/keda config/crd/bases and config/metrics-server/api_service.yaml (the
APIService's group, version and priorities).
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from ..contract.errors import ConfigError

KEDA_MODULE = "github.com/kedacore/keda/v2"
ADAPTER_SERVICE = "keda-metrics-apiserver"
EXTERNAL_METRICS_APISERVICE = "v1beta1.external.metrics.k8s.io"


def keda_module_crd_dir(gomodcache: Path, version: str) -> Path:
    """``<gomodcache>/github.com/kedacore/keda/v2@<version>/config/crd/bases``.

    Example:
        >>> keda_module_crd_dir(Path("/m"), "v2.21.0").as_posix()
        '/m/github.com/kedacore/keda/v2@v2.21.0/config/crd/bases'
    """
    return gomodcache / f"{KEDA_MODULE}@{version}" / "config" / "crd" / "bases"


def load_crds(crd_dir: Path) -> list[dict]:
    """Every CustomResourceDefinition in ``crd_dir/*.yaml``, sorted by file name.

    Raises:
        ConfigError: the directory has no YAML file, a file is not YAML, or a document is
            not an ``apiextensions.k8s.io/v1`` CustomResourceDefinition (each problem one line).
    """
    files = sorted(crd_dir.glob("*.yaml"))
    if not files:
        raise ConfigError(f"{str(crd_dir)!r}: no KEDA CRDs (*.yaml); run "
                          "scripts/bootstrap --with-kube to build KEDA and copy its CRDs")
    crds, problems = [], []
    for path in files:
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except (OSError, yaml.YAMLError) as exc:
            problems.append(f"{str(path)!r}: not readable YAML: {exc}")
            continue
        for doc in docs:
            if not (isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition"
                    and doc.get("apiVersion") == "apiextensions.k8s.io/v1"):
                kind = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
                problems.append(f"{str(path)!r}: a {kind!r} document, not an "
                                "apiextensions.k8s.io/v1 CustomResourceDefinition")
            else:
                crds.append(doc)
    if problems:
        raise ConfigError(problems)
    return crds


def crd_names(crds: list[dict]) -> list[str]:
    """``metadata.name`` of each CRD (``scaledobjects.keda.sh``), in order."""
    return [c["metadata"]["name"] for c in crds]


def namespace(name: str) -> dict:
    """A Namespace object."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def default_service_account(ns: str) -> dict:
    """The ``default`` ServiceAccount of namespace ``ns``."""
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}}


def adapter_service(keda_namespace: str, adapter_port: int) -> dict:
    """The ExternalName Service in front of the adapter: ``localhost:<adapter_port>``.

    Raises:
        ConfigError: port outside 1..65535.
    """
    if not 1 <= adapter_port <= 65535:
        raise ConfigError(f"adapter port {adapter_port!r}: must be in 1..65535")
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": ADAPTER_SERVICE, "namespace": keda_namespace},
            "spec": {"type": "ExternalName", "externalName": "localhost",
                     "ports": [{"name": "https", "port": adapter_port, "protocol": "TCP"}]}}


def external_metrics_apiservice(keda_namespace: str, adapter_port: int, ca_pem: bytes) -> dict:
    """The APIService ``v1beta1.external.metrics.k8s.io`` served by the adapter.

    Args:
        ca_pem: the CA that signed the adapter's serving certificate (``caBundle``).
    """
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": EXTERNAL_METRICS_APISERVICE},
            "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1",
                     "groupPriorityMinimum": 100, "versionPriority": 100,
                     "service": {"name": ADAPTER_SERVICE, "namespace": keda_namespace,
                                 "port": adapter_port},
                     "caBundle": base64.b64encode(ca_pem).decode("ascii")}}


def bootstrap_objects(run_namespace: str, keda_namespace: str, adapter_port: int,
                      ca_pem: bytes) -> list[dict]:
    """The objects to apply after the CRDs, in order.

    Returns:
        KEDA's namespace, the run namespace (unless ``default``), the run namespace's
        ``default`` ServiceAccount, the adapter's ExternalName Service, the APIService.
    """
    objs = [namespace(keda_namespace)]
    if run_namespace != "default":
        objs.append(namespace(run_namespace))
    objs += [default_service_account(run_namespace),
             adapter_service(keda_namespace, adapter_port),
             external_metrics_apiservice(keda_namespace, adapter_port, ca_pem)]
    return objs
