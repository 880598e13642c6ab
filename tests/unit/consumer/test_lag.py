"""The replica's own lag gauge (``consumer_records_lag``): values, ownership, cost, the replica's
/metrics (docs/replica.md "Metrics and endpoints")."""

from __future__ import annotations

import io

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pytest_lagscale.contract.clock import FakeClock
from spark_consumer.eventlog import EventLog
from spark_consumer.group import OffsetCommitter, RebalanceHandler
from spark_consumer.lag import ConsumerLagCollector
from spark_consumer.metrics import ReplicaMetrics

from .fakes import FakeConsumer, FakeTopicPartition, messages
from .test_replica import _replica, _stop_after


def _samples(registry: CollectorRegistry) -> dict[str, dict[tuple, float]]:
    """``{sample name: {sorted label items: value}}`` of the consumer_records_lag families."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            if s.name.startswith("consumer_records_lag"):
                out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def _collector(consumer: FakeConsumer, owned: set[int]) -> tuple[ConsumerLagCollector, CollectorRegistry]:
    registry = CollectorRegistry()
    collector = ConsumerLagCollector("events", lambda: owned, make_tp=FakeTopicPartition,
                                     timer=FakeClock().now, interval_s=0.0)
    registry.register(collector)
    collector.refresh(consumer, 0.0)
    return collector, registry


def _lag_series(registry: CollectorRegistry) -> dict[str, float]:
    return {dict(k)["partition"]: v for k, v in _samples(registry).get("consumer_records_lag", {}).items()}


CASES = [
    pytest.param({0: 100, 1: 50}, {0: 150, 1: 50}, {"0": 50, "1": 0}, 50, id="hw-minus-position"),
    pytest.param({0: 100, 1: -1001}, {0: 130, 1: 900}, {"0": 30}, 30, id="nothing-consumed-yet-no-series"),
    pytest.param({0: 100, 1: 40}, {0: 120, 1: -1001}, {"0": 20}, 20, id="no-fetch-response-yet-no-series"),
    pytest.param({0: 200}, {0: 150}, {"0": 0}, 0, id="stale-watermark-behind-position-clamped-to-0"),
    pytest.param({0: 100, 1: 40}, {0: 120, 1: None}, {"0": 20}, 20, id="client-returns-none-no-series"),
    pytest.param({}, {}, {}, None, id="no-position-anywhere-no-sample"),
]


@pytest.mark.parametrize(("positions", "watermarks", "expected", "largest"), CASES)
def test_lag_is_the_cached_high_watermark_minus_the_position(positions, watermarks, expected, largest) -> None:
    consumer = FakeConsumer([0, 1], positions=positions, high_watermarks=watermarks)
    _, registry = _collector(consumer, {0, 1})
    assert _lag_series(registry) == expected
    samples = _samples(registry)
    assert samples.get("consumer_records_lag_max", {}).get(()) == largest
    assert all(dict(k)["topic"] == "events" for k in samples.get("consumer_records_lag", {}))


def test_series_of_revoked_and_lost_partitions_disappear() -> None:
    clock = FakeClock()
    consumer = FakeConsumer([0, 1, 2], positions={0: 10, 1: 10, 2: 10},
                            high_watermarks={0: 15, 1: 17, 2: 19})
    metrics = ReplicaMetrics(clock)
    events = EventLog("r-1", None, clock, echo=io.StringIO())
    handler = RebalanceHandler(OffsetCommitter(consumer, "events", "manual", metrics, events),
                               metrics, events, clock)
    handler.on_assign(consumer, [FakeTopicPartition("events", p) for p in (0, 1, 2)])
    _, registry = _collector(consumer, handler.assigned)
    assert _lag_series(registry) == {"0": 5, "1": 7, "2": 9}
    handler.on_revoke(consumer, [FakeTopicPartition("events", 1)])
    assert _lag_series(registry) == {"0": 5, "2": 9}
    handler.on_lost(consumer, [FakeTopicPartition("events", 2)])
    assert _lag_series(registry) == {"0": 5}
    assert _samples(registry)["consumer_records_lag_max"] == {(): 5}
    handler.on_revoke(consumer, [FakeTopicPartition("events", 0)])
    assert _lag_series(registry) == {} and "consumer_records_lag_max" not in _samples(registry)


def test_a_failing_or_closed_consumer_exports_no_sample() -> None:
    consumer = FakeConsumer([0], positions={0: 1}, high_watermarks={0: 9})
    collector, registry = _collector(consumer, {0})
    assert _lag_series(registry) == {"0": 8}
    consumer.closed = True  # position() raises RuntimeError("Consumer closed")
    collector.refresh(consumer, 1.0)
    assert _lag_series(registry) == {} and collector.errors == 1
    collector.clear()
    assert _lag_series(registry) == {}


def test_readings_are_rate_limited_and_scrapes_never_read_the_consumer() -> None:
    consumer = FakeConsumer([0, 1], positions={0: 1, 1: 1}, high_watermarks={0: 2, 1: 3})
    ticks = iter([10.0, 10.25])
    registry = CollectorRegistry()
    collector = ConsumerLagCollector("events", lambda: {0, 1}, make_tp=FakeTopicPartition,
                                     timer=lambda: next(ticks), interval_s=1.0)
    registry.register(collector)
    assert [collector.refresh(consumer, t) for t in (0.0, 0.5, 0.99)] == [True, False, False]
    # one position() call for both partitions + one cached watermark lookup each
    assert consumer.lag_reads == 3
    for _ in range(3):
        samples = _samples(registry)
    assert consumer.lag_reads == 3 and samples["consumer_records_lag_sample_seconds"] == {(): 0.25}


def test_the_replica_reads_its_lag_between_batches_at_most_once_a_second(tmp_path) -> None:
    """The poll loop reads the lag between batches (never inside one), at most once per second of
    its clock; a scrape during the run sees the owned partitions; after close nothing is exported."""
    clock = FakeClock()
    consumer = FakeConsumer([0, 1], batches=[messages([(0, 0), (0, 1), (1, 0)])],
                            positions={0: 2, 1: 1}, high_watermarks={0: 40, 1: 1})
    seen: list[dict[str, float]] = []
    stop = _stop_after(3)

    def hook(c: FakeConsumer) -> None:
        if c.consumed == 3:
            seen.append((_lag_series(replica.p.metrics.registry), replica.lag.reads, replica.p.clock.now()))
        stop(c)

    consumer.on_consume = hook
    replica = _replica(tmp_path, consumer, clock)
    stop.replica = replica
    assert replica.run() == 0
    (series, reads, now_s), = seen
    assert series == {"0": 38, "1": 0} and 1 <= reads <= now_s + 1
    assert consumer.closed and _lag_series(replica.p.metrics.registry) == {}
