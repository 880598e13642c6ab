"""Apply the start-up objects to the local control plane with the ``kubernetes`` client.

:func:`bootstrap_applier` returns the ``apply_bootstrap(layout)`` callable
:class:`~.control_plane.ControlPlane` calls between kube-controller-manager and the KEDA
operator: it creates KEDA's CRDs (read from the KEDA install's ``crds/``) and the objects of
:func:`.manifests.bootstrap_objects` as the admin, treats "already exists" (HTTP 409) as done,
and waits until every CRD reports ``Established`` (KEDA's informers fail on a CRD the apiserver
does not serve yet).

Source: kubernetes-client/python ``kubernetes.utils.create_from_dict`` (``FailToCreateError``
carrying one ``ApiException`` per failed object); apiextensions.k8s.io/v1 CRD status condition
``Established``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..contract.clock import Clock, RealClock
from ..contract.errors import LagscaleError, ReadinessTimeout
from . import manifests
from .commands import Layout

ESTABLISHED_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.2


def object_label(obj: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` (or ``Kind name``) for messages."""
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


def apply_objects(create: Callable[[Mapping[str, Any]], Any], objects: Iterable[Mapping[str, Any]]
                  ) -> dict[str, str]:
    """Create each object in order; an object that already exists counts as applied.

    Args:
        create: creates one object; raises an exception with ``api_exceptions`` (a list of
            exceptions with ``status``), as ``kubernetes.utils.FailToCreateError``, or an
            exception with ``status`` itself.

    Returns:
        ``object_label`` -> ``"created"`` or ``"exists"``, in order.

    Raises:
        LagscaleError: an object failed with a status other than 409 (label, status, reason).
    """
    done: dict[str, str] = {}
    for obj in objects:
        label = object_label(obj)
        try:
            create(obj)
            done[label] = "created"
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised if unknown
            statuses = [getattr(e, "status", None) for e in getattr(exc, "api_exceptions", [exc])]
            if statuses and all(s == 409 for s in statuses):
                done[label] = "exists"
                continue
            raise LagscaleError(f"{label}: create failed (HTTP {statuses}): {exc}; see the "
                                "kube-apiserver log") from exc
    return done


def not_established(crds: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the CRDs (as read back from the API) without ``Established: True``."""
    out = []
    for crd in crds:
        conditions = (crd.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            out.append(crd["metadata"]["name"])
    return out


def wait_established(read: Callable[[str], Mapping[str, Any]], names: list[str], clock: Clock,
                     timeout_s: float = ESTABLISHED_TIMEOUT_S) -> float:
    """Poll ``read(name)`` until every CRD is Established; returns the seconds waited.

    Raises:
        ReadinessTimeout: some CRD not Established after ``timeout_s`` seconds (names listed).
    """
    started = clock.now()
    while True:
        pending = not_established(read(n) for n in names)
        if not pending:
            return clock.now() - started
        if clock.now() - started > timeout_s:
            raise ReadinessTimeout(f"CRDs {pending}: not Established after {timeout_s:g} s; see the "
                                   "kube-apiserver log")
        clock.sleep(POLL_INTERVAL_S)


def bootstrap_applier(run_namespace: str, crd_dir: Path, *, clock: Clock | None = None
                      ) -> Callable[[Layout], None]:
    """The ``apply_bootstrap(layout)`` of a ControlPlane, using the admin kubeconfig.

    Args:
        run_namespace: the namespace the run's Deployment goes to (gets its ``default``
            ServiceAccount).
        crd_dir: KEDA's CRDs (``<keda install>/crds``).
    """
    clock = clock or RealClock()

    def apply_bootstrap(layout: Layout) -> None:
        from kubernetes import client, config, utils

        api = config.new_client_from_config(config_file=layout.kubeconfig("admin"))
        crds = manifests.load_crds(crd_dir)
        objects = crds + manifests.bootstrap_objects(
            run_namespace, layout.keda_namespace,
            layout.metrics_service_port or layout.ports.keda_adapter,
            layout.pki.crt("ca").read_bytes())
        apply_objects(lambda obj: utils.create_from_dict(api, dict(obj)), objects)
        ext = client.ApiextensionsV1Api(api)
        wait_established(
            lambda name: api.sanitize_for_serialization(ext.read_custom_resource_definition(name)),
            manifests.crd_names(crds), clock)

    return apply_bootstrap
