"""The one JVM launch path: Spark's gateway JVM for the replica engine and the reconciliation.

Both the replica's Spark engine (``spark_consumer.engine.spark``) and the harness's batch jobs
(:mod:`pytest_lagscale.analyze.local_spark`) start a small local SparkSession in a JVM of their
own through :func:`launch_gateway` and stop it with :func:`shutdown_gateway`; they share the
session base :data:`LOCAL_SESSION_SETTINGS`, the log4j configuration :data:`LOG4J2_PROPERTIES`
and the class path :func:`core_jars_first`. pyspark and py4j are imported inside the functions
only, so importing this module loads neither.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

LOCAL_SESSION_SETTINGS: dict[str, str] = {
    "spark.master": "local[1]",
    "spark.testing.reservedMemory": str(32 * 1024 * 1024),
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
}
"""One core, one shuffle partition, loopback only, no UI or event log, and Spark's 300 MB
memory reserve lowered (without it a heap under 450 MB is refused at start): the base of every
small local session, the replica's and the harness's batch jobs' alike."""
LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
"""
"""log4j2 configuration of every local JVM: errors only, on stderr."""

_CORE_JAR_PREFIXES = (  # Spark's core jars, searched first (see core_jars_first)
    "spark-sql_", "spark-core_", "spark-catalyst_", "spark-sql-api_", "spark-common-utils_",
    "spark-unsafe_", "spark-network-common_", "scala-library-", "scala-reflect-", "arrow-",
    "py4j-", "json4s-", "jackson-core-", "jackson-databind-", "log4j-",
)


def core_jars_first() -> str:
    """Class path of the jars Spark touches on every job, to be searched before the rest
    ('' when SPARK_HOME has no jars/): every job's closure cleaning reads class files through
    the class path, and with ~280 jars in alphabetical order each miss walked most of them."""
    from pyspark.find_spark_home import _find_spark_home

    jars = Path(_find_spark_home()) / "jars"
    if not jars.is_dir():
        return ""
    return os.pathsep.join(
        str(j) for j in sorted(jars.glob("*.jar")) if j.name.startswith(_CORE_JAR_PREFIXES)
    )


def launch_gateway(conf: Any, *, noterm_dir: Path | None = None,
                   output: IO[bytes] | None = None) -> Any:
    """Start Spark's JVM (``spark-submit`` running pyspark's gateway server) for a SparkConf
    and return the py4j gateway; the one JVM launch path of the project (replica engine and
    reconciliation). Stop it with :func:`shutdown_gateway`.

    Args:
        conf: the ``pyspark.SparkConf``.
        noterm_dir: when set, the JVM starts through a wrapper script written there that makes
            it ignore SIGTERM and SIGINT (``trap '' TERM INT``): a replica's process group gets
            the signal, Python drains, then stops Spark.
        output: a binary file receiving the JVM's stdout and stderr (None: inherited).

    Raises:
        whatever pyspark's ``launch_gateway`` raises when the JVM does not come up (e.g.
        ``RuntimeError: Java gateway process exited before sending its port number``).
    """
    from pyspark.java_gateway import launch_gateway as pyspark_launch_gateway

    popen_kwargs: dict[str, Any] = {}
    if noterm_dir is not None:
        from pyspark.find_spark_home import _find_spark_home

        submit = os.path.join(_find_spark_home(), "bin", "spark-submit")
        wrapper = noterm_dir / "spark-submit-noterm"
        wrapper.write_text(f"#!/bin/sh\ntrap '' TERM INT\nexec {shlex.quote(submit)} \"$@\"\n")
        wrapper.chmod(0o755)
        popen_kwargs["executable"] = str(wrapper)
    if output is not None:
        popen_kwargs.update(stdout=output, stderr=output)
    return pyspark_launch_gateway(conf, popen_kwargs=popen_kwargs)


def shutdown_gateway(gateway: Any, timeout_s: float = 5.0) -> None:
    """Shut a py4j gateway down and make its JVM exit: close its stdin (PythonGatewayServer
    exits on EOF), wait ``timeout_s`` seconds, then kill it."""
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

