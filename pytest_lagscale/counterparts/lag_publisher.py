"""The run's real lag published to CloudWatch as MSK's ``SumOffsetLag``, once per period.

Amazon MSK publishes consumer-lag metrics to CloudWatch once a minute: ``SumOffsetLag`` in
namespace ``AWS/Kafka`` with the dimensions ``Cluster Name``, ``Consumer Group`` and ``Topic``
(the sum over the topic's partitions of the group's offset lag). :class:`LagPublisher` does the
same against moto's server: a daemon thread that every ``period_s`` (60 s as MSK; shorter at ci
scale) reads a :class:`~pytest_lagscale.sources.base.TotalLagSource` (the broker's offsets in
runs) and calls ``put_metric_data`` with the reading, dated at the read. ``delay_s`` holds each
datapoint back that long before it is put, the way CloudWatch makes a datapoint queryable a
while after MSK measured it.

A failed read or put is counted and logged (once per kind of error) and the next period tries
again; it never stops the thread.

Source: Amazon MSK consumer-lag metrics (SumOffsetLag, dimensions Cluster Name / Consumer Group
/ Topic, published at 1-minute intervals); AWS CloudWatch API PutMetricData
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..contract.clock import Clock, RealClock
from ..lifecycle import StartStop
from ..sources.base import TotalLagSource, UtcNow, utc_now
from ..sources.cloudwatch import DIMENSIONS, METRIC_NAME, NAMESPACE

log = logging.getLogger(__name__)

#: Seconds before a failed put is tried again.
RETRY_S = 1.0


@dataclass(frozen=True)
class PublishTarget:
    """Where the datapoints go: MSK's dimensions.

    Attributes:
        cluster_name: dimension ``Cluster Name``.
        consumer_group: dimension ``Consumer Group``.
        topic: dimension ``Topic``.
    """

    cluster_name: str
    consumer_group: str
    topic: str

    def dimensions(self) -> list[dict[str, str]]:
        """``[{"Name": "Cluster Name", "Value": ...}, ...]`` in MSK's order."""
        return [{"Name": n, "Value": v} for n, v in zip(DIMENSIONS, (self.cluster_name, self.consumer_group, self.topic))]


def metric_datum(target: PublishTarget, lag_records: float, at_utc: datetime) -> dict[str, Any]:
    """One ``MetricData`` entry of ``put_metric_data``: ``SumOffsetLag`` = ``lag_records`` at ``at_utc``."""
    return {"MetricName": METRIC_NAME, "Dimensions": target.dimensions(), "Timestamp": at_utc,
            "Value": float(lag_records), "Unit": "Count"}


class LagPublisher(StartStop):
    """Publishes ``source``'s total lag to CloudWatch every ``period_s`` (see the module docstring).

    Args:
        source: where the lag is read (the broker in runs; a scripted source in tests).
        client: a boto3 CloudWatch client (moto's server: :meth:`MotoServer.client`).
        target: the dimensions.
        period_s: seconds between reads (60 as MSK).
        delay_s: seconds a datapoint waits before it is put (0: at once).
        clock: the monotonic clock of the schedule.
        utc_clock: the wall clock datapoints are dated with.

    Attributes:
        published_total: datapoints put.
        errors_total: failed reads and puts.
        last_error: the newest failure's message (None after a success).
    """

    def __init__(self, source: TotalLagSource, client: Any, target: PublishTarget, *, period_s: float = 60.0,
                 delay_s: float = 0.0, clock: Clock | None = None, utc_clock: UtcNow = utc_now):
        if period_s <= 0 or delay_s < 0:
            raise ValueError(f"period_s: {period_s!r} must be > 0 and delay_s: {delay_s!r} >= 0 (seconds)")
        self.source, self.client, self.target = source, client, target
        self.period_s, self.delay_s = period_s, delay_s
        self.clock = clock or RealClock()
        self.utc_clock = utc_clock
        self.published_total = self.errors_total = 0
        self.last_error: str | None = None
        self._pending: deque[tuple[float, dict[str, Any]]] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def from_broker(cls, admin: Any, client: Any, target: PublishTarget, *, period_s: float = 60.0,
                    delay_s: float = 0.0) -> LagPublisher:
        """A publisher of the group's real lag: the broker's offsets (KafkaAdmin) summed, as MSK
        sums them into ``SumOffsetLag``.

        Args:
            admin: the run's :class:`~pytest_lagscale.kafka.admin.KafkaAdmin`.
            client: the CloudWatch client (moto's server).
            target: the cluster name, and the group and topic whose lag is read.
            period_s: seconds between datapoints (60 as MSK).
            delay_s: seconds a datapoint is held back.
        """
        from ..sources.broker import BrokerLagSource

        source = BrokerLagSource(admin, target.consumer_group, target.topic)
        return cls(source, client, target, period_s=period_s, delay_s=delay_s)

    def start(self) -> LagPublisher:
        """Start the thread (its first read at once); returns self."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="lagscale-lag-publisher", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread (datapoints still held back are dropped). Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def read_once(self) -> None:
        """Read the lag once and queue its datapoint (put at once when ``delay_s`` is 0)."""
        try:
            reading = self.source.total_lag()
        except Exception as exc:  # LagSourceError, BrokerError: this period has no datapoint
            self._failed(f"lag read failed: {type(exc).__name__}: {exc}")
            return
        if reading.lag_records is None:
            return
        self._pending.append((self.clock.now() + self.delay_s,
                              metric_datum(self.target, reading.lag_records, reading.read_utc)))
        self.put_due()

    def put_due(self) -> None:
        """Put every queued datapoint whose delay has passed, oldest first."""
        while self._pending and self._pending[0][0] <= self.clock.now():
            _, datum = self._pending[0]
            try:
                self.client.put_metric_data(Namespace=NAMESPACE, MetricData=[datum])
            except Exception as exc:  # botocore ClientError, EndpointConnectionError: retried in 1 s
                self._failed(f"put_metric_data failed: {type(exc).__name__}: {exc}")
                self._pending[0] = (self.clock.now() + RETRY_S, datum)
                return
            self._pending.popleft()
            self.published_total += 1
            self.last_error = None

    def _failed(self, message: str) -> None:
        self.errors_total += 1
        if message != self.last_error:
            log.warning("lag publisher: %s", message)
        self.last_error = message

    def _loop(self) -> None:
        next_read = self.clock.now()
        while not self._stop.is_set():
            now = self.clock.now()
            if now >= next_read:
                self.read_once()
                next_read += self.period_s * max(1, int((now - next_read) // self.period_s) + 1)
            else:
                self.put_due()
            wake = min([next_read] + [due for due, _ in list(self._pending)[:1]])
            self._stop.wait(max(0.0, wake - self.clock.now()))
