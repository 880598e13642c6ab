"""Broker lifecycle (embedded | testcontainers | external) and admin operations.

Heavy modules (confluent_kafka) are imported only by the submodules that need them, so importing
this package stays cheap.
"""

from __future__ import annotations

from typing import Mapping

from .base import KafkaCluster

KINDS = ("embedded", "testcontainers", "external")


def make_cluster(kind: str, bootstrap_servers: str | None = None,
                 client_config: Mapping[str, str] | None = None) -> KafkaCluster:
    """Build (not start) the cluster provider named ``kind``.

    Args:
        kind: one of :data:`KINDS`.
        bootstrap_servers: required for ``external``; must be None otherwise.
        client_config: librdkafka settings for an external cluster (SASL/TLS).

    Raises:
        ValueError: unknown kind, or bootstrap servers given/missing for the kind.
    """
    if kind == "embedded":
        from .embedded import EmbeddedKafka

        return EmbeddedKafka()
    if kind == "testcontainers":
        from .container import ContainerKafka

        return ContainerKafka()
    if kind == "external":
        from .external import ExternalKafka

        return ExternalKafka(bootstrap_servers or "", client_config)
    raise ValueError(f"--kafka: {kind!r} is not one of {', '.join(KINDS)}")


__all__ = ["KINDS", "KafkaCluster", "make_cluster"]
