"""The kubernetes platform's pure parts: the Deployment and ScaledObject it applies (the HPA
timing and the policies it refuses: tests/unit/kube/test_policy.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_lagscale.platform import PLATFORMS, platform_class
from pytest_lagscale.platform.kube_autoscaler import scaled_object
from pytest_lagscale.platform.kubernetes import KubernetesDeployment, deployment_object

K8S = Path(__file__).resolve().parents[3] / "k8s"


def test_the_platform_is_registered_under_kubernetes():
    assert "kubernetes" in PLATFORMS
    assert platform_class("kubernetes") is KubernetesDeployment


def test_the_deployment_runs_the_runs_command_line_at_zero_replicas():
    argv = (sys.executable, "-m", "spark_consumer", "--bootstrap=127.0.0.1:1234", "--topic=t-1")
    doc = deployment_object(K8S / "consumer-deployment-ci.yaml", argv, {"EXTRA": "1"})
    container = doc["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-m", "spark_consumer",
                                    "--bootstrap=127.0.0.1:1234", "--topic=t-1"]
    assert container["args"] == []
    assert {"name": "EXTRA", "value": "1"} in container["env"]
    assert doc["spec"]["replicas"] == 0
    assert "namespace" not in doc["metadata"]
    # the probe and grace period of the committed manifest are kept
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"


def test_the_scaled_object_points_at_the_runs_broker_group_and_topic():
    doc = scaled_object(K8S / "scaledobject-ci.yaml", bootstrap="127.0.0.1:9", group="g-1",
                        topic="t-1", lag_threshold=50)
    meta = doc["spec"]["triggers"][0]["metadata"]
    assert (meta["bootstrapServers"], meta["consumerGroup"], meta["topic"]) == (
        "127.0.0.1:9", "g-1", "t-1")
    assert meta["lagThreshold"] == "50"
    assert doc["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert doc["spec"]["scaleTargetRef"]["name"] == "lagscale-consumer"  # as committed


def test_the_scaled_object_targets_the_runs_own_deployment():
    doc = scaled_object(K8S / "scaledobject-ci.yaml", bootstrap="127.0.0.1:9", group="g-1",
                        topic="t-1", lag_threshold=None, target="franz-go-consumer")
    assert doc["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "franz-go-consumer"}
