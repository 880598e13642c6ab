"""Fixtures shared by the replica tests: an admin client and a factory of started replicas."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterator

import pytest

from pytest_lagscale.kafka.admin import KafkaAdmin
from tests.replica_helpers import ReplicaProcess


@pytest.fixture
def admin(kafka_cluster) -> KafkaAdmin:
    """An admin client of the session's broker."""
    return KafkaAdmin(kafka_cluster.bootstrap_servers)


@pytest.fixture
def replicas(kafka_cluster, tmp_path: Path, request) -> Iterator[Callable[..., ReplicaProcess]]:
    """``start(replica_id, *flags) -> ReplicaProcess``: a started replica on this test's own
    topic and group (``start.topic``, ``start.group``) with a 20 s drain timeout; every replica
    started is stopped (30 s each, then SIGKILL) at teardown, failed test or not."""
    started: list[ReplicaProcess] = []
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", request.node.name).strip("-")[:200]

    def start(replica_id: str, *args: str) -> ReplicaProcess:
        rp = ReplicaProcess(replica_id, kafka_cluster.bootstrap_servers, name,
                            tmp_path / "store", tmp_path,
                            ["--group", f"g-{name}", "--drain-timeout", "20", *args])
        started.append(rp)
        return rp.start()

    start.topic, start.group = name, f"g-{name}"  # type: ignore[attr-defined]
    yield start
    for rp in reversed(started):
        rp.stop(30)
