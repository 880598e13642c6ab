"""The enrichment on a local SparkSession, sized for many replicas on a small machine.

Footprint choices (each measured in ``benchmarks/test_consumer_footprint.py``; the figures, the
options tried and not kept, and the memory floor: docs/experiments.md, "Notes moved from module
docstrings", "spark_consumer/engine/spark.py"):

* ``local[1]``, one shuffle partition, no UI, no event log, no adaptive execution.
* A small JVM: ``spark.driver.memory`` plus serial GC, C1 only, capped metaspace / code cache /
  direct memory, a shrinking heap; ``spark.testing.reservedMemory`` lowers Spark's 300 MB
  reserve so a heap under 450 MB starts (every Spark test runs with 128 MB).
* Spark's own core jars first on ``spark.driver.extraClassPath`` (class lookups stop walking
  ~280 jars); ``spark.sql.execution.arrow.localRelationThreshold=0`` (the Arrow batch is an RDD).
* The join is a shuffled hash join with no exchange: the dimension is cached once as one
  partition and each batch is ``coalesce(1)``-ed, so both sides are ``SinglePartition``.
* Everything about the query that can be built once is (:class:`_Plan`): a batch is 11 py4j
  calls.
* The block manager's endpoint thread pools are cut to one core thread
  (:func:`_shrink_block_manager_pools`).
* A class-data-sharing archive, when prepared (:mod:`spark_consumer.engine.cds`), cuts the
  engine start by ~4 s.
* The JVM ignores SIGTERM/SIGINT (started by :func:`pytest_lagscale.contract.jvm.launch_gateway`
  through a ``trap '' TERM INT`` wrapper), so a SIGTERM to the replica's process group reaches
  only Python, which drains and then stops Spark; the gateway exits when its stdin closes.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pytest_lagscale.contract.jvm import (LOCAL_SESSION_SETTINGS, LOG4J2_PROPERTIES,
                                          core_jars_first, launch_gateway, shutdown_gateway)

from . import cds
from .base import ENRICHED_SCHEMA, warmup_records

log = logging.getLogger(__name__)

DRIVER_MEMORY = "128m"
PLAN = "single-partition-shuffled-hash-join"
JAVA_OPTIONS = (
    "-XX:+UseSerialGC",
    "-Xms16m",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=25",
    "-XX:MaxMetaspaceSize=192m",
    "-XX:TieredStopAtLevel=1",
    "-XX:ReservedCodeCacheSize=32m",
    "-XX:MaxDirectMemorySize=64m",
    "-Xss512k",
    "-XX:-UsePerfData",
)
SPARK_SETTINGS: dict[str, str] = {
    **LOCAL_SESSION_SETTINGS,
    "spark.driver.memory": DRIVER_MEMORY,
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # Both join sides are single partitions: with these, EnsureRequirements adds no exchange
    # (its single-partition shortcut compares plan statistics, which default to Long.MaxValue).
    "spark.sql.defaultSizeInBytes": str(64 * 1024 * 1024),
    "spark.sql.maxSinglePartitionBytes": str(2**63 - 1),
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.execution.arrow.localRelationThreshold": "0",
    "spark.sql.broadcastExchange.maxThreadThreshold": "1",
    "spark.resultGetter.threads": "1",
    "spark.shuffle.mapOutput.dispatcher.numThreads": "1",
    "spark.rpc.netty.dispatcher.numThreads": "1",
    "spark.rpc.io.serverThreads": "1",
    "spark.rpc.io.clientThreads": "1",
    "spark.shuffle.io.serverThreads": "1",
    "spark.shuffle.io.clientThreads": "1",
    "spark.broadcast.blockSize": "1m",
    "spark.broadcast.compress": "false",
    "spark.broadcast.checksum": "false",
    "spark.ui.retainedJobs": "10",
    "spark.ui.retainedStages": "10",
    "spark.ui.retainedTasks": "100",
    "spark.sql.ui.retainedExecutions": "10",
}


class SparkEngine:
    """Enrichment on a local SparkSession (a shuffled hash join with the cached dimension).

    Args:
        dimension: the table from :func:`spark_consumer.dimension.load_dimension`.
        app_name: Spark application name (the replica id).
        settings: extra Spark settings, applied over :data:`SPARK_SETTINGS`.

    Raises:
        ImportError: from :meth:`start` when pyspark is not installed.
    """

    name = "spark"

    def __init__(self, dimension: pa.Table, app_name: str = "spark-consumer",
                 settings: dict[str, str] | None = None,
                 extra_java_options: tuple[str, ...] = (), use_cds: bool = True):
        self._dimension = dimension
        self._app_name = app_name
        self._settings = {**SPARK_SETTINGS, **(settings or {})}
        self._extra_java = extra_java_options
        self._use_cds = use_cds
        self.cds_archive: Path | None = None
        self._workdir: Path | None = None
        self._spark: Any = None
        self._gateway: Any = None
        self._plan: Any = None

    def start(self) -> "SparkEngine":
        if self._spark is not None:
            return self
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession

        self._workdir = Path(tempfile.mkdtemp(prefix="spark-consumer-"))
        conf = SparkConf(loadDefaults=False).setAppName(self._app_name)
        for key, value in self._spark_conf(self._workdir).items():
            conf.set(key, value)
        self._gateway = launch_gateway(conf, noterm_dir=self._workdir)
        sc = SparkContext(conf=conf, gateway=self._gateway)
        sc.setLogLevel("ERROR")
        self._spark = SparkSession(sc)
        self.shrunk_pools = _shrink_block_manager_pools(sc)
        self._plan = _Plan(self._spark, self._dimension)
        self.enrich(warmup_records(64))
        return self

    def _spark_conf(self, workdir: Path) -> dict[str, str]:
        (workdir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        (workdir / "local").mkdir(exist_ok=True)
        java = [*JAVA_OPTIONS, *self._extra_java,
                f"-Dlog4j2.configurationFile=file:{workdir / 'log4j2.properties'}"]
        if self._use_cds:
            archive = cds_archive()
            java += cds.use_options(archive)
            self.cds_archive = archive if archive.is_file() else None
        return {
            "spark.driver.extraClassPath": core_jars_first(),
            **self._settings,
            "spark.local.dir": str(workdir / "local"),
            "spark.driver.extraJavaOptions": " ".join(java),
        }

    def enrich(self, records: pa.Table) -> pa.Table:
        if self._plan is None:
            raise RuntimeError("spark engine: not started; call start() first")
        out = self._plan.run(records)
        row = out.column("row").to_numpy()
        if len(row) > 1 and np.any(row[1:] < row[:-1]):
            out = out.sort_by("row")
        return out.select(ENRICHED_SCHEMA.names).cast(ENRICHED_SCHEMA)

    def stop(self, jvm_exit_timeout_s: float = 5.0) -> None:
        """Stop Spark and the JVM (waiting up to ``jvm_exit_timeout_s`` for it to exit)."""
        from pyspark import SparkContext

        if self._spark is not None:
            try:
                self._spark.stop()
            finally:
                self._spark = None
                self._plan = None
        if self._gateway is not None:
            shutdown_gateway(self._gateway, jvm_exit_timeout_s)
            self._gateway = None
            SparkContext._gateway = None
            SparkContext._jvm = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def jvm_pid(self) -> int | None:
        """Pid of the JVM (the gateway process), or None when not started."""
        proc = getattr(self._gateway, "proc", None)
        return None if proc is None else proc.pid


class _Plan:
    """Everything about the query that can be built once (see the module docstring).

    Per batch: the Arrow batch is written as an IPC stream to a file the JVM reads
    (``PythonSQLUtils.readArrowStreamFromFile`` + ``toDataFrame``, what pyspark's
    ``createDataFrame(pa.Table)`` does), ``coalesce(1)`` (so the side reports
    ``SinglePartition``), the prebuilt projection, a shuffled hash join against the cached
    single-partition dimension (no exchange, no broadcast, no second job), the prebuilt output
    projection, and ``collectAsArrowToPython`` read back over its local socket (what
    ``toArrow`` does): 11 py4j calls in all.

    pyspark's own ``createDataFrame`` / ``toArrow`` made 66 per batch: they re-read ten
    session settings, re-set the active session and call site, and twice resolved
    ``PythonSQLUtils`` by its short name, which the JVM tries against each of the gateway's
    imports in turn — every miss a walk through all ~280 jars of the class path (JFR:
    ``ZipFile$Source.getEntryPos`` was the hottest frame). Here the JVM methods are resolved
    once, by their full names, and the input schema's JSON is computed once.
    """

    def __init__(self, spark: Any, dimension: pa.Table):
        from pyspark.sql import functions as F
        from pyspark.errors.exceptions.captured import unwrap_spark_exception
        from pyspark.sql.classic.column import _to_seq
        from pyspark.sql.pandas.serializers import ArrowCollectSerializer
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.util import _load_from_socket

        from ..records import RECORD_SCHEMA

        self._spark = spark
        sc = spark.sparkContext
        dim = spark.createDataFrame(dimension).coalesce(1).hint("shuffle_hash").cache()
        dim.count()
        self._dim = dim._jdf
        buckets = F.lit(dimension.num_rows)
        with_bucket = [
            *(F.col(c) for c in ("row", "partition", "offset", "seq", "entity_id", "ts_ns",
                                 "processed_at_ns")),
            F.pmod(F.col("entity_id"), buckets).cast("int").alias("bucket"),
            ((F.col("processed_at_ns").cast("double") - F.col("ts_ns").cast("double"))
             / F.lit(1e6)).alias("event_lag_ms"),
        ]
        self._with_bucket = _to_seq(sc, [c._jc for c in with_bucket])
        self._on = _to_seq(sc, ["bucket"])
        self._output = _to_seq(sc, [F.col(c)._jc for c in ENRICHED_SCHEMA.names])
        utils = sc._jvm.org.apache.spark.sql.api.python.PythonSQLUtils
        self._read_arrow_file = utils.readArrowStreamFromFile
        self._to_dataframe = utils.toDataFrame
        self._jsession = spark._jsparkSession
        self._input_schema_json = from_arrow_schema(RECORD_SCHEMA).json()
        self._input_file = Path(sc._temp_dir) / "batch.arrows"
        # What toArrow uses to read the served result, looked up once (not per batch).
        self._load_from_socket = _load_from_socket
        self._collect_serializer = ArrowCollectSerializer()
        self._unwrap_spark_exception = unwrap_spark_exception

    def query(self, records: pa.Table) -> Any:
        """The batch's query as a JVM ``Dataset`` (not executed)."""
        with pa.OSFile(str(self._input_file), "wb") as sink, \
                pa.ipc.new_stream(sink, records.schema) as writer:
            writer.write_table(records)
        jrdd = self._read_arrow_file(str(self._input_file))  # read eagerly: the file is free
        jdf = self._to_dataframe(jrdd, self._input_schema_json, self._jsession)
        return (jdf.coalesce(1).select(self._with_bucket)
                .join(self._dim, self._on, "left").select(self._output))

    def run(self, records: pa.Table) -> pa.Table:
        """Execute the batch's query; the enriched rows as Arrow (in Spark's row order)."""
        served = self.query(records).collectAsArrowToPython()  # [port, secret, server]
        port, secret, server = served[0], served[1], served[2]  # no len() round trips
        try:
            with self._load_from_socket((port, secret), self._collect_serializer) as stream:
                batches = list(stream)
        finally:
            with self._unwrap_spark_exception():
                server.getResult()  # joins the serving thread; raises the job's error
        if not batches:
            return ENRICHED_SCHEMA.empty_table()
        return pa.Table.from_batches(batches)


def _shrink_block_manager_pools(sc: Any) -> int:
    """Give the block manager's endpoint thread pools one core thread instead of 100.

    Spark builds them as ``ThreadPoolExecutor(100, 100)`` (core = max): every task submitted
    below 100 threads starts a new thread, so the removal of each job's task-binary broadcast
    (one per batch, by the ContextCleaner) added a thread until both pools held 100 (200 idle
    threads, ~25 MB of stacks and thread-local malloc). Removals are sequential anyway
    (``spark.cleaner.referenceTracking.blocking``). Returns how many pools were changed (0 when
    Spark's internals moved; nothing else depends on it).
    """
    jvm = sc._jvm
    try:
        tpe = jvm.java.lang.Class.forName("java.util.concurrent.ThreadPoolExecutor")
        # Only reflection on SparkEnv: py4j's own method lookup on it fails (a method signature
        # names protobuf classes that are not on the class path).
        env = _private(jvm, sc._jsc.sc(), "org.apache.spark.SparkContext", "_env")
        rpc_env = _private(jvm, env, "org.apache.spark.SparkEnv", "rpcEnv")
        dispatcher = _private(jvm, rpc_env, "org.apache.spark.rpc.netty.NettyRpcEnv", "dispatcher")
        refs = _private(jvm, dispatcher, "org.apache.spark.rpc.netty.Dispatcher", "endpointRefs")
        changed = 0
        for endpoint in refs.keySet():
            cls = endpoint.getClass()
            if not cls.getName().startswith("org.apache.spark.storage.BlockManager"):
                continue
            for field in cls.getDeclaredFields():
                if tpe.isAssignableFrom(field.getType()):
                    field.setAccessible(True)
                    field.get(endpoint).setCorePoolSize(1)
                    changed += 1
        return changed
    except Exception:  # a different Spark: keep its pools
        log.warning("spark engine: cannot shrink the block manager thread pools", exc_info=True)
        return 0


def _private(jvm: Any, obj: Any, class_name: str, name: str) -> Any:
    """Field ``name`` (or Scala's mangled ``...$$name``) of a JVM object, by reflection."""
    cls = jvm.java.lang.Class.forName(class_name)
    for field in cls.getDeclaredFields():
        if field.getName() == name or field.getName().endswith("$$" + name):
            field.setAccessible(True)
            return field.get(obj)
    raise LookupError(f"{class_name}.{name}")




def cds_archive() -> Path:
    """Path of the CDS archive matching the default JVM settings (it may not exist)."""
    # PLAN names the query the training run warms up: a new plan loads other classes.
    return cds.archive_path((*JAVA_OPTIONS, f"plan={PLAN}"), core_jars_first())
