"""What the local control plane takes of a policy manifest (pytest_lagscale.kube.policy): the HPA
timing it starts the controller-manager with, and the policies it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kube.policy import check_policy, hpa_timing

K8S = Path(__file__).resolve().parents[3] / "k8s"


def test_hpa_timing_comes_from_the_scaled_objects_annotations():
    timing = hpa_timing(load_policy_manifest(K8S / "scaledobject-ci.yaml"))
    assert (timing.sync_period_s, timing.tolerance, timing.downscale_stabilization_s) == (3, 0.1, 30)


@pytest.mark.parametrize("manifest, needle", [
    ("hpa-cpu-ci.yaml", "only KEDA ScaledObjects"),
    ("scaledobject-prometheus-ci.yaml", "trigger type(s) prometheus"),
])
def test_policies_the_real_keda_here_cannot_run_are_refused(manifest, needle):
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        check_policy(load_policy_manifest(K8S / manifest))


def test_a_kafka_scaled_object_is_accepted():
    check_policy(load_policy_manifest(K8S / "scaledobject-ci.yaml"))
