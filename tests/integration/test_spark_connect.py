"""The spark-connect engine against a real Spark Connect server started by the harness: engine
equivalence, a replica end to end on a real broker, start errors, and the server's lifecycle
(no process left after stop or after the harness is SIGKILLed)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pytest_lagscale.contract.errors import ReplicaError
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
    pytest.skip("no java on PATH: the Spark Connect server needs a JDK 17 (install one to run "
                "these tests)", allow_module_level=True)
pytest.importorskip("grpc", reason="Spark Connect client missing: pip install "
                    "'pytest-lagscale[connect]'")

SERIES = ("records_processed_total", "consume_rate", "inflight", "rebalances_total",
          "assigned_partitions", "replica_ready", "batch_engine_seconds_count")


def _records(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    now = time.time_ns()
    return pa.Table.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), pa.array(rng.integers(0, 24, n, np.int32)),
         pa.array(np.arange(n, dtype=np.int64)), pa.array(rng.integers(0, 2**62, n, np.int64)),
         pa.array(now - rng.integers(0, 10**10, n)), pa.array(np.arange(n, dtype=np.int64)),
         pa.array(np.full(n, now, np.int64))], schema=RECORD_SCHEMA)


def test_spark_connect_spark_and_arrow_engines_enrich_identically(spark_connect_server) -> None:
    pytest.importorskip("pyspark", reason="pyspark missing: pip install 'pytest-lagscale[spark]'")
    dimension = load_dimension(DEFAULT_DIMENSION)
    batches = [_records(5000, seed=7), _records(1, seed=8), _records(0, seed=9)]
    arrow = make_engine("arrow", dimension).start()
    spark = make_engine("spark", dimension)
    connect = make_engine("spark-connect", dimension, "equality",
                          remote=spark_connect_server.url)
    try:
        spark.start()  # a local SparkSession in this process first: Connect must not disturb it
        connect.start()
        spark_connect_server.busy_ratio()  # from here on
        for records in batches:
            expected = arrow.enrich(records)
            for engine in (spark, connect):
                got = engine.enrich(records)
                assert got.schema == expected.schema, engine.name
                assert got.equals(expected), engine.name
        busy = spark_connect_server.busy_ratio()
    finally:
        connect.stop()
        spark.stop()
    assert busy is not None and 0.0 < busy <= 1.0


def test_replica_on_spark_connect_processes_everything_once_without_a_jvm_of_its_own(
        kafka_cluster, spark_connect_server, tmp_path: Path, request) -> None:
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", request.node.name)
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic(name, 4)
    produced = produce_events(kafka_cluster.bootstrap_servers, name, 6000, 4)
    rp = ReplicaProcess("connect-1", kafka_cluster.bootstrap_servers, name, tmp_path / "store",
                        tmp_path, ["--group", f"g-{name}", "--process-ms", "1",
                                   "--inflight", "20", "--max-batch", "2000",
                                   "--engine", "spark-connect",
                                   "--spark-remote", spark_connect_server.url])
    request.addfinalizer(lambda: rp.stop(30))
    rp.start()
    rp.wait_for("the metrics port", rp.port_file.exists, 30)
    rp.wait_ready(90)
    produced += produce_events(kafka_cluster.bootstrap_servers, name, 6000, 4, first_seq=6000)
    wait_all_committed(admin, f"g-{name}", name, [rp], 90)
    metrics = rp.metrics()
    missing = [s for s in SERIES if not any(k == s or k.startswith(s + "{") for k in metrics)]
    assert not missing, f"missing series {missing}"
    assert metrics["records_processed_total"] == produced
    info = [k for k in metrics if k.startswith("replica_info{")]
    assert info and 'engine="spark-connect"' in info[0]
    pgid = rp.process.pid
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in group_members(pgid)]
    assert commands and not any(b"java" in c for c in commands), commands  # a thin client
    names = rp.event_names()
    assert "engine_ready" in names and "spark_ready" not in names, names
    assert rp.stop(30) == "terminated" and rp.process.popen.returncode == 0, rp.tail()
    assert rp.event_names()[-4:] == ["drained", "revoked", "closed", "exited"]
    table = read_store(tmp_path / "store")
    distinct, dups = store_counts(zip(table.column("partition").to_pylist(),
                                      table.column("offset").to_pylist()))
    assert (distinct, dups) == (produced, 0)


def test_engine_start_names_spark_remote_and_the_url_when_nobody_answers() -> None:
    from pytest_lagscale.kafka.embedded import free_port

    url = f"sc://127.0.0.1:{free_port()}"  # free a moment ago: nothing listens there
    engine = make_engine("spark-connect", load_dimension(DEFAULT_DIMENSION), remote=url)
    engine._timeout_s = 1.0
    with pytest.raises(ReplicaError) as info:
        engine.start()
    assert re.fullmatch(
        rf"--spark-remote: the Spark Connect server at '{re.escape(url)}' did not answer within "
        r"1 s \(UNAVAILABLE: .+\); start one there or pass the URL of a running server",
        str(info.value)), str(info.value)
    engine.stop()


def test_server_starts_and_stops_leaving_no_process_of_its_group() -> None:
    from pytest_lagscale.spark_connect import SparkConnectServer

    with SparkConnectServer() as server:
        pgid = server.pid
        assert group_members(pgid), "server group has no live member while running"
        assert server.url == f"sc://127.0.0.1:{server.port}"
        home = server.home
        assert (home / "logs" / "server.log").exists()
    assert server.process.stop_outcome == "terminated"  # SIGTERM sufficed
    assert group_members(pgid) == []
    assert not home.exists(), "temporary work dir was not removed"
    assert server.stop() == "terminated"  # idempotent


def test_harness_killed_with_sigkill_leaves_no_server(tmp_path: Path) -> None:
    script = tmp_path / "harness.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from pytest_lagscale.spark_connect import SparkConnectServer
        server = SparkConnectServer(sys.argv[1]).start()
        print(server.pid, flush=True)
        time.sleep(300)
    """))
    env = {**os.environ, "LAGSCALE_CACHE_DIR": str(tmp_path)}  # its pid files stay here
    harness = subprocess.Popen([sys.executable, str(script), str(tmp_path / "server")], env=env,
                               stdout=subprocess.PIPE, text=True, start_new_session=True)
    pgid = None
    try:
        pgid = int(harness.stdout.readline())
        assert group_members(pgid)
        harness.send_signal(signal.SIGKILL)  # no atexit, no finally: only the parent-death signal
        harness.wait(10)
        deadline = time.monotonic() + 30
        while group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert group_members(pgid) == []
    finally:
        harness.stdout.close()
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        if pgid is not None and group_members(pgid):
            os.killpg(pgid, signal.SIGKILL)
