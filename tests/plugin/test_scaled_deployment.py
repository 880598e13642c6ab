"""The ``scaled_deployment`` fixture on the embedded broker: replicas of the committed
Deployment at minReplicaCount under a ticking local autoscaler, all stopped afterwards (the
repository's ``no_leftover_processes`` fixture checks that)."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.integration


def test_scaled_deployment_runs_the_committed_manifests(scaled_deployment) -> None:
    d = scaled_deployment
    so = d.scaled_object
    assert d.topic.startswith("events-") and d.group.startswith("enrich-")
    assert d.admin.partition_count(d.topic) == d.partitions == 8
    assert d.deployment.ready_replicas == so.min_replica_count
    deadline = time.monotonic() + 30
    while not d.autoscaler.decisions and time.monotonic() < deadline:
        time.sleep(0.2)
    assert d.autoscaler.decisions, "the autoscaler made no decision within 30 s"
    assert d.deployment.desired_replicas == so.min_replica_count
