"""One reconciliation JVM for a whole pytest session: a worker process that keeps a
:class:`~.local_spark.LocalSpark` and reconciles run after run.

Why: starting the reconciliation's JVM and running its first query costs ~30 s on the 2-core
machine (JVM start ~10 s, first job ~20 s of class loading and code generation); a warm session
runs the same job in ~9 s. A session of acceptance tests reconciles a dozen runs or more, so the
plugin keeps one worker for the session (:func:`enable_shared`, :func:`close_shared`); a single
``lagscale run`` still starts and stops its own session (:func:`pytest_lagscale.analyze.reconcile.reconcile`).

The worker is a separate process, not a SparkSession in the harness: pyspark allows one
SparkContext per process, and tests start their own in-process Spark engines. It is a
:class:`~pytest_lagscale.process.ManagedProcess` (own process group, parent-death signal), and
its JVM exits when the worker's gateway pipe closes, so neither outlives the harness. Requests go
over a ``multiprocessing.connection`` Unix socket with a random authkey: ``{"store": path,
"manifest": path, "examples": n}`` (the Parquet store) or ``{"topic": name, "bootstrap":
servers, "manifest": path, "examples": n, "client_config": {...}, "kafka_options": {...}}`` (an
output topic, :mod:`.reconcile_topic`; the Kafka jars are added to the session at the first) ->
the :class:`~.reconcile.Reconciliation` fields, or ``{"error": text, "kind": class name}``.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..contract.errors import BrokerError, ConfigError, LagscaleError
from ..lifecycle import StartStop

log = logging.getLogger(__name__)
T = TypeVar("T")

AUTHKEY_ENV = "LAGSCALE_RECONCILE_AUTHKEY"
READY_TIMEOUT_S = 180.0
"""Seconds for the worker to start its JVM and open its socket."""
EXIT_WAIT_S = 2.0
"""Seconds to wait for the status of a worker whose connection broke."""
_INPUT_ERRORS: dict[str, type[Exception]] = {"ConfigError": ConfigError,
                                             "BrokerError": BrokerError}
"""Errors of the worker's job that name the caller's input; raised again as themselves."""


class ReconcileWorker(StartStop):
    """A worker process holding one reconciliation SparkSession.

    Args:
        log_path: file receiving the worker's and its JVM's output (appended).

    Raises:
        LagscaleError: from :meth:`start` when the worker exits or does not open its socket
            within :data:`READY_TIMEOUT_S`; from :meth:`reconcile` when the job failed in the
            worker (the message carries the worker's error) or the worker is gone.
    """

    def __init__(self, log_path: str | os.PathLike[str]):
        self.log_path = Path(log_path)
        self.process: Any = None
        self._conn: Connection | None = None
        self._dir: str | None = None
        # one request at a time on the connection: a run's analysis calls from a thread of its
        # own (experiment/analysis.py), and one left over from a failed analysis may still wait
        self._lock = threading.Lock()

    def start(self) -> "ReconcileWorker":
        """Start the worker and connect to it; returns self."""
        from ..process import ManagedProcess

        self._dir = tempfile.mkdtemp(prefix="lagscale-reconcile-")
        socket_path = os.path.join(self._dir, "socket")
        authkey = secrets.token_hex(16)
        self.process = ManagedProcess(
            "reconcile-worker",
            [sys.executable, "-m", __name__, "--socket", socket_path],
            env={AUTHKEY_ENV: authkey}, log_path=self.log_path).start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while (conn := self._connect(socket_path, authkey)) is None:
            if self.process.poll() is not None or time.monotonic() > deadline:
                exited = self.process.poll() is not None
                why = "exited" if exited else f"timed out after {READY_TIMEOUT_S:.0f} s"
                report = self.process.exit_report()
                self.stop()
                raise LagscaleError(f"reconcile worker did not start ({why}): {report}")
            time.sleep(0.2)
        self._conn = conn
        return self

    @staticmethod
    def _connect(socket_path: str, authkey: str) -> Connection | None:
        """A connection to the worker, or None while it is not listening yet: the socket file
        appears at bind(), a moment before listen() (a connect then is refused)."""
        if not os.path.exists(socket_path):
            return None
        try:
            return Client(socket_path, family="AF_UNIX", authkey=authkey.encode())
        except ConnectionRefusedError:
            return None

    def reconcile(self, store_dir: str | os.PathLike[str], manifest: str | os.PathLike[str],
                  examples: int = 10) -> Any:
        """Reconcile one run's store in the worker; returns a
        :class:`~.reconcile.Reconciliation` (``elapsed_s`` is this call's wall time)."""
        return self._call({"store": str(store_dir), "manifest": str(manifest),
                           "examples": examples})

    def _call(self, request: dict[str, Any]) -> Any:
        from .reconcile import Reconciliation

        if self._conn is None:
            raise LagscaleError("reconcile worker: not started")
        start = time.perf_counter()
        try:
            with self._lock:
                self._conn.send(request)
                reply = self._conn.recv()
        except (EOFError, OSError) as exc:
            self.process.wait(EXIT_WAIT_S)  # a crashed worker's status, once the kernel has it
            raise LagscaleError(f"reconcile worker is gone ({exc!r}): "
                                f"{self.process.exit_report()}") from exc
        if "error" in reply:
            # A bad input (manifest, topic) is the caller's, not the worker's: same class.
            kind = _INPUT_ERRORS.get(reply.get("kind", ""), LagscaleError)
            raise kind(f"reconcile worker: {reply['error']}")
        reply.pop("exact", None)
        reply["elapsed_s"] = time.perf_counter() - start
        for key in ("lost_examples", "duplicated_examples", "unexpected_examples"):
            reply[key] = tuple(tuple(e) for e in reply[key])
        reply["notes"] = tuple(reply.get("notes", ()))
        return Reconciliation(**reply)

    def reconcile_topic(self, bootstrap_servers: str, output_topic: str,
                        manifest: str | os.PathLike[str], examples: int = 10, *,
                        client_config: dict[str, str] | None = None,
                        kafka_options: dict[str, str] | None = None) -> Any:
        """Reconcile an output topic in the worker (arguments as
        :func:`~.reconcile_topic.reconcile_topic`); returns a :class:`~.reconcile.Reconciliation`
        (``elapsed_s`` is this call's wall time).

        Raises:
            ConfigError, BrokerError: the manifest or the topic is unusable (the worker is fine).
            LagscaleError: the job failed in the worker, or the worker is gone.
        """
        return self._call({"topic": output_topic, "bootstrap": bootstrap_servers,
                           "manifest": str(manifest), "examples": examples,
                           "client_config": dict(client_config or {}),
                           "kafka_options": dict(kafka_options or {})})

    def stop(self, timeout_s: float = 15.0) -> None:
        """Close the connection (the worker stops its JVM and exits) and stop the process."""
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None
        if self.process is not None:
            if self.process.wait(timeout_s) is None:
                self.process.stop(timeout_s=5.0)
            else:
                self.process.stop(timeout_s=1.0)
            self.process = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


class _Shared:
    """The session's worker: started at the first reconciliation once enabled."""

    def __init__(self) -> None:
        self.enabled = False
        self.log_path: Path | None = None
        self.worker: ReconcileWorker | None = None
        self._lock = threading.Lock()  # one start of the worker, whichever thread asks first

    def get(self) -> ReconcileWorker | None:
        with self._lock:
            return self._get()

    def _get(self) -> ReconcileWorker | None:
        if not self.enabled:
            return None
        if self.worker is not None and (self.worker.process is None
                                        or self.worker.process.poll() is not None):
            report = ("reconcile worker: stopped" if self.worker.process is None
                      else self.worker.process.exit_report())
            log.warning("%s; starting a new one", report)
            self.worker.stop(timeout_s=1.0)
            self.worker = None
        if self.worker is None:
            log_path = self.log_path or Path(tempfile.gettempdir()) / "lagscale-reconcile.log"
            self.worker = ReconcileWorker(log_path).start()
        return self.worker

    def close(self) -> None:
        worker, self.worker, self.enabled = self.worker, None, False
        if worker is not None:
            worker.stop()


_shared = _Shared()


def enable_shared(log_path: str | os.PathLike[str] | None = None) -> None:
    """From now on, :func:`shared_worker` returns one worker for this process (started lazily)
    whose output goes to ``log_path`` (default: the temp directory's lagscale-reconcile.log)."""
    _shared.enabled = True
    _shared.log_path = Path(log_path) if log_path else None


def shared_enabled() -> bool:
    """True between :func:`enable_shared` and :func:`close_shared`."""
    return _shared.enabled


def shared_worker() -> ReconcileWorker | None:
    """The process's worker when :func:`enable_shared` was called, else None.

    Raises:
        LagscaleError: the worker could not start (see :class:`ReconcileWorker`).
    """
    return _shared.get()


def shared_pid() -> int | None:
    """The pid of the shared worker process while it runs (its JVM is its child), else None;
    for leak checks that must tell the session's worker from a leaked process."""
    worker = _shared.worker
    return worker.process.pid if worker is not None and worker.process is not None else None


def discard_shared() -> None:
    """Stop the shared worker after a failure; sharing stays on (the next call starts one)."""
    worker, _shared.worker = _shared.worker, None
    if worker is not None:
        worker.stop(timeout_s=1.0)


def in_shared_or_own(layout: Any, what: str, shared: Callable[[ReconcileWorker], T],
                     own: Callable[[], T], *, passthrough: tuple[type[BaseException], ...] = ()
                     ) -> T:
    """``shared(worker)`` in the session's shared worker when the plugin enabled one (noted in
    ``layout.reconcile_log`` with the worker's pid and JVM log), else ``own()``: a session of
    the run's own. A worker that fails (:class:`LagscaleError` other than ``passthrough``) is
    discarded with a warning and the run falls back to ``own()``.

    Args:
        layout: the run's :class:`~pytest_lagscale.contract.rundir.RunDir`.
        what: what is reconciled, for the note and the warning (``"reconciled"``, ...).
        passthrough: errors of the input, not of the worker: an own session would fail alike.
    """
    try:
        worker = shared_worker()
        if worker is not None:
            with open(layout.reconcile_log, "a", encoding="utf-8") as fh:
                fh.write(f"{what} by the session's reconcile worker (pid "
                         f"{worker.process.pid}); its JVM log: {worker.log_path}\n")
            return shared(worker)
    except passthrough:
        raise
    except LagscaleError as exc:  # the worker died or failed: this run reconciles on its own
        log.warning("%s; %s in a session of this run's own", exc, what)
        discard_shared()
    return own()


def close_shared() -> None:
    """Stop the shared worker (if any) and disable sharing; safe to call twice."""
    _shared.close()


def _serve(conn: Connection, session: Any) -> None:
    from .reconcile import reconcile
    from .reconcile_topic import reconcile_topic

    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            if "topic" in request:
                result = reconcile_topic(request["bootstrap"], request["topic"],
                                         request["manifest"], spark=session,
                                         examples=int(request["examples"]),
                                         client_config=request.get("client_config"),
                                         kafka_options=request.get("kafka_options"))
            else:
                result = reconcile(request["store"], request["manifest"], spark=session,
                                   examples=int(request["examples"]))
            conn.send(result.to_dict())
        except Exception as exc:  # noqa: BLE001 - any job failure goes back to the caller
            conn.send({"error": f"{type(exc).__name__}: {exc}", "kind": type(exc).__name__})


def main(argv: list[str] | None = None) -> int:
    """Worker entry point: start the session, listen on ``--socket``, serve one client."""
    from .local_spark import LocalSpark

    parser = argparse.ArgumentParser(prog="python -m " + __name__)
    parser.add_argument("--socket", required=True)
    args = parser.parse_args(argv)
    authkey = os.environ.pop(AUTHKEY_ENV, "").encode()
    with LocalSpark() as spark:
        # The socket file appears only now, with the session up: the harness waits for it.
        with Listener(args.socket, family="AF_UNIX", authkey=authkey) as listener:
            with listener.accept() as conn:
                _serve(conn, spark.session)
    return 0


if __name__ == "__main__":
    sys.exit(main())
