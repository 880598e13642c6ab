"""The replica's own view of its lag: ``consumer_records_lag{topic,partition}`` on ``/metrics``.

What the Kafka Java client exports over JMX as ``records-lag`` (per partition) and
``records-lag-max`` (per consumer), and what a Kafka Streams application reports to a
Prometheus-adapter Pods metric: for each partition this replica owns, the partition's high
watermark minus this consumer's position.

* **High watermark**: ``Consumer.get_watermark_offsets(tp, cached=True)``, the high watermark
  librdkafka remembers from its last fetch response (no broker request; under a backlog up to
  one micro-batch old); the Java client's ``records-lag`` has the same source.
* **Position**: ``Consumer.position()``, the offset of the next record ``consume()`` will return
  (last returned + 1). Records already returned (buffered for the next micro-batch or in the
  batch being written) are *not* lag in this view, though they are not committed yet.

Read in the poll thread, between batches, at most once per ``interval_s`` (1 s, the scrape
interval): one ``position()`` call plus one cached watermark lookup per owned partition. Scrapes
only read the stored values, so no thread but the poll thread ever calls the consumer
(docs/replica.md, "Its own lag"); a value is up to one batch plus 1 s old. A partition whose
position or high watermark is not known yet has no series; a replica that owns no partition
exports none (the HPA counts such a pod as missing); a scrape exports only the partitions of the
current assignment.

Series:

* ``consumer_records_lag{topic,partition}``: high watermark - position, records (>= 0);
* ``consumer_records_lag_max``: the largest of them (absent without any), as JMX
  ``records-lag-max``;
* ``consumer_records_lag_sample_seconds``: how long the last scrape's reading took.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Collection, Iterator

from prometheus_client.core import GaugeMetricFamily

OFFSET_INVALID = -1001
LAG = "consumer_records_lag"


def _topic_partition(topic: str, partition: int, offset: int = OFFSET_INVALID) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition, offset)


class ConsumerLagCollector:
    """A Prometheus collector of the consumer's lag per owned partition, refreshed by the poll
    thread (:meth:`refresh`) and exported by scrapes (:meth:`collect`).

    Args:
        topic: the subscribed topic (the ``topic`` label).
        partitions: returns the partitions this replica owns now (the rebalance handler's
            assignment).
        make_tp: builds a TopicPartition (injected by tests).
        timer: monotonic seconds for the reading's duration (injected by tests).
        interval_s: least seconds between two readings.
    """

    def __init__(self, topic: str, partitions: Callable[[], Collection[int]], *,
                 make_tp: Callable[..., Any] = _topic_partition,
                 timer: Callable[[], float] = time.perf_counter, interval_s: float = 1.0):
        self._topic = topic
        self._partitions = partitions
        self._make_tp = make_tp
        self._timer = timer
        self._interval_s = interval_s
        self._next_s: float | None = None
        self._lags: dict[int, int] = {}
        self.last_sample_s = 0.0
        self.reads = 0
        self.errors = 0

    def refresh(self, consumer: Any, now_s: float) -> bool:
        """Read the lag from ``consumer`` if ``interval_s`` passed since the last reading (poll
        thread only); True when it read. A client error keeps no value (counted in ``errors``)."""
        if self._next_s is not None and now_s < self._next_s:
            return False
        self._next_s = now_s + self._interval_s
        started = self._timer()
        try:
            self._lags = self.sample(consumer)
        except Exception:  # KafkaException, RuntimeError("Consumer closed"): no value until the next
            self.errors += 1
            self._lags = {}
        self.last_sample_s = self._timer() - started
        self.reads += 1
        return True

    def clear(self) -> None:
        """Forget the values (the replica is closing)."""
        self._lags = {}

    def sample(self, consumer: Any) -> dict[int, int]:
        """``{partition: records of lag}`` of the owned partitions with a known position and high
        watermark (empty without partitions).

        Raises:
            Exception: whatever the client raises.
        """
        owned = sorted(self._partitions())
        if not owned:
            return {}
        positions = consumer.position([self._make_tp(self._topic, p) for p in owned])
        out: dict[int, int] = {}
        for tp in positions:
            if tp.offset < 0:
                continue
            watermarks = consumer.get_watermark_offsets(self._make_tp(self._topic, tp.partition), cached=True)
            if watermarks and watermarks[1] >= 0:  # None on some client errors
                out[tp.partition] = max(0, watermarks[1] - tp.offset)
        return out

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The families without samples."""
        yield from self._families({})

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """The last reading, limited to the partitions owned now (see the module docstring)."""
        owned = set(self._partitions())
        yield from self._families({p: v for p, v in dict(self._lags).items() if p in owned})

    def _families(self, lags: dict[int, int]) -> Iterator[GaugeMetricFamily]:
        per_partition = GaugeMetricFamily(
            LAG, "High watermark minus this consumer's position, per owned partition (records)",
            labels=["topic", "partition"])
        for partition, lag in sorted(lags.items()):
            per_partition.add_metric([self._topic, str(partition)], lag)
        yield per_partition
        largest = GaugeMetricFamily(f"{LAG}_max", "Largest consumer_records_lag of this replica "
                                    "(records), as the Kafka client's records-lag-max")
        if lags:
            largest.add_metric([], max(lags.values()))
        yield largest
        yield GaugeMetricFamily(f"{LAG}_sample_seconds", "Time the last reading of "
                                "consumer_records_lag took in the poll thread (seconds)",
                                value=self.last_sample_s)
