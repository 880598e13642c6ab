"""The replica template the live kubernetes tests run: the committed ci Deployment on the arrow
engine (a replica ready in about a second), reading a fresh 4-partition topic and group."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.platform.local import template_from_deployment

K8S = Path(__file__).resolve().parents[2] / "k8s"


def arrow_template(kafka_cluster: Any) -> Any:
    """A replica template on a new topic (4 partitions) and group of ``kafka_cluster``."""
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"events-{suffix}", f"enrich-{suffix}"
    KafkaAdmin(kafka_cluster.bootstrap_servers, kafka_cluster.client_config).create_topic(topic, 4)
    return template_from_deployment(
        load_deployment(K8S / "consumer-deployment-ci.yaml"), kafka_cluster.bootstrap_servers,
        flag_overrides={"--topic": topic, "--group": group, "--engine": "arrow"})


def wait_for(predicate: Any, within_s: float, what: str) -> Any:
    """``predicate()``'s first truthy value, polled every 0.2 s; AssertionError naming ``what``
    after ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {within_s:g} s: {what}")


def pods_of(platform: Any) -> list[dict]:
    """The pods of ``platform``'s namespace, as JSON-shaped dicts."""
    from kubernetes import client

    pods = client.CoreV1Api(platform.api).list_namespaced_pod(platform.namespace)
    return [platform.api.sanitize_for_serialization(p) for p in pods.items]
