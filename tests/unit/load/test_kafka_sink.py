"""KafkaSink against a fake confluent-kafka producer: every record exactly once, in order,
keyed by entity, also when the client queue fills up (pure, no broker)."""

from __future__ import annotations

import numpy as np

from pytest_lagscale.load.events import EVENT_SIZE_BYTES, EventSource, decode_events
from pytest_lagscale.load.pacing import Sink
from pytest_lagscale.load.producer import PRODUCER_DEFAULTS, KafkaSink, ProduceSettings


class FakeProducer:
    """Queues up to ``capacity`` records; ``poll`` delivers them all."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.queued: list[tuple[str, bytes, bytes]] = []
        self.delivered: list[tuple[str, bytes, bytes]] = []
        self.polls: list[float] = []

    def produce(self, topic: str, value: bytes, key: bytes) -> None:
        if len(self.queued) >= self.capacity:
            raise BufferError("Local: Queue full")
        self.queued.append((topic, value, key))

    def poll(self, timeout: float) -> int:
        self.polls.append(timeout)
        self.delivered += self.queued
        self.queued = []
        return 0


def test_kafka_sink_implements_the_sink_protocol() -> None:
    assert isinstance(KafkaSink(FakeProducer(1), "t"), Sink)


def test_every_record_is_produced_once_in_order_even_when_the_queue_is_full() -> None:
    producer = FakeProducer(capacity=300)
    sink = KafkaSink(producer, "events")
    events = EventSource(3, entities=50).take(1000)
    events["ts"] = 123
    sink.send(events[:700])
    sink.send(events[700:])
    records = producer.delivered + producer.queued
    assert len(records) == 1000 and {t for t, _, _ in records} == {"events"}
    assert all(len(v) == EVENT_SIZE_BYTES for _, v, _ in records)
    assert np.array_equal(decode_events([v for _, v, _ in records]), events)
    assert [k for _, _, k in records] == [int(e).to_bytes(8, "big") for e in events["entity_id"]]
    assert sink.queue_full_waits == 2 and 0.005 in producer.polls
    assert producer.polls[-1] == 0  # delivery reports served after every chunk


def test_settings_keep_the_durability_and_batching_defaults_under_overrides() -> None:
    config = ProduceSettings("127.0.0.1:9092", client_config={"security.protocol": "SSL"},
                             producer_config={"linger.ms": 20}).librdkafka_config()
    assert config["bootstrap.servers"] == "127.0.0.1:9092" and config["linger.ms"] == 20
    assert config["security.protocol"] == "SSL"
    assert (config["acks"], config["enable.idempotence"], config["partitioner"]) == (
        "all", True, "murmur2_random")
    assert PRODUCER_DEFAULTS["batch.size"] == 1_000_000
