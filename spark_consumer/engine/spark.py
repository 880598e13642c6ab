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
* The dimension table is created, cached and materialised once; the broadcast-join plan's
  columns are built once; each batch costs one ``createDataFrame`` and one ``toArrow``.
* Each batch's broadcast of the dimension is destroyed as soon as the batch is collected.
  Left to Spark's ContextCleaner (which acts only after a GC found the broadcast unreachable),
  the relations piled up in the driver's memory store: with a 128 MB heap this measured about
  two full GCs per 5k-record batch and 2.5x the engine time.
* A class-data-sharing archive, when prepared (:mod:`spark_consumer.engine.cds`), cuts the
  engine start by ~4 s.
* The JVM ignores SIGTERM/SIGINT (started through a ``trap '' TERM INT`` wrapper), so a SIGTERM
  sent to the replica's process group reaches only Python, which drains and then stops Spark.
  The JVM still dies with its parent: the gateway exits when its stdin closes.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import cds
from .base import ENRICHED_SCHEMA

log = logging.getLogger(__name__)

DRIVER_MEMORY = "128m"
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
    "spark.master": "local[1]",
    "spark.driver.memory": DRIVER_MEMORY,
    "spark.testing.reservedMemory": str(32 * 1024 * 1024),
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.sql.execution.arrow.localRelationThreshold": "0",
    "spark.sql.broadcastExchange.maxThreadThreshold": "1",
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
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
"""


class SparkEngine:
    """Enrichment on a local SparkSession (broadcast join with the cached dimension table).

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
        self._gateway = _launch_gateway(conf, self._workdir)
        sc = SparkContext(conf=conf, gateway=self._gateway)
        sc.setLogLevel("ERROR")
        self._spark = SparkSession(sc)
        self._plan = _Plan(self._spark, self._dimension)
        self.enrich(_warmup_records(64))
        return self

    def _spark_conf(self, workdir: Path) -> dict[str, str]:
        (workdir / "log4j2.properties").write_text(_LOG4J2)
        (workdir / "local").mkdir(exist_ok=True)
        java = [*JAVA_OPTIONS, *self._extra_java,
                f"-Dlog4j2.configurationFile=file:{workdir / 'log4j2.properties'}"]
        if self._use_cds:
            archive = cds_archive()
            java += cds.use_options(archive)
            self.cds_archive = archive if archive.is_file() else None
        return {
            "spark.driver.extraClassPath": _core_jars_first(),
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
            _shutdown_gateway(self._gateway, jvm_exit_timeout_s)
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
    """Everything about the query that can be built once: dimension, columns, projections."""

    def __init__(self, spark: Any, dimension: pa.Table):
        from pyspark.sql import functions as F

        self._spark = spark
        dim = spark.createDataFrame(dimension).cache()
        dim.count()
        self._dimension = F.broadcast(dim)
        buckets = F.lit(dimension.num_rows)
        self._with_bucket = [
            *(F.col(c) for c in ("row", "partition", "offset", "seq", "entity_id", "ts_ns",
                                 "processed_at_ns")),
            F.pmod(F.col("entity_id"), buckets).cast("int").alias("bucket"),
            ((F.col("processed_at_ns").cast("double") - F.col("ts_ns").cast("double"))
             / F.lit(1e6)).alias("event_lag_ms"),
        ]
        self._output = [F.col(c) for c in ENRICHED_SCHEMA.names]
        self._release = True

    def run(self, records: pa.Table) -> pa.Table:
        df = self._spark.createDataFrame(records)
        joined = df.select(*self._with_bucket).join(self._dimension, "bucket", "left")
        query = joined.select(*self._output)
        table = query.toArrow()
        self._release_broadcasts(query)
        return table

    def _release_broadcasts(self, query: Any) -> None:
        """Destroy the broadcasts the query made (see the module docstring)."""
        if not self._release:
            return
        try:
            for exchange in _broadcast_exchanges(query._jdf.queryExecution().executedPlan()):
                exchange.relationFuture().get().destroy()
        except Exception:  # Spark internals moved: fall back to the ContextCleaner
            log.warning("spark engine: cannot destroy per-batch broadcasts; leaving them to "
                        "Spark's ContextCleaner", exc_info=True)
            self._release = False


def _broadcast_exchanges(plan: Any) -> list[Any]:
    """The BroadcastExchange nodes of a JVM physical plan (depth-first)."""
    if plan.nodeName() == "BroadcastExchange":
        return [plan]
    children = plan.children()
    return [x for i in range(children.size()) for x in _broadcast_exchanges(children.apply(i))]


_CORE_JAR_PREFIXES = (
    "spark-sql_", "spark-core_", "spark-catalyst_", "spark-sql-api_", "spark-common-utils_",
    "spark-unsafe_", "spark-network-common_", "scala-library-", "scala-reflect-", "arrow-",
    "py4j-", "json4s-", "jackson-core-", "jackson-databind-", "log4j-",
)


def cds_archive() -> Path:
    """Path of the CDS archive matching the default JVM settings (it may not exist)."""
    return cds.archive_path(JAVA_OPTIONS, _core_jars_first())


def _core_jars_first() -> str:
    """Class path of the jars Spark touches on every job, to be searched before the rest."""
    from pyspark.find_spark_home import _find_spark_home

    jars = Path(_find_spark_home()) / "jars"
    if not jars.is_dir():
        return ""
    return os.pathsep.join(
        str(j) for j in sorted(jars.glob("*.jar")) if j.name.startswith(_CORE_JAR_PREFIXES)
    )


def _launch_gateway(conf: Any, workdir: Path) -> Any:
    """Start the JVM through a wrapper that makes it ignore SIGTERM and SIGINT."""
    from pyspark.find_spark_home import _find_spark_home
    from pyspark.java_gateway import launch_gateway

    submit = os.path.join(_find_spark_home(), "bin", "spark-submit")
    wrapper = workdir / "spark-submit-noterm"
    wrapper.write_text(f"#!/bin/sh\ntrap '' TERM INT\nexec {shlex.quote(submit)} \"$@\"\n")
    wrapper.chmod(0o755)
    return launch_gateway(conf, popen_kwargs={"executable": str(wrapper)})


def _shutdown_gateway(gateway: Any, timeout_s: float = 5.0) -> None:
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:  # the JVM may already be gone; it is stopped below either way
        log.debug("py4j gateway shutdown failed", exc_info=True)
    if proc is None:
        return
    if proc.stdin is not None:
        proc.stdin.close()  # PythonGatewayServer exits on stdin EOF
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _warmup_records(n: int) -> pa.Table:
    from ..records import RECORD_SCHEMA

    now = time.time_ns()
    ids = np.arange(n, dtype=np.int64)
    return pa.Table.from_arrays(
        [pa.array(ids.astype(np.int32)), pa.array(np.zeros(n, np.int32)), pa.array(ids),
         pa.array(ids), pa.array(np.full(n, now, np.int64)), pa.array(ids),
         pa.array(np.full(n, now, np.int64))],
        schema=RECORD_SCHEMA,
    )
