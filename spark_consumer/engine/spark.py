"""The enrichment on a local SparkSession, sized for many replicas on a small machine.

Footprint choices (measured in ``benchmarks/test_consumer_footprint.py``):

* ``local[1]``, one shuffle partition, no UI, no event log, no adaptive execution.
* Small JVM: ``spark.driver.memory`` (-Xmx) plus ``spark.driver.extraJavaOptions`` (serial GC,
  C1 only, capped metaspace / code cache / direct memory, shrinking heap).
  ``spark.testing.reservedMemory`` lowers Spark's 300 MB reserve, without which any heap under
  450 MB is refused at start (exercised by every Spark test, which run with 128 MB).
* ``spark.driver.extraClassPath`` repeats Spark's own core jars first: every job's closure
  cleaning reads class files through the class path, and with ~280 jars in alphabetical order
  each miss walked most of them.
* ``spark.sql.execution.arrow.localRelationThreshold=0``: the Arrow batch becomes an RDD, not a
  ``LocalRelation``, so the analyzer does not walk every row of it in each rule.
* The join is a shuffled hash join with no exchange: the dimension is cached once as one
  partition (``coalesce(1)``, hint ``shuffle_hash``) and each batch is ``coalesce(1)``-ed, so
  both sides report ``SinglePartition`` and EnsureRequirements adds nothing
  (``spark.sql.defaultSizeInBytes`` / ``maxSinglePartitionBytes`` let its single-partition
  shortcut apply). The hash table of the 10k-row dimension is built inside the batch's one
  task. The broadcast hash join it replaced ran a second job per batch (collect the dimension,
  build and broadcast the relation, then destroy it): 200-220 ms of JVM CPU per 5k batch
  against 130-160 ms now (same session, interleaved, 2 cores at load 5-7).
* Everything about the query that can be built once is: the dimension, the JVM ``Seq`` of the
  projections and join keys, the input schema's JSON, the JVM methods that take the Arrow batch
  in and serve the result. A batch is 11 py4j calls in all (was ~190: pyspark converts each
  column list element by element, and its ``createDataFrame`` / ``toArrow`` made 66 calls,
  two of which searched all ~280 jars for ``PythonSQLUtils`` by short name); see
  :class:`_Plan`. Measured: median -10 to -17 ms per 5k batch (125-133 vs 136-142 ms, micro,
  interleaved).
* GC (``-Xlog:gc``, 200 x 5k batches): one young collection per batch (~32 MB eden, ~6 ms)
  and a full collection every 10-20 batches (100-200 ms) — the old generation holds 64-75 MB
  live in a 128 MB heap. ``SurvivorRatio=3``, ``TargetSurvivorRatio=90`` and ``-Xmn24m`` did
  not change the median (129-140 ms) or the JVM CPU per batch (166-179 ms).
* The block manager's two endpoint thread pools are cut to one core thread
  (:func:`_shrink_block_manager_pools`): Spark makes them core = max = 100, so the removal of
  each job's task-binary broadcast started one more thread until 200 idle threads held ~25 MB
  (JVM threads 260 -> 44).
* Measured floor of the rest (NMT + smaps, 2 cores, JDK 17, after 80 batches): JVM ~380 MB =
  heap ~119 MB committed (old generation holds ~60 MB live after a full GC: the session's
  function registry, parser, Scala reflection, ~113k strings; -Xmx96m measured +70 % JVM CPU
  per batch from GC, for -6 MB of RSS) + class data ~150 MB for ~19,800 classes (the CDS
  archive maps ~152 MB; without it metaspace + symbols + class space are ~165 MB) + code cache
  ~29 MB + malloc ~20 MB; Python ~100 MB (pyarrow + numpy ~60 MB of it, pandas refused).
  The CDS archive is relocated at start (this JDK defaults to ``ArchiveRelocationMode=1``),
  which dirties 120 of its 152 MB; ``-XX:ArchiveRelocationMode=0`` (diagnostic) measured 53 MB
  dirty, the rest clean file pages shared between replicas, but psutil RSS counts them all.
* Footprint experiments (micro-benchmark: engine alone in one process, 80 x 5k
  batches, peak RSS of Python + JVM, median JVM CPU per batch; options interleaved; 2 cores
  shared with another run, load 1.2-3.6):

  - ``-Xmn16m`` (not kept): young generation fixed at 16 MB instead of ~1/3 of the heap. Micro:
    peak RSS 455 vs 478-483 MB, heap committed 87-92 vs 108-116 MB, the same JVM CPU per batch.
    ``-Xmn12m`` / ``-Xmn8m``: 450-453 MB, slower p90. But in the benchmark (interleaved with
    the default, load 1.2-2.3) it saved only 15 MB under load (490-494 vs 505-509 MB) and
    cost engine time: median 154 / 170 ms vs 125 / 152 ms, p90 265 / 280 vs 175 / 210 ms
    (more minor collections inside the batch).
  - ``spark.sql.codegen.wholeStage=false`` (+ ``factoryMode=NO_CODEGEN``): no gain. Classes
    18,950 -> 18,790 (the CDS archive already holds Janino and the generated-code support),
    the same metaspace and code cache, +10-20 % JVM CPU per batch (140-180 vs 130-150 ms).
  - ``-XX:ArchiveRelocationMode=0``: the same RSS (480 MB): the pages it leaves clean are still
    resident and counted; not kept (also a diagnostic option). ``MinHeapFreeRatio=5`` /
    ``MaxHeapFreeRatio=10``: -2 to -4 MB, +6-9 % CPU; not kept.
  - C1 thresholds raised x10 (``Tier3*Threshold``): code cache 26 -> 14 MB, peak -15 MB, but
    +30 % JVM CPU per batch (x3: code cache 20 MB, peak -3 to -5 MB, +6 % CPU);
    full tiered (C2): +60 % CPU over 80 batches. Neither kept.
  - Python: pandas is already refused and ``MALLOC_ARENA_MAX=2`` / the system Arrow pool are
    set by the replica launcher (``spark_consumer.__main__``); after start only pyarrow and
    numpy of the big modules are loaded (Python RSS ~102 MB).
  - Not done, measured: the live heap (64 MB after 60 batches, ``GC.class_histogram``) holds
    31 MB of ``byte[]`` (117k; the 114k strings are ~4 MB of it) and 2.9 MB of ``int[]``:
    16.4 MB of them are the central directories of the 279 jars the class loader keeps open
    (279 ``ZipFile$Source``, 292 ``Inflater`` with native zlib state); the 74 jars classes are
    loaded from account for 8.9 MB of it. A JVM
    started from a SPARK_HOME whose ``jars/`` holds only the 74 jars classes were loaded from
    (``-Xlog:class+load``) measured peak RSS 446 vs 466 MB, heap 82 vs 91 MB (both without
    CDS). It would need a curated jar list per pyspark version and misses resources / error
    paths of the jars left out.
* A class-data-sharing archive, when prepared (:mod:`spark_consumer.engine.cds`), cuts the
  engine start by ~4 s.
* The JVM ignores SIGTERM/SIGINT (started by :func:`pytest_lagscale.contract.jvm.launch_gateway`
  through a ``trap '' TERM INT`` wrapper), so a SIGTERM sent to the replica's process group
  reaches only Python, which drains and then stops Spark. The JVM still dies with its parent:
  the gateway exits when its stdin closes.
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
