"""A small local SparkSession with its own JVM, for the harness's batch jobs (reconciliation).

:class:`LocalSpark` starts a ``local[1]`` session (:data:`SPARK_SETTINGS`, no UI, loopback only)
through its own py4j gateway and stops both the session and the JVM, also when the start failed
half-way, so no JVM outlives the job.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from ..contract.jvm import (LOCAL_SESSION_SETTINGS, LOG4J2_PROPERTIES, core_jars_first,
                            launch_gateway, shutdown_gateway)
from ..contract.errors import LagscaleError
from ..lifecycle import StartStop

log = logging.getLogger(__name__)

DRIVER_MEMORY = "384m"
"""Heap of the reconciliation JVM: the aggregation and the join spill to disk beyond it.
``spark.testing.reservedMemory`` lowers Spark's 300 MB reserve (without it any heap under
450 MB is refused at start), as in ``spark_consumer/engine/spark.py``."""
JAVA_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-XX:-UsePerfData")
"""JVM options: serial GC and C1 only. The job's first query is dominated by class loading and
code generation; C1 alone roughly halved start plus first query on the 2-core machine."""
SPARK_SETTINGS: dict[str, str] = {**LOCAL_SESSION_SETTINGS, "spark.driver.memory": DRIVER_MEMORY}
"""Settings of :class:`LocalSpark`: the replica engine's local-session base (one core, one
shuffle partition, loopback only, no UI) with a larger heap.
:class:`LocalSpark` adds ``spark.driver.extraClassPath`` (Spark's core jars first: every job's
closure cleaning reads class files through the class path, and a miss walks ~280 jars in
alphabetical order; see :func:`pytest_lagscale.contract.jvm.core_jars_first`), ``spark.local.dir`` (a
temporary directory, removed on stop) and ``spark.driver.extraJavaOptions``."""


class LocalSpark(StartStop):
    """A SparkSession of its own JVM (:data:`SPARK_SETTINGS`), stopped with the JVM.

    ``start()`` launches the py4j gateway JVM and a ``local[1]`` session; ``stop()`` stops the
    session, shuts the gateway down, closes the JVM's stdin (its exit signal), waits up to
    ``timeout_s`` and kills it if needed. As a context manager it stops on exit, also when
    ``start`` failed half-way.

    Args:
        app_name: Spark application name.
        settings: extra Spark settings over :data:`SPARK_SETTINGS`.
        log_path: file receiving the JVM's stdout and stderr (appended), or None to leave
            them on this process's (the JVM's start-up notices then reach the terminal).

    Raises:
        ImportError: from :meth:`start` when pyspark is not installed.
        LagscaleError: from :meth:`start` when another SparkContext is active in this process,
            or when the JVM or the SparkContext failed to start (nothing is left running).
    """

    def __init__(self, app_name: str = "lagscale-reconcile",
                 settings: dict[str, str] | None = None, log_path: str | Path | None = None):
        self._app_name = app_name
        self._settings = {**SPARK_SETTINGS, **(settings or {})}
        self._log_path = None if log_path is None else Path(log_path)
        self._log: IO[bytes] | None = None
        self._workdir: Path | None = None
        self._gateway: Any = None
        self.session: Any = None

    def start(self) -> "LocalSpark":
        """Launch the JVM and the session; returns self (idempotent)."""
        if self.session is not None:
            return self
        from pyspark import SparkConf, SparkContext
        from pyspark.sql import SparkSession

        if SparkContext._active_spark_context is not None:
            raise LagscaleError("reconcile: a SparkContext is already active in this process; "
                                "pass its SparkSession as spark= instead")
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self._log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._workdir = Path(tempfile.mkdtemp(prefix="lagscale-reconcile-"))
        (self._workdir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        java = [*JAVA_OPTIONS,
                f"-Dlog4j2.configurationFile=file:{self._workdir / 'log4j2.properties'}"]
        conf = SparkConf(loadDefaults=False).setAppName(self._app_name)
        for key, value in {"spark.driver.extraClassPath": core_jars_first(), **self._settings,
                           "spark.local.dir": str(self._workdir),
                           "spark.driver.extraJavaOptions": " ".join(java)}.items():
            conf.set(key, value)
        try:
            self._gateway = launch_gateway(conf, output=self._log)
            sc = SparkContext(conf=conf, gateway=self._gateway)
            sc.setLogLevel("ERROR")
            self.session = SparkSession(sc)
        except Exception as exc:
            reason = _summary(exc)  # before stop(): a py4j error's text comes from the JVM
            self.stop()
            where = "" if self._log_path is None else f"; the JVM's output is in {self._log_path}"
            raise LagscaleError(f"reconcile: Spark did not start ({reason}); check the JDK "
                                f"(java -version) and the Spark settings{where}") from exc
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the session and the JVM (waiting up to ``timeout_s`` before killing it)."""
        from pyspark import SparkContext

        try:
            if self.session is not None:
                self.session.stop()
        finally:
            self.session = None
            if self._gateway is not None:
                shutdown_gateway(self._gateway, timeout_s)
                if SparkContext._gateway is self._gateway:
                    SparkContext._gateway = None
                    SparkContext._jvm = None
                self._gateway = None
            if self._workdir is not None:
                shutil.rmtree(self._workdir, ignore_errors=True)
                self._workdir = None
            if self._log is not None:
                self._log.close()
                self._log = None


class WarmingSpark:
    """A :class:`LocalSpark` started on a thread of its own, so that its JVM start (about 6 s
    on the 2-core machine) overlaps other work: a run whose part died starts the one its
    reconciliation needs while it records and stops its parts.

    Args:
        log_path: as :class:`LocalSpark`.

    ``session(timeout_s)`` waits for the start and returns the SparkSession, or None when the
    start failed or did not end in time (the caller then starts a session of its own; the
    failure is logged). ``stop()`` waits for the start to end and stops the JVM; idempotent.
    """

    def __init__(self, log_path: str | Path | None = None):
        self._spark = LocalSpark(log_path=log_path)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="lagscale-warm-spark",
                                        daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self._spark.start()
        except BaseException as exc:  # reported by session(); nothing is left running
            self._error = exc

    def session(self, timeout_s: float = 120.0) -> Any:
        """The started SparkSession, or None (start failed or still running after
        ``timeout_s`` seconds)."""
        self._thread.join(timeout_s)
        if self._thread.is_alive() or self._error is not None:
            log.warning("the warm reconciliation session is not there (%s); starting another",
                        "still starting" if self._error is None else _summary(self._error))
            return None
        return self._spark.session

    def stop(self) -> None:
        """Stop the session and its JVM once the start has ended."""
        self._thread.join()
        self._spark.stop()


def _summary(exc: BaseException) -> str:
    """One line of an exception: a py4j error's Java exception line, else its first line."""
    try:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    except Exception:  # py4j renders the message through the JVM, which may be gone
        return type(exc).__name__
    java = [line[2:] for line in lines if line.startswith(": ")]
    line = (java or lines or [type(exc).__name__])[0]
    return line if len(line) <= 300 else line[:297] + "..."
