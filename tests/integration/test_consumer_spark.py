"""The Spark engine end to end: a replica on a local SparkSession, and engine equivalence."""

from __future__ import annotations

import re
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.process import group_members
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.options import DEFAULT_DIMENSION
from spark_consumer.records import RECORD_SCHEMA
from spark_consumer.store import read_store
from tests.replica_helpers import ReplicaProcess, produce_events, store_counts, wait_all_committed

pytestmark = pytest.mark.integration

if shutil.which("java") is None:
    pytest.skip("no java on PATH: the Spark engine needs a JDK 17 (install one to run these "
                "tests)", allow_module_level=True)
pytest.importorskip("pyspark", reason="pyspark missing: pip install 'pytest-lagscale[spark]'")

SERIES = ("records_processed_total", "consume_rate", "inflight", "rebalances_total",
          "rebalance_duration_seconds_bucket", "rebalance_duration_seconds_count",
          "assigned_partitions", "replica_ready", "batch_engine_seconds_count")


def test_spark_replica_processes_everything_and_exposes_ready_and_metrics(
        kafka_cluster, tmp_path: Path, request) -> None:
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", request.node.name)
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic(name, 4)
    produced = produce_events(kafka_cluster.bootstrap_servers, name, 6000, 4)
    rp = ReplicaProcess("spark-1", kafka_cluster.bootstrap_servers, name, tmp_path / "store",
                        tmp_path, ["--group", f"g-{name}", "--process-ms", "1",
                                   "--inflight", "20", "--max-batch", "2000"])
    request.addfinalizer(lambda: rp.stop(30))
    rp.start()
    rp.wait_for("the metrics port", rp.port_file.exists, 30)
    status, body = rp.get("/ready")
    assert (status, body) == (503, "spark-1: engine spark starting\n")
    rp.wait_ready(90)
    produced += produce_events(kafka_cluster.bootstrap_servers, name, 6000, 4, first_seq=6000)
    wait_all_committed(admin, f"g-{name}", name, [rp], 90)
    metrics = rp.metrics()
    missing = [s for s in SERIES if not any(k == s or k.startswith(s + "{") for k in metrics)]
    assert not missing, f"missing series {missing}"
    assert metrics["records_processed_total"] == produced
    assert metrics["assigned_partitions"] == 4 and metrics["replica_ready"] == 1
    info = [k for k in metrics if k.startswith("replica_info{")]
    assert info and 'engine="spark"' in info[0] and 'replica_id="spark-1"' in info[0]
    names = rp.event_names()
    for event in ("started", "metrics_listening", "engine_ready", "spark_ready", "subscribed",
                  "joined", "ready", "first_record"):
        assert event in names, (event, names)
    pgid = rp.process.pid
    assert rp.stop(30) == "terminated" and rp.process.popen.returncode == 0, rp.tail()
    assert rp.event_names()[-4:] == ["drained", "revoked", "closed", "exited"]
    assert group_members(pgid) == []  # the JVM went with the replica
    table = read_store(tmp_path / "store")
    distinct, dups = store_counts(zip(table.column("partition").to_pylist(),
                                      table.column("offset").to_pylist()))
    assert (distinct, dups) == (produced, 0)


def test_sigterm_reaches_python_only_and_the_spark_batch_in_flight_completes(
        kafka_cluster, tmp_path: Path, request) -> None:
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", request.node.name)
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic(name, 2)
    rp = ReplicaProcess("spark-2", kafka_cluster.bootstrap_servers, name, tmp_path / "store",
                        tmp_path, ["--group", f"g-{name}", "--process-ms", "5",
                                   "--inflight", "10", "--max-batch", "3000"])
    request.addfinalizer(lambda: rp.stop(30))
    rp.start().wait_ready(90)
    produce_events(kafka_cluster.bootstrap_servers, name, 20_000, 2)
    rp.wait_for("a batch in flight", lambda: rp.metrics()["inflight"] > 0, 30, 0.02)
    rp.process.signal(signal.SIGTERM)  # to the whole process group, JVM included
    assert rp.wait_exit(30) == 0, rp.tail()
    names = rp.event_names()
    assert "error" not in names, rp.tail()
    assert names[names.index("sigterm"):][-4:] == ["drained", "revoked", "closed", "exited"]
    committed = admin.committed_offsets(f"g-{name}", name)
    table = read_store(tmp_path / "store")
    assert sum(max(o, 0) for o in committed.values()) == table.num_rows  # written == committed


def test_spark_and_arrow_engines_enrich_identically() -> None:
    dimension = load_dimension(DEFAULT_DIMENSION)
    rng = np.random.default_rng(7)
    n = 5000
    ids = rng.integers(0, 2**62, n, dtype=np.int64)
    now = time.time_ns()
    records = pa.Table.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.integers(0, 24, n, np.int32)),
         pa.array(np.arange(n, dtype=np.int64)), pa.array(ids),
         pa.array(now - rng.integers(0, 10**10, n)), pa.array(np.arange(n, dtype=np.int64)),
         pa.array(np.full(n, now, np.int64))], schema=RECORD_SCHEMA)
    arrow = make_engine("arrow", dimension).start().enrich(records)
    spark = make_engine("spark", dimension)
    try:
        spark.start()
        got = spark.enrich(records)
    finally:
        spark.stop()
    assert got.schema == arrow.schema
    assert got.equals(arrow)
