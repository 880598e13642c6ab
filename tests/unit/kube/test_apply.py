"""Applying the start-up objects: create-or-exists and waiting for CRDs (fake client)."""

from __future__ import annotations

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.errors import LagscaleError, ReadinessTimeout
from pytest_lagscale.kube import apply, manifests

OBJECTS = manifests.bootstrap_objects("lagscale", "keda", 26444, b"PEM")


class ApiError(Exception):
    def __init__(self, status):
        super().__init__(f"status {status}")
        self.status = status


class FailToCreate(Exception):  # the shape of kubernetes.utils.FailToCreateError
    def __init__(self, *statuses):
        super().__init__("Error from server")
        self.api_exceptions = [ApiError(s) for s in statuses]


def test_created_and_already_existing_objects_both_count_as_applied():
    existing = {"Namespace keda"}

    def create(obj):
        if apply.object_label(obj) in existing:
            raise FailToCreate(409)

    assert apply.apply_objects(create, OBJECTS) == {
        "Namespace keda": "exists", "Namespace lagscale": "created",
        "ServiceAccount lagscale/default": "created",
        "Service keda/keda-metrics-apiserver": "created",
        "APIService v1beta1.external.metrics.k8s.io": "created"}


def test_another_failure_names_the_object_and_status():
    def create(obj):
        if obj["kind"] == "APIService":
            raise FailToCreate(422)

    with pytest.raises(LagscaleError, match=r"^APIService v1beta1.external.metrics.k8s.io: create "
                       r"failed \(HTTP \[422\]\)"):
        apply.apply_objects(create, OBJECTS)
    with pytest.raises(LagscaleError, match=r"HTTP \[403\]"):
        apply.apply_objects(lambda obj: (_ for _ in ()).throw(ApiError(403)), OBJECTS[:1])


def _crd(name, established):
    conds = [{"type": "NamesAccepted", "status": "True"}]
    if established is not None:
        conds.append({"type": "Established", "status": "True" if established else "False"})
    return {"metadata": {"name": name}, "status": {"conditions": conds}}


def test_wait_established_polls_until_every_crd_is_served():
    clock, reads = FakeClock(), {}

    def read(name):
        reads[name] = reads.get(name, 0) + 1
        return _crd(name, reads[name] >= 3 if name == "scaledobjects.keda.sh" else True)

    waited = apply.wait_established(read, ["scaledobjects.keda.sh", "triggerauthentications.keda.sh"],
                                    clock)
    assert waited == pytest.approx(2 * apply.POLL_INTERVAL_S)
    assert apply.not_established([_crd("a", None), _crd("b", False), _crd("c", True)]) == ["a", "b"]


def test_wait_established_times_out_listing_the_pending_crds():
    with pytest.raises(ReadinessTimeout, match=r"CRDs \['scaledobjects.keda.sh'\]: not Established "
                       r"after 1 s"):
        apply.wait_established(lambda n: _crd(n, False), ["scaledobjects.keda.sh"], FakeClock(),
                               timeout_s=1.0)
