"""Helpers to drive replica processes from tests and benchmarks (moved out of ``spark_consumer``:
the replica imports nothing from the harness but the contract layer, these helpers need it).

:class:`ReplicaProcess` runs ``python -m spark_consumer`` under
:class:`~pytest_lagscale.process.ManagedProcess` and reads what the replica exposes: its port
file, ``/ready``, ``/metrics`` and its JSONL event log. Every wait is bounded and fails with
:class:`~pytest_lagscale.contract.errors.ReadinessTimeout` or
:class:`~pytest_lagscale.contract.errors.ReplicaExited` carrying the last 20 lines of the replica's log.
"""

from __future__ import annotations

import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from pytest_lagscale.contract.errors import ReadinessTimeout, ReplicaExited
from pytest_lagscale.exit_status import describe_exit
from pytest_lagscale.load.events import EVENT_DTYPE, encode_events
from pytest_lagscale.load.producer import flush
from pytest_lagscale.process import ManagedProcess
from spark_consumer.eventlog import read_events


class Periodic:
    """Calls :meth:`sample` every ``interval_s`` seconds on a daemon thread while entered.

    Subclasses implement :meth:`sample` (exceptions it lets out end the thread, so catch the
    expected ones there). ``with Sub(...) as s:`` starts the thread; leaving the block stops
    it and joins it (5 s at most).
    """

    def __init__(self, interval_s: float, name: str = "sampler"):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def sample(self) -> None:
        """Take one sample (called on the sampler's thread)."""
        raise NotImplementedError

    def __enter__(self) -> "Periodic":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)


class ReplicaProcess:
    """One replica as a child process.

    Args:
        replica_id: ``--replica-id`` (also the process name).
        bootstrap: Kafka bootstrap servers.
        topic: topic to consume.
        store: the shared store directory.
        workdir: directory for this replica's log, event log and port file.
        args: extra flags (``--engine arrow``, ``--balancer range`` ...).
    """

    def __init__(self, replica_id: str, bootstrap: str, topic: str, store: Path, workdir: Path,
                 args: Sequence[str] = ()):
        self.replica_id = replica_id
        self.workdir = Path(workdir)
        self.event_log = self.workdir / f"{replica_id}.events.jsonl"
        self.port_file = self.workdir / f"{replica_id}.port"
        self.port_file.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "spark_consumer", "--bootstrap", bootstrap, "--topic", topic,
                "--store", str(store), "--replica-id", replica_id, "--event-log",
                str(self.event_log), "--port-file", str(self.port_file), *args]
        self.process = ManagedProcess(replica_id, argv,
                                      log_path=self.workdir / f"{replica_id}.log")
        self._port: int | None = None

    def start(self) -> "ReplicaProcess":
        self.process.start()
        return self

    def stop(self, timeout_s: float = 30.0, *, graceful: bool = True) -> str:
        """SIGTERM, grace, SIGKILL, reap (see ManagedProcess.stop)."""
        return self.process.stop(timeout_s, graceful=graceful)

    # -- reading the replica ---------------------------------------------------------------
    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.process.tail(lines))

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.event_log) if self.event_log.exists() else []

    def event_names(self) -> list[str]:
        return [e["event"] for e in self.events()]

    @property
    def port(self) -> int:
        if self._port is None:
            self._port = int(self.port_file.read_text())
        return self._port

    def get(self, path: str, timeout_s: float = 2.0) -> tuple[int, str]:
        """HTTP GET on the replica's server; returns (status, body)."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metrics(self) -> dict[str, float]:
        """Unlabelled samples and ``name{labels}`` samples of ``/metrics`` as floats."""
        from prometheus_client.parser import text_string_to_metric_families

        out: dict[str, float] = {}
        for family in text_string_to_metric_families(self.get("/metrics")[1]):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
        return out

    # -- bounded waits ---------------------------------------------------------------------
    def wait_for(self, what: str, check: Callable[[], bool], timeout_s: float,
                 interval_s: float = 0.1) -> None:
        """Poll ``check`` until true; raise with the log tail on timeout or early exit."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if check():
                    return
            except (OSError, ValueError):  # port file or server not there yet
                pass
            code = self.process.poll()
            if code is not None:
                raise ReplicaExited(self.replica_id, code, f"{self.replica_id}: "
                                    f"{describe_exit(code)} while waiting for {what}; last "
                                    f"log lines:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise ReadinessTimeout(f"{self.replica_id}: timed out after {timeout_s:.0f} s "
                                       f"waiting for {what}; last log lines:\n{self.tail()}")
            time.sleep(interval_s)

    def wait_ready(self, timeout_s: float = 60.0) -> "ReplicaProcess":
        self.wait_for("GET /ready == 200", lambda: self.get("/ready")[0] == 200, timeout_s)
        return self

    def wait_event(self, name: str, timeout_s: float = 30.0, after: int = 0) -> dict[str, Any]:
        """The first event ``name`` at index >= ``after`` in the event log."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            found[:] = [e for e in self.events()[after:] if e["event"] == name]
            return bool(found)

        self.wait_for(f"event {name!r}", check, timeout_s)
        return found[0]

    def wait_exit(self, timeout_s: float) -> int:
        """Exit code within ``timeout_s`` seconds; raises ReadinessTimeout if still running."""
        code = self.process.wait(timeout_s)
        if code is None:
            raise ReadinessTimeout(f"{self.replica_id}: still running {timeout_s:.0f} s after "
                                   f"being asked to stop; last log lines:\n{self.tail()}")
        return code


def produce_events(bootstrap: str, topic: str, n: int, partitions: int, *,
                   first_seq: int = 0, entities: int = 100_000) -> int:
    """Produce ``n`` events spread round-robin over ``partitions`` (seq first_seq..).

    Returns:
        ``n`` once every record is acknowledged (raises RuntimeError on delivery errors).
    """
    from confluent_kafka import Producer

    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "enable.idempotence": True})
    ev = np.zeros(n, dtype=EVENT_DTYPE)
    ev["seq"] = np.arange(first_seq, first_seq + n, dtype=np.uint64)
    ev["entity_id"] = (ev["seq"] * 2654435761) % entities
    ev["ts"] = time.time_ns()
    raw = encode_events(ev)
    def failed(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for i in range(n):
        while True:
            try:
                producer.produce(topic, raw[i * 280:(i + 1) * 280],
                                 partition=(first_seq + i) % partitions, on_delivery=failed)
                break
            except BufferError:  # client queue full: let deliveries drain, then retry
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    remaining = flush(producer, 60.0)
    del producer  # destroy the client now, not at interpreter exit after the broker is gone
    if remaining:
        raise RuntimeError(f"topic {topic!r}: {remaining} records still unacknowledged after "
                           "60 s; is the broker up?")
    if errors:
        raise RuntimeError(f"topic {topic!r}: {len(errors)} deliveries failed, first: "
                           f"{errors[0]}")
    return n


def store_counts(pairs: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """(distinct (partition, offset) pairs, duplicate rows) of an iterable of pairs."""
    seen: set[tuple[int, int]] = set()
    dups = 0
    for pair in pairs:
        if pair in seen:
            dups += 1
        else:
            seen.add(pair)
    return len(seen), dups


def wait_all_committed(admin: Any, group: str, topic: str, replicas: Sequence[ReplicaProcess],
                       timeout_s: float) -> dict[int, int]:
    """Wait until ``group`` committed the log-end offset of every partition of ``topic``.

    Args:
        admin: a :class:`pytest_lagscale.kafka.admin.KafkaAdmin`.

    Returns:
        The committed offsets. Raises ReadinessTimeout naming the lagging partitions and the
        log tail of every replica.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        end = admin.end_offsets(topic)
        committed = admin.committed_offsets(group, topic)
        lagging = {p: (committed.get(p, -1), e) for p, e in end.items()
                   if committed.get(p, -1) < e}
        if not lagging:
            return committed
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {r.replica_id} (exit {r.process.poll()}):\n{r.tail()}"
                              for r in replicas)
            raise ReadinessTimeout(
                f"group {group!r}: {len(lagging)} partitions of {topic!r} not committed to "
                f"their end after {timeout_s:.0f} s (partition: (committed, end)) "
                f"{dict(sorted(lagging.items())[:8])}; replica logs:\n{tails}")
        time.sleep(0.25)
