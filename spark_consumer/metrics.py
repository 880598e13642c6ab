"""The replica's Prometheus metrics (own registry) and its /metrics, /ready, /healthz server.

Series (no name prefix; the scrape target identifies the replica):

* ``records_processed_total`` — records whose simulated downstream write finished (counted per
  wave of ``--inflight`` records, so the rate is smooth within a batch).
* ``partition_records_processed_total{partition}`` — the same per partition (per batch).
* ``records_committed_total``, ``records_malformed_total``, ``commit_failures_total``.
* ``consume_rate`` — records processed per second over the last 5 s.
* ``inflight`` — records polled and not yet committed (the batch in progress).
* ``rebalances_total`` — rebalances after the first assignment (each revoke/lost/assign episode).
* ``rebalance_duration_seconds`` — histogram, revoke start -> assignment done.
* ``assigned_partitions``, ``partition_assigned{partition}`` (1/0),
  ``partition_committed_offset{partition}`` (next offset to read, as committed).
* ``batch_engine_seconds`` — histogram of the engine's time per batch; ``batch_poll_seconds``
  (consume() calls that returned records), ``batch_commit_seconds``; ``batch_records``.
* ``consumer_records_lag{topic,partition}``, ``consumer_records_lag_max``,
  ``consumer_records_lag_sample_seconds`` — the replica's own view of its lag, read by the poll
  thread between batches into :class:`spark_consumer.lag.ConsumerLagCollector` (registered by
  the replica).
* ``replica_ready`` (0/1), ``replica_live`` (0/1: ``GET /healthz`` answers 200, see
  :mod:`spark_consumer.liveness`) and ``replica_info{replica_id,engine,balancer,group,topic,commit,
  instance_id}``.
* share-group replicas only (:meth:`ReplicaMetrics.add_share_series`):
  ``replica_redelivered_records_total`` and ``replica_acknowledged_records_total{type}``.
"""

from __future__ import annotations

import threading
from collections import deque
from socketserver import ThreadingMixIn
from typing import Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.exposition import make_wsgi_app

from pytest_lagscale.contract.clock import Clock, RealClock

REBALANCE_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)
ENGINE_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5)


class RateWindow:
    """Events per second over the last ``window_s`` seconds (100 ms buckets).

    Args:
        window_s: window length in seconds.
        clock: monotonic time source.
    """

    def __init__(self, window_s: float = 5.0, clock: Clock | None = None):
        self._window_s = window_s
        self._clock = clock or RealClock()
        self._buckets: deque[list[float]] = deque()
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        """Count ``n`` events now."""
        now = self._clock.now()
        with self._lock:
            if self._buckets and now - self._buckets[-1][0] < 0.1:
                self._buckets[-1][1] += n
            else:
                self._buckets.append([now, float(n)])
            self._prune(now)

    def rate(self) -> float:
        """Events per second in the window ending now."""
        now = self._clock.now()
        with self._lock:
            self._prune(now)
            return sum(b[1] for b in self._buckets) / self._window_s

    def _prune(self, now: float) -> None:
        while self._buckets and self._buckets[0][0] <= now - self._window_s:
            self._buckets.popleft()


class ReplicaMetrics:
    """All series of one replica in its own registry (see the module docstring)."""

    def __init__(self, clock: Clock | None = None):
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.records_processed = Counter("records_processed", "Records written downstream",
                                         registry=r)
        self.partition_records_processed = Counter(
            "partition_records_processed", "Records written downstream per partition",
            ["partition"], registry=r)
        self.records_committed = Counter("records_committed", "Records whose offsets were "
                                         "committed (or stored, --commit auto)", registry=r)
        self.records_malformed = Counter("records_malformed", "Records skipped because their "
                                         "value is not 280 bytes", registry=r)
        self.commit_failures = Counter("commit_failures", "Failed offset commits", registry=r)
        self.rate = RateWindow(5.0, clock)
        self.consume_rate = Gauge("consume_rate", "Records processed per second over 5 s",
                                  registry=r)
        self.consume_rate.set_function(self.rate.rate)
        self.inflight = Gauge("inflight", "Records polled and not yet committed", registry=r)
        self.rebalances = Counter("rebalances", "Rebalances after the first assignment",
                                  registry=r)
        self.rebalance_duration = Histogram(
            "rebalance_duration_seconds", "Revoke start to assignment done",
            buckets=REBALANCE_BUCKETS_S, registry=r)
        self.assigned_partitions = Gauge("assigned_partitions", "Partitions assigned",
                                         registry=r)
        self.partition_assigned = Gauge("partition_assigned", "1 while the partition is "
                                        "assigned to this replica", ["partition"], registry=r)
        self.partition_committed_offset = Gauge(
            "partition_committed_offset", "Last committed next-offset", ["partition"],
            registry=r)
        self._batch_series(r)
        self.ready = Gauge("replica_ready", "1 while GET /ready answers 200: engine up, "
                           "first assignment received, not draining", registry=r)
        self.live = Gauge("replica_live", "1 while GET /healthz answers 200: the group session "
                          "was healthy within the session timeout (or starting, draining, in a "
                          "batch)", registry=r)
        self.info = Info("replica", "Static facts about this replica", registry=r)

    def _batch_series(self, r: CollectorRegistry) -> None:
        self.batch_engine = Histogram("batch_engine_seconds", "Engine time per batch",
                                      buckets=ENGINE_BUCKETS_S, registry=r)
        self.batch_poll = Histogram("batch_poll_seconds", "consume() time of batches that "
                                    "returned records", buckets=ENGINE_BUCKETS_S, registry=r)
        self.batch_commit = Histogram("batch_commit_seconds", "Synchronous commit (or offset "
                                      "store) time per batch", buckets=ENGINE_BUCKETS_S,
                                      registry=r)
        self.batch_records = Histogram(
            "batch_records", "Records per batch",
            buckets=(1, 10, 100, 500, 1000, 2000, 5000, 10000, 50000), registry=r)

    def add_share_series(self) -> None:
        """Register the share-group series (``--group-type share``; a consumer-group replica's
        ``/metrics`` stays without them):

        * ``replica_redelivered_records_total``: records polled with a delivery count above 1
          (acquired before, by this member or another, and released, rejected by a lock
          timeout or left by a member that went away; Apache Kafka 4.3.1 KIP-932);
        * ``replica_acknowledged_records_total{type}``: records acknowledged, by type
          (``accept``, ``release``, ``reject``), counted when their commit succeeded.
        """
        r = self.registry
        self.redelivered = Counter("replica_redelivered_records", "Records polled with a "
                                   "delivery count above 1 (share group)", registry=r)
        self.acknowledged = Counter("replica_acknowledged_records", "Records acknowledged and "
                                    "committed, by acknowledgement type (share group)", ["type"],
                                    registry=r)

    def processed(self, n: int) -> None:
        """Count ``n`` records whose downstream write finished."""
        self.records_processed.inc(n)
        self.rate.add(n)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        return None


class MetricsServer:
    """``GET /metrics`` (Prometheus text), ``GET /ready`` and ``GET /healthz`` (200 or 503,
    the reason as a one-line body).

    Args:
        metrics: the replica's metrics.
        is_ready: returns (ready, reason) for ``/ready``.
        host: bind address (default loopback).
        port: TCP port, 0 = ephemeral; the bound port is :attr:`port` after :meth:`start`.
        is_live: returns (live, reason) for ``/healthz``; None: always 200 ``ok``.
    """

    def __init__(self, metrics: ReplicaMetrics, is_ready: Callable[[], tuple[bool, str]],
                 host: str = "127.0.0.1", port: int = 0,
                 is_live: Callable[[], tuple[bool, str]] | None = None):
        self._metrics_app = make_wsgi_app(metrics.registry)
        self._is_ready = is_ready
        self._is_live = is_live or (lambda: (True, "ok"))
        self._host, self._port = host, port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (0 before :meth:`start`)."""
        return self._server.server_port if self._server else 0

    def start(self) -> "MetricsServer":
        if self._server is None:
            self._server = make_server(self._host, self._port, self._app, _Server,
                                       _QuietHandler)
            self._thread = threading.Thread(target=self._server.serve_forever,
                                            name="metrics-http", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout_s)
            self._server = None

    def _app(self, environ: dict, start_response: Callable) -> list[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/metrics":
            return self._metrics_app(environ, start_response)
        if path in ("/ready", "/healthz"):
            ok, reason = (self._is_ready if path == "/ready" else self._is_live)()
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
            return [(reason + "\n").encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found; try /metrics, /ready or /healthz\n"]
