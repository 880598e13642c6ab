"""A Kafka cluster the user runs: the harness only connects to it."""

from __future__ import annotations

from typing import Mapping

from ..errors import BrokerError
from ..lifecycle import StartStop


class ExternalKafka(StartStop):
    """An existing cluster reached at ``bootstrap_servers``.

    Args:
        bootstrap_servers: ``host:port[,...]``.
        client_config: librdkafka settings passed to every client unchanged, e.g.
            ``{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", ...}``.
        timeout_s: seconds to wait for metadata in :meth:`start`.

    Raises:
        BrokerError: from :meth:`start` when the cluster does not answer within ``timeout_s``.
    """

    kind = "external"

    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, str] | None = None,
                 timeout_s: float = 15.0):
        if not bootstrap_servers:
            raise BrokerError("--kafka-bootstrap: empty; give host:port of the external cluster")
        self.bootstrap_servers = bootstrap_servers
        self.client_config = dict(client_config or {})
        self.timeout_s = timeout_s
        self.version = "unknown"
        self.settings: dict[str, str] = {}

    def start(self) -> "ExternalKafka":
        """Check that the cluster answers a metadata request; returns self."""
        from confluent_kafka.admin import AdminClient

        try:
            with AdminClient({"bootstrap.servers": self.bootstrap_servers,
                              **self.client_config}) as admin:  # destroyed here, not by GC
                admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:  # KafkaException: transport or auth failure
            raise BrokerError(f"--kafka-bootstrap: {self.bootstrap_servers!r} did not answer a "
                              f"metadata request within {self.timeout_s:.0f} s: {exc}; check "
                              "the address and the SASL/TLS settings") from exc
        return self

    def stop(self, timeout_s: float = 0.0) -> None:
        """Nothing to release: the cluster is not ours."""
