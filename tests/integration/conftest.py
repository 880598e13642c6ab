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


@pytest.fixture(scope="session")
def spark_connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A Spark Connect server (:class:`pytest_lagscale.spark_connect.SparkConnectServer`) for
    the whole session, its logs kept under the session's temporary directory; skips without a
    JDK or pyspark's Connect client."""
    import shutil

    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the Spark Connect server needs a JDK 17 (install one)")
    pytest.importorskip("grpc", reason="Spark Connect client missing: pip install "
                        "'pytest-lagscale[connect]'")
    from pytest_lagscale.spark_connect import SparkConnectServer

    with SparkConnectServer(tmp_path_factory.mktemp("spark-connect")) as server:
        yield server
