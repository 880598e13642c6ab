"""What every Kafka provider (embedded, testcontainers, external) offers the harness."""

from __future__ import annotations

from typing import Mapping, Protocol, runtime_checkable


@runtime_checkable
class KafkaCluster(Protocol):
    """A reachable Kafka cluster.

    Attributes:
        bootstrap_servers: ``host:port[,host:port...]`` for clients.
        client_config: extra librdkafka settings every client must use (SASL/TLS for an
            external cluster; empty for the embedded broker).
        kind: ``embedded``, ``testcontainers`` or ``external``.
        version: the broker's Apache Kafka version when known, else ``"unknown"``.
        settings: broker settings that shape measurements (e.g.
            ``group.initial.rebalance.delay.ms``), recorded in benchmark JSON.
    """

    bootstrap_servers: str
    client_config: Mapping[str, str]
    kind: str
    version: str
    settings: Mapping[str, str]

    def start(self) -> "KafkaCluster":
        """Make the cluster reachable; returns self."""

    def stop(self, timeout_s: float = ...) -> None:
        """Release what ``start`` acquired. Idempotent."""
