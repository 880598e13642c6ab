"""A tiny kafka_exporter for the lag-source integration tests: ``kafka_consumergroup_lag`` with
known values per partition, served on an ephemeral 127.0.0.1 port (no Kafka)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server


class TinyLagExporter:
    """``kafka_consumergroup_lag{consumergroup, topic, partition}`` set by the test."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.gauge = Gauge("kafka_consumergroup_lag", "Current approximate lag of a consumer group at topic/partition",
                           ["consumergroup", "topic", "partition"], registry=self.registry)
        self.server, self.thread = start_http_server(0, addr="127.0.0.1", registry=self.registry)
        self.target = f"127.0.0.1:{self.server.server_port}"

    def set(self, group: str, topic: str, lags: dict[int, float]) -> None:
        """Set the lag of each partition of ``topic`` for ``group`` (records)."""
        for partition, value in lags.items():
            self.gauge.labels(group, topic, str(partition)).set(value)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def wait_for(predicate: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen within {within_s} s")
        time.sleep(0.2)
