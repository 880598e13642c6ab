"""A consumer-group lag exporter with kafka_exporter's metric names.

Prometheus scrapes it like danielqsj/kafka_exporter, so existing Grafana boards work:

* ``kafka_consumergroup_lag{consumergroup,topic,partition}`` — log-end minus committed offset
  (partitions with nothing committed report the whole log-end offset, as kafka_exporter does
  for ``-1`` commits, i.e. KEDA's ``earliest`` reading);
* ``kafka_consumergroup_lag_sum{consumergroup,topic}``;
* ``kafka_topic_partition_current_offset{topic,partition}`` — log-end offset;
* ``kafka_consumergroup_current_offset{consumergroup,topic,partition}`` — committed offset
  (``-1`` where none);
* ``kafka_consumergroup_current_offset_sum{consumergroup,topic}`` — the committed offsets summed
  (``-1`` counted as is, as kafka_exporter does), whose rate is the group's commit rate.

Offsets are read on each scrape (a collector, not a background loop), so a 1 s scrape interval
gives 1 s lag resolution. A failed read is exported as ``kafka_exporter_scrape_errors_total``
and the lag series are omitted for that scrape (no stale numbers).
"""

from __future__ import annotations

from typing import Iterator, Sequence

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..kafka.admin import GroupOffsets


class LagCollector(Collector):
    """Collects the kafka_exporter series for one group and topic from a lag source.

    Args:
        source: object with ``read() -> {partition: (committed, log_end)}`` (e.g.
            :class:`pytest_lagscale.sources.broker.BrokerLagSource`).
        group: consumer group label value.
        topic: topic label value.
    """

    def __init__(self, source: object, group: str, topic: str):
        self.source, self.group, self.topic = source, group, topic
        self.errors_total = 0

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        try:
            offsets: GroupOffsets = self.source.read()  # type: ignore[attr-defined]
        except Exception:  # BrokerError or transport failure: count it, export no lag
            self.errors_total += 1
            offsets = {}
        yield from lag_families(offsets, self.group, self.topic)
        errors = CounterMetricFamily("kafka_exporter_scrape_errors",
                                     "Failed offset reads of the lag exporter")
        errors.add_metric([], self.errors_total)
        yield errors


def partition_lag(committed: int, log_end: int | None) -> int | None:
    """kafka_exporter's lag of one partition: ``log_end - committed`` in records; the whole
    ``log_end`` when nothing is committed (``committed`` -1); None when ``log_end`` is unknown.
    Not clamped: a commit read after a newer log end gives a negative value, as in
    kafka_exporter."""
    if log_end is None:
        return None
    return log_end - committed if committed >= 0 else log_end


def lag_families(offsets: GroupOffsets, group: str, topic: str) -> list[GaugeMetricFamily]:
    """The five kafka_exporter gauge families for one snapshot of group offsets.

    Args:
        offsets: ``{partition: (committed, log_end)}``; committed -1 = none, log_end None =
            unknown (such partitions are skipped).
    """
    lag = GaugeMetricFamily("kafka_consumergroup_lag", "Current approximate lag of a "
                            "consumer group at topic/partition",
                            labels=["consumergroup", "topic", "partition"])
    lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Current approximate lag of a "
                                "consumer group at topic for all partitions",
                                labels=["consumergroup", "topic"])
    current = GaugeMetricFamily("kafka_topic_partition_current_offset",
                                "Current offset of a broker at topic/partition",
                                labels=["topic", "partition"])
    committed_f = GaugeMetricFamily("kafka_consumergroup_current_offset",
                                    "Current offset of a consumer group at topic/partition",
                                    labels=["consumergroup", "topic", "partition"])
    committed_sum = GaugeMetricFamily("kafka_consumergroup_current_offset_sum",
                                      "Current offset of a consumer group at topic for all "
                                      "partitions", labels=["consumergroup", "topic"])
    total = committed_total = 0
    for partition, (committed, log_end) in sorted(offsets.items()):
        value = partition_lag(committed, log_end)
        if value is None:
            continue
        p = str(partition)
        total += value
        committed_total += committed
        lag.add_metric([group, topic, p], value)
        current.add_metric([topic, p], log_end)
        committed_f.add_metric([group, topic, p], committed)
    if offsets:
        lag_sum.add_metric([group, topic], total)
        committed_sum.add_metric([group, topic], committed_total)
    return [lag, lag_sum, current, committed_f, committed_sum]


class ServedExporter:
    """A running exporter endpoint: ``port`` (int) and :meth:`close`.

    ``close`` stops the serving thread and closes the listening socket at once: a
    ``prometheus_client`` server's ``shutdown()`` alone leaves the socket open until the server
    object is garbage-collected. Safe to call twice; also a context manager.
    """

    def __init__(self, server: object, thread: object) -> None:
        self._server, self._thread = server, thread
        self.port: int = server.server_port
        self._closed = False

    def close(self) -> None:
        """Stop serving and release the port (returns once the socket is closed)."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "ServedExporter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_lag_exporter(source: object, group: str, topic: str, port: int = 0,
                       addr: str = "127.0.0.1",
                       extra_collectors: Sequence[object] = ()) -> ServedExporter:
    """Serve the exporter on ``addr:port`` (0 = ephemeral) in a daemon thread.

    The same endpoint serves this machine's load (``node_load1``, ``node_cpu_seconds_total``:
    :class:`~.machine.MachineCollector`), so the run's Prometheus records it with the lag.

    ``extra_collectors`` are served from the same endpoint (e.g. the run's Spark Connect server's
    :class:`~.machine.BusyRatioCollector`).

    Returns:
        a :class:`ServedExporter`: its ``port`` is the bound port; ``close()`` stops it and
        releases the port.
    """
    from .machine import MachineCollector

    registry = CollectorRegistry()
    registry.register(LagCollector(source, group, topic))
    registry.register(MachineCollector())
    for collector in extra_collectors:
        registry.register(collector)
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return ServedExporter(server, thread)
