"""An embedded Apache Kafka broker: one combined KRaft node on 127.0.0.1, no Docker.

Life of one :class:`EmbeddedKafka`:

1. resolve the pinned classpath (:mod:`.artifacts`, cached per user);
2. pick two free loopback ports (client, controller) and a data directory for this run;
3. write ``server.properties`` and a log4j2 config, generate a cluster id in Python and run
   ``kafka.tools.StorageTool format --standalone`` (dynamic quorum, as the 4.x quickstart);
4. start ``kafka.Kafka`` in its own process group (:class:`~pytest_lagscale.process.ManagedProcess`);
5. ready when an AdminClient lists the cluster's metadata;
6. stop: SIGTERM (controlled shutdown), SIGKILL after ``stop_timeout_s``, reap the whole group.

Source: apache/kafka 4.x quickstart and config/server.properties (``kafka-storage format
--standalone``, a combined broker+controller node), core/.../tools/StorageTool.scala.
"""

from __future__ import annotations

import base64
import os
import random
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Mapping

from ..contract.errors import BrokerError
from ..exit_status import describe_exit
from ..lifecycle import HomeProcess
from ..process import ManagedProcess
from ..wait import wait_ready
from . import artifacts

#: Broker settings the harness changes from Kafka's defaults, and why.
HARNESS_BROKER_SETTINGS: dict[str, str] = {
    # A single node cannot hold replication factor 3 internal topics.
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # Default 3000 ms delays every first classic rebalance; experiments time rebalances.
    "group.initial.rebalance.delay.ms": "0",
    # Let clients pick short classic session timeouts (tests restart static members).
    "group.min.session.timeout.ms": "3000",
    # KIP-848 timing is broker-side; 4.x defaults are 45 s / 5 s with min == default.
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "auto.create.topics.enable": "false",
    "num.partitions": "1",
    "log.retention.hours": "24",
}

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {logs}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


#: How many ports below the kernel's ephemeral range :func:`free_port` picks among.
_PICK_SPAN = 12_000
#: Seconds a port :func:`free_port` handed out is not handed out again in this process: time for
#: the child it was given to start and bind it (a Spark replica binds after its JVM starts).
HOLD_S = 600.0
_random = random.SystemRandom()
_handed_out: dict[int, float] = {}
_handed_out_lock = threading.Lock()


def _ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    """The lowest port of Linux's ephemeral range (32768 by default)."""
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` a moment ago, for a child to listen on.

    Picked at random among the :data:`_PICK_SPAN` ports below the kernel's ephemeral range:
    the kernel takes the local port of every outgoing connection, and of every bind to port 0,
    from that range, so a port picked there could be taken by any connection between this check
    and the child's bind (seen in CI: KEDA's metrics gRPC port taken by another test's
    connection, "bind: address already in use"). Below it only another explicit pick can take
    it. Falls back to a port the kernel gives when no pick binds in 50 tries.

    A port handed out is not handed out again by this process for :data:`HOLD_S` seconds, bound
    or not: between the pick and the child's bind the port is free, and a second caller in that
    window (a burst of 24 replicas starting together) could otherwise be given the same port
    (seen at full scale: a replica exited with ``OSError: [Errno 98] Address already in use``).
    """
    low = _ephemeral_low()
    span = (max(1024, low - _PICK_SPAN), low - 1)
    with _handed_out_lock:
        now = time.monotonic()
        for port, at in list(_handed_out.items()):
            if now - at >= HOLD_S:
                del _handed_out[port]
        for _ in range(50 if span[1] > span[0] else 0):
            port = _random.randint(*span)
            if port in _handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            _handed_out[port] = now
            return port
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = sock.getsockname()[1]
        _handed_out[port] = now
        return port


#: How many times :meth:`EmbeddedKafka.start` picks fresh ports when another process took them.
PORT_ATTEMPTS = 3
#: Seconds the storage format (``kafka-storage format``) may take.
FORMAT_TIMEOUT_S = 120.0


class _PortTaken(Exception):
    """The broker could not have its ports: its JVM failed to bind, or another broker answered."""


def _bind_failed(home: Path | None) -> bool:
    """True when the broker's logs say a listener could not bind (``Address already in use``)."""
    if home is None:
        return False
    for name in ("stdout.log", "server.log"):
        path = home / "logs" / name
        if path.exists() and "Address already in use" in path.read_text(errors="replace"):
            return True
    return False


def read_cluster_id(meta_properties: Path) -> str:
    """The ``cluster.id`` in a formatted log directory's ``meta.properties``.

    Raises:
        BrokerError: the file is missing or has no ``cluster.id`` line.
    """
    try:
        for line in meta_properties.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "cluster.id":
                return value.strip()
    except OSError as exc:
        raise BrokerError(f"kafka: cannot read {meta_properties}: {exc}") from exc
    raise BrokerError(f"kafka: {meta_properties} has no cluster.id line")


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64, no padding, not starting with '-'.

    Source: apache/kafka clients/.../common/Uuid.java (toString) at 4.1.1.
    """
    while True:
        cid = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class EmbeddedKafka(HomeProcess):
    """A single-node KRaft Apache Kafka broker run from the pinned Maven classpath.

    Args:
        data_dir: directory for config, data and logs; a fresh temporary directory (removed on
            stop) when None. A given directory is kept.
        heap_mb: broker JVM heap in MiB (``-Xms`` = ``-Xmx``).
        broker_settings: extra ``server.properties`` entries, applied over
            :data:`HARNESS_BROKER_SETTINGS`.
        startup_timeout_s: seconds to wait for readiness before :class:`ReadinessTimeout`.
        stop_timeout_s: seconds between SIGTERM and SIGKILL on stop.
        java: the ``java`` executable.
        host: the address of the client listener (advertised as is): ``127.0.0.1``, or an
            address of this host that pods reach (the kubelet node's bridge gateway); the
            controller listener stays on loopback.

    Raises:
        BrokerError: from :meth:`start` when resolution or formatting fails or the broker exits
            during startup (message carries the exit code and the last 20 log lines).
        ReadinessTimeout: from :meth:`start` when the broker is not ready in time.

    Example:
        >>> with EmbeddedKafka() as kafka:  # doctest: +SKIP
        ...     print(kafka.bootstrap_servers)
        127.0.0.1:40123
    """

    kind = "embedded"

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        heap_mb: int = 512,
        broker_settings: Mapping[str, str] | None = None,
        startup_timeout_s: float = 90.0,
        stop_timeout_s: float = 20.0,
        java: str = "java",
        host: str = "127.0.0.1",
    ):
        if heap_mb < 128:
            raise BrokerError(f"heap_mb: {heap_mb!r} is below 128; give the broker >= 128 MiB")
        self._given_dir = Path(data_dir) if data_dir else None
        self.heap_mb = heap_mb
        self.settings: dict[str, str] = {**HARNESS_BROKER_SETTINGS,
                                         **{k: str(v) for k, v in (broker_settings or {}).items()}}
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.java = java
        self.host = host
        self.client_config: dict[str, str] = {}
        self.version = artifacts.pinned_version()
        self.home: Path | None = None
        self.port: int | None = None
        self.controller_port: int | None = None
        self.process: ManagedProcess | None = None
        self.startup_s: float | None = None
        #: The cluster id in this broker's ``meta.properties``; readiness waits for a broker that
        #: reports it, so another broker on a reused port is never taken for this one.
        self.cluster_id: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``<host>:<port>`` (``127.0.0.1`` by default); raises BrokerError before :meth:`start`."""
        if self.port is None:
            raise BrokerError("kafka: not started; call start() or use it as a context manager")
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        """The broker's ``server.log`` (None before start)."""
        return self.home / "logs" / "server.log" if self.home else None

    def start(self) -> "EmbeddedKafka":
        """Format storage, start the broker and wait until an AdminClient sees it."""
        if self.process is not None:
            return self
        started = time.monotonic()
        dist = artifacts.resolve()
        self.home = self._given_dir or Path(tempfile.mkdtemp(prefix="lagscale-kafka-"))
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port, self.controller_port = free_port(self.host), free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
            props = self._write_config()
            self._format(dist, props)
            self.process = ManagedProcess(
                "kafka", self._broker_argv(dist, props),
                log_path=self.home / "logs" / "stdout.log",
            ).start()
            try:
                self._wait_ready(time.monotonic())
                break
            except _PortTaken:
                # free_port() is a moment-ago answer: another process (a pytest-xdist worker's
                # broker) bound the port between our probe and the JVM's bind. Try fresh ports
                # on fresh storage (the KRaft bootstrap checkpoint names the controller port).
                self.process.stop(self.stop_timeout_s)
                self.process = None
                for name in ("stdout.log", "server.log"):
                    log = self.home / "logs" / name
                    if log.exists():
                        log.rename(log.with_name(f"{name}.attempt-{attempt}"))
                if attempt == PORT_ATTEMPTS or self._given_dir is not None:
                    raise BrokerError(
                        f"kafka: ports {self.port}/{self.controller_port} were taken by another "
                        f"process ({attempt} attempt(s); a given data_dir is not re-formatted); "
                        f"see {self.home / 'logs'}") from None
                shutil.rmtree(self.home / "data", ignore_errors=True)
        self.startup_s = time.monotonic() - started
        return self

    def restart(self, *, graceful: bool = True, down_s: float = 0.0,
                wait: Any = None) -> float:
        """Stop the broker and start it again on the same data directory and ports (the same
        cluster id, topics, committed offsets and logs); returns the seconds it was down (from
        the stop to the first metadata answer of the new process).

        Args:
            graceful: SIGTERM (controlled shutdown) then SIGKILL after ``stop_timeout_s``;
                False: SIGKILL at once, as a crash.
            down_s: seconds to stay down between the stop and the start.
            wait: ``wait(seconds) -> bool`` used for ``down_s`` (True ends the wait early: the
                run is stopping); default ``time.sleep``.

        Raises:
            BrokerError: not started, or the new process exited during startup.
            ReadinessTimeout: the new process was not ready within ``startup_timeout_s``.
        """
        if self.process is None or self.home is None:
            raise BrokerError("kafka: not started; nothing to restart")
        stopped = time.monotonic()
        self.process.stop(self.stop_timeout_s if graceful else 0, graceful=graceful)
        if down_s > 0:
            (wait or time.sleep)(down_s)
        dist = artifacts.resolve()
        self.process = ManagedProcess(
            "kafka", self._broker_argv(dist, self.home / "server.properties"),
            log_path=self.home / "logs" / "stdout.log").start()
        self._wait_ready(time.monotonic())
        return time.monotonic() - stopped

    # -- steps ---------------------------------------------------------------------------
    def _write_config(self) -> Path:
        assert self.home is not None
        listeners = (f"PLAINTEXT://{self.host}:{self.port},"
                     f"CONTROLLER://127.0.0.1:{self.controller_port}")
        base = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.home / "data"),
        }
        props = self.home / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in {**base, **self.settings}.items()))
        (self.home / "log4j2.properties").write_text(_LOG4J2.format(logs=self.home / "logs"))
        return props

    def _jvm_base(self, dist: artifacts.KafkaDistribution, heap_mb: int) -> list[str]:
        assert self.home is not None
        return [self.java, f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m",
                "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                f"-Dkafka.logs.dir={self.home / 'logs'}", "-cp", dist.classpath]

    def _format(self, dist: artifacts.KafkaDistribution, props: Path) -> None:
        """Format the storage (kept as it is when a given directory was formatted before) and
        read back the cluster id it holds into :attr:`cluster_id`."""
        argv = [*self._jvm_base(dist, 256), "kafka.tools.StorageTool", "format",
                "-t", new_cluster_id(), "-c", str(props), "--standalone", "--ignore-formatted"]
        assert self.home is not None
        fmt = ManagedProcess("kafka-format", argv, log_path=self.home / "logs" / "format.log")
        with fmt:
            code = fmt.wait(FORMAT_TIMEOUT_S)
        if code != 0:
            tail = "\n".join(fmt.tail())
            why = f"timed out after {FORMAT_TIMEOUT_S:.0f} s" if code is None else describe_exit(code)
            raise BrokerError(f"kafka: storage format {why}; see {fmt.log_path}\n{tail}")
        self.cluster_id = read_cluster_id(self.home / "data" / "meta.properties")

    def _broker_argv(self, dist: artifacts.KafkaDistribution, props: Path) -> list[str]:
        return [*self._jvm_base(dist, self.heap_mb), "kafka.Kafka", str(props)]

    def _wait_ready(self, started: float) -> None:
        from confluent_kafka.admin import AdminClient  # heavy import, only when starting

        assert self.process is not None
        with AdminClient({"bootstrap.servers": self.bootstrap_servers,
                          "socket.connection.setup.timeout.ms": 1000,
                          "log_level": 0}) as admin:  # refused connects are expected here
            self._poll_ready(admin, started)  # the client is destroyed on return, here

    def _poll_ready(self, admin: Any, started: float) -> None:
        """Ask ``admin`` for metadata until this broker answers (see :meth:`_wait_ready`)."""
        assert self.process is not None
        foreign: list[str] = []  # cluster ids of another broker answering on our port

        def answers() -> bool:
            try:
                md = admin.list_topics(timeout=1.0)
            except Exception:  # KafkaException while the listener is not up yet
                return False
            if md.brokers and md.cluster_id == self.cluster_id:
                return True
            if md.brokers:
                foreign.append(md.cluster_id)
            return False

        def port_taken(code: int | None = None) -> None:
            if foreign or (code is not None and _bind_failed(self.home)):
                raise _PortTaken()

        wait_ready(answers, self.process, timeout_s=self.startup_timeout_s, poll_interval_s=0.2,
                   started=started, exit_error=BrokerError, tail=self._log_tail,
                   on_exit=port_taken, on_timeout=port_taken,
                   exited=lambda how: (f"kafka: broker {how} during startup; "
                                       f"see {self.log_path}"),
                   timed_out=lambda: (
                       f"kafka: timed out after {self.startup_timeout_s:.0f} s waiting for the "
                       f"broker on {self.bootstrap_servers}; raise startup_timeout_s or check "
                       f"{self.log_path}"))

    def _log_tail(self) -> str:
        assert self.process is not None
        lines = self.process.tail(10)
        if self.log_path and self.log_path.exists():
            lines += self.log_path.read_text(errors="replace").splitlines()[-10:]
        return "\n".join(lines[-20:])


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - manual smoke entry point
    """Run an embedded broker until Ctrl-C: ``python -m pytest_lagscale.kafka.embedded``."""
    with EmbeddedKafka() as kafka:
        print(kafka.bootstrap_servers, flush=True)
        try:
            while kafka.process and kafka.process.running():
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
