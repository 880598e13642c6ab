"""A step in load for autoscaling tests: a baseline, a few seconds of a high rate, the baseline
again until stopped; and "the group committed everything"."""

from __future__ import annotations

import threading
import time

from pytest_lagscale.kafka.admin import KafkaAdmin


def produce_step(bootstrap: str, topic: str, stop: threading.Event, *, step_rate_per_s: int,
                 base_rate_per_s: int = 200, step_s: tuple[float, float] = (5.0, 15.0)) -> int:
    """``base_rate_per_s`` records/s, ``step_rate_per_s`` from ``step_s[0]`` to ``step_s[1]``
    seconds after the start, then the base rate until ``stop`` is set; returns the records
    delivered (280-byte values, keys 0, 1, ...)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    delivered = [0]

    def on_delivery(err, _msg) -> None:
        delivered[0] += err is None

    sent, started = 0, time.monotonic()
    while not stop.is_set():
        rate = step_rate_per_s if step_s[0] <= time.monotonic() - started < step_s[1] else base_rate_per_s
        for _ in range(int(rate * 0.05)):
            producer.produce(topic, bytes(280), key=str(sent).encode(), on_delivery=on_delivery)
            sent += 1
        producer.poll(0)
        time.sleep(0.05)
    producer.flush(30)
    return delivered[0]


def drained(admin: KafkaAdmin, group: str, topic: str) -> bool:
    """Every partition of ``topic`` has ``group``'s committed offset at its log end."""
    ends, done = admin.end_offsets(topic), admin.committed_offsets(group, topic)
    return bool(ends) and all(done.get(p, -1) == end for p, end in ends.items())
