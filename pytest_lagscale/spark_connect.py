"""A Spark Connect server run by the harness: for tests, and the shared server of a run.

Replicas started with ``--engine spark-connect --spark-remote URL`` send every batch to one
Spark Connect server (:mod:`spark_consumer.engine.connect`). :class:`SparkConnectServer` runs
that server on this machine from the pyspark installation's own jars, in the foreground
(``bin/spark-submit`` execs the JVM; pyspark's ``sbin/start-connect-server.sh`` would daemonize
it out of our process group), inside a :class:`~pytest_lagscale.process.ManagedProcess`: its own
process group, SIGTERM then SIGKILL on stop, and SIGTERM when the harness dies.

1. pick a free port on 127.0.0.1;
2. write log4j2 settings (warnings, plus the Connect service's own INFO lines) into the work
   directory; the server's output goes to ``<work dir>/logs/server.log``;
3. start ``spark-submit --class SparkConnectServer`` with :data:`SERVER_SETTINGS` (local mode,
   2 shuffle partitions, no UI, loopback only) and a per-start id setting;
4. ready when a Connect client session answers ``SELECT 1`` and reports that id (so another
   server that took the port a moment ago is never taken for ours); a failed bind starts again
   on a fresh port;
5. stop: SIGTERM, SIGKILL after ``stop_timeout_s``, reap the whole group.

Load: :meth:`SparkConnectServer.busy_ratio` is the server's CPU seconds per wall second over the
cores available (metric ``spark_connect_server_busy_ratio``, 1.0 = every core busy). A shared
server near 1.0 is the group's bottleneck: every replica's batch waits for the same cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

from .contract.clock import Clock, RealClock
from .contract.jvm import LOG4J2_PROPERTIES
from .contract.errors import LagscaleError
from .kafka.embedded import free_port
from .lifecycle import HomeProcess
from .process import ManagedProcess, group_cpu_seconds
from .wait import wait_ready

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
BUSY_METRIC = "spark_connect_server_busy_ratio"
"""Name of the server's busy ratio wherever it is recorded (0..1, per the cores available)."""
ID_SETTING = "spark.lagscale.connect.server.id"
#: How many times :meth:`SparkConnectServer.start` picks a fresh port after a failed bind.
PORT_ATTEMPTS = 3
SERVER_SETTINGS: dict[str, str] = {
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
}
"""Small-footprint settings: loopback only, no UI or event log, few shuffle partitions."""

_LOG4J2 = LOG4J2_PROPERTIES.replace("rootLogger.level = error", "rootLogger.level = warn") + """\
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


class SparkConnectError(LagscaleError):
    """The Spark Connect server could not be started (its JVM exited, or its port was taken)."""


class _PortTaken(Exception):
    """The server's JVM could not bind its port."""


class BusySampler:
    """CPU seconds per wall second of a process (group), over the cores available.

    Args:
        read_cpu_s: returns the CPU seconds (user + system) used so far.
        cores: the cores available (the ratio's 1.0).
        clock: the time source (monotonic seconds).

    Example:
        >>> from pytest_lagscale.contract.clock import FakeClock
        >>> cpu, clock = [0.0], FakeClock()
        >>> sampler = BusySampler(lambda: cpu[0], cores=2, clock=clock)
        >>> cpu[0], _ = 3.0, clock.advance(2.0)
        >>> sampler.sample()
        0.75
    """

    def __init__(self, read_cpu_s: Callable[[], float], cores: int, clock: Clock):
        if cores < 1:
            raise ValueError(f"cores: {cores!r} is below 1; pass the cores available")
        self._read, self.cores, self._clock = read_cpu_s, cores, clock
        self._last = (clock.now(), read_cpu_s())

    def sample(self) -> float | None:
        """The busy ratio since the previous sample (or since construction): CPU seconds over
        wall seconds over :attr:`cores`, 1.0 = every core busy; None when no time passed."""
        now_s, cpu_s = self._clock.now(), self._read()
        then_s, then_cpu_s = self._last
        self._last = (now_s, cpu_s)
        if now_s <= then_s:
            return None
        return max(0.0, cpu_s - then_cpu_s) / (now_s - then_s) / self.cores


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class SparkConnectServer(HomeProcess):
    """A Spark Connect server of pyspark's own jars, in the foreground, in its own group.

    Args:
        work_dir: directory for settings, Spark's scratch space and ``logs/``; a fresh
            temporary directory (removed on stop) when None. A given directory is kept.
        master: Spark master of the server (``local[2]``: two task threads).
        driver_memory_mb: the server JVM's heap in MiB.
        settings: extra Spark settings, applied over :data:`SERVER_SETTINGS`.
        startup_timeout_s: seconds to wait for readiness before :class:`ReadinessTimeout`.
        stop_timeout_s: seconds between SIGTERM and SIGKILL on stop.
        clock: time source of :meth:`busy_ratio` (monotonic seconds).

    Raises:
        SparkConnectError: from :meth:`start` when the JVM exits during startup (message
            carries the exit code, the log's path and its last 20 lines) or the port was
            taken on every attempt.
        ReadinessTimeout: from :meth:`start` when no client session is answered in time.
        ImportError: from :meth:`start` without pyspark and its Connect client dependencies.

    Example:
        >>> with SparkConnectServer() as server:  # doctest: +SKIP
        ...     print(server.url)
        sc://127.0.0.1:40123
    """

    def __init__(self, work_dir: str | os.PathLike[str] | None = None, *,
                 master: str = "local[2]", driver_memory_mb: int = 512,
                 settings: Mapping[str, str] | None = None, startup_timeout_s: float = 120.0,
                 stop_timeout_s: float = 10.0, clock: Clock | None = None):
        if driver_memory_mb < 256:
            raise SparkConnectError(f"driver_memory_mb: {driver_memory_mb!r} is below 256; "
                                    "give the server >= 256 MiB")
        self._given_dir = Path(work_dir) if work_dir else None
        self.master = master
        self.driver_memory_mb = driver_memory_mb
        self.settings = {**SERVER_SETTINGS, **{k: str(v) for k, v in (settings or {}).items()}}
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.clock = clock or RealClock()
        self.home: Path | None = None
        self.port: int | None = None
        self.process: ManagedProcess | None = None
        #: Seconds from :meth:`start` to the first answered session.
        self.startup_s: float | None = None
        self._server_id = uuid.uuid4().hex
        self._busy: BusySampler | None = None

    @property
    def url(self) -> str:
        """``sc://127.0.0.1:<port>``, the replicas' ``--spark-remote``; raises before start."""
        if self.port is None:
            raise SparkConnectError("spark-connect: not started; call start() or use it as a "
                                    "context manager")
        return f"sc://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The server's pid (== its process group id); raises before start."""
        if self.process is None:
            raise SparkConnectError("spark-connect: not started; call start() first")
        return self.process.pid

    @property
    def log_path(self) -> Path | None:
        """The server's output (``logs/server.log``; None before start)."""
        return self.home / "logs" / "server.log" if self.home else None

    def start(self) -> "SparkConnectServer":
        """Start the server and wait until a client session is answered; returns self."""
        if self.process is not None:
            return self
        started = time.monotonic()
        self.home = self._given_dir or Path(tempfile.mkdtemp(prefix="lagscale-connect-"))
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port = free_port()
            self.process = ManagedProcess("spark-connect", self._argv(),
                                          log_path=self.log_path).start()
            try:
                self._wait_ready(started)
                break
            except _PortTaken:
                self.process.stop(self.stop_timeout_s)
                self.process = None
                assert self.log_path is not None
                self.log_path.rename(self.log_path.with_name(f"server.log.attempt-{attempt}"))
                if attempt == PORT_ATTEMPTS:
                    raise SparkConnectError(
                        f"spark-connect: port {self.port} was taken by another process "
                        f"({attempt} attempts); see {self.home / 'logs'}") from None
        self.startup_s = time.monotonic() - started
        pgid = self.pid
        self._busy = BusySampler(lambda: group_cpu_seconds(pgid), available_cores(), self.clock)
        return self

    def busy_ratio(self) -> float | None:
        """The server's busy ratio (:data:`BUSY_METRIC`) since the previous call, or since it
        became ready: its process group's CPU seconds per wall second over the cores
        available, 1.0 = every core busy. None before start or when no time passed."""
        return None if self._busy is None else self._busy.sample()

    # -- steps ---------------------------------------------------------------------------
    def _argv(self) -> list[str]:
        from pyspark.find_spark_home import _find_spark_home

        assert self.home is not None
        log4j = self.home / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        (self.home / "local").mkdir(exist_ok=True)
        conf = {**self.settings, "spark.connect.grpc.binding.port": str(self.port),
                "spark.local.dir": str(self.home / "local"), ID_SETTING: self._server_id}
        return [os.path.join(_find_spark_home(), "bin", "spark-submit"),
                "--class", SERVER_CLASS, "--name", "lagscale-spark-connect",
                "--master", self.master, "--driver-memory", f"{self.driver_memory_mb}m",
                "--driver-java-options", f"-Dlog4j2.configurationFile=file:{log4j}",
                *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
                "spark-internal"]

    def _wait_ready(self, started: float) -> None:
        assert self.process is not None and self.log_path is not None
        log_path = self.log_path

        def port_taken(code: int) -> None:
            if "Address already in use" in log_path.read_text(errors="replace"):
                raise _PortTaken()

        wait_ready(self._answers, self.process, timeout_s=self.startup_timeout_s,
                   poll_interval_s=0.5, started=started, exit_error=SparkConnectError,
                   on_exit=port_taken,
                   exited=lambda how: f"spark-connect: server {how} during startup; see {log_path}",
                   timed_out=lambda: (
                       f"spark-connect: timed out after {self.startup_timeout_s:.0f} s waiting for "
                       f"a session on {self.url}; raise startup_timeout_s or check {log_path}"))

    def _answers(self) -> bool:
        """True when a client session on our port runs ``SELECT 1`` and reports our id."""
        import socket

        with socket.socket() as probe:  # cheap: no gRPC while the JVM is still starting
            probe.settimeout(0.5)
            if probe.connect_ex(("127.0.0.1", self.port or 0)) != 0:
                return False
        return _session_answers(self.url, self._server_id)


def _session_answers(url: str, server_id: str) -> bool:
    from pyspark.sql.connect.client import DefaultChannelBuilder
    from pyspark.sql.connect.client.retries import DefaultPolicy
    from pyspark.sql.connect.session import SparkSession

    session: Any = None
    try:
        session = SparkSession.builder.channelBuilder(DefaultChannelBuilder(url)).create()
        session.client.set_retry_policies([DefaultPolicy(max_retries=0)])
        return (session.sql("SELECT 1 AS one").collect()[0].one == 1
                and session.conf.get(ID_SETTING, None) == server_id)
    except Exception:  # not answering yet (UNAVAILABLE), or answering for another server
        return False
    finally:
        if session is not None:
            session.stop()


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - manual entry point
    """Run a server until Ctrl-C: ``python -m pytest_lagscale.spark_connect``."""
    with SparkConnectServer() as server:
        print(server.url, flush=True)
        try:
            while server.process and server.process.running():
                time.sleep(5)
                print(f"{BUSY_METRIC} {server.busy_ratio():.3f}", flush=True)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
