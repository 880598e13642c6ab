"""A Kafka cluster the user runs: the harness only connects to it."""

from __future__ import annotations

import re
from typing import Mapping

from ..contract.errors import BrokerError
from ..lifecycle import StartStop
from .client_log import librdkafka_config

#: One bootstrap address: an ASCII host name, IPv4 or bracketed IPv6 address, and a port.
_ADDRESS = re.compile(r"^[A-Za-z0-9._\-\[\]:]+:(\d{1,5})$")
#: Seconds a probe waits for the cluster's metadata before a run or a produce starts.
PROBE_TIMEOUT_S = 10.0


def check_bootstrap_form(value: str | None, flag: str) -> list[str]:
    """Problems with a bootstrap value (``host:port[,host:port...]``), one line per address
    (an empty value, a missing or out-of-range port, a non-ASCII host); ``flag`` names the
    option in the message (``--kafka-bootstrap``, ``--bootstrap``)."""
    if value is None:
        return []
    problems = []
    for part in value.split(","):
        m = _ADDRESS.match(part.strip())
        if not m or not 1 <= int(m.group(1)) <= 65535:
            problems.append(f"'{flag}': {part[:100]!r} is not HOST:PORT; allowed: "
                            f"host:port[,host:port...] with an ASCII host and port 1 to 65535; "
                            f"source: command line; write it like 127.0.0.1:9092")
    return problems


def probe(bootstrap_servers: str, client_config: Mapping[str, str] | None = None,
          timeout_s: float | None = None, flag: str = "--kafka-bootstrap") -> None:
    """Ask the cluster for its metadata, before anything of a run exists; librdkafka's own
    lines go to its logger (:mod:`.client_log`), not to the terminal.

    Raises:
        BrokerError: one line naming ``flag``, the address and what failed (no answer within
            ``timeout_s`` seconds (default :data:`PROBE_TIMEOUT_S`), or the client's error).
    """
    ExternalKafka(bootstrap_servers, client_config, flag=flag,
                  timeout_s=PROBE_TIMEOUT_S if timeout_s is None else timeout_s).start()


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
                 timeout_s: float = 15.0, flag: str = "--kafka-bootstrap"):
        if not bootstrap_servers:
            raise BrokerError(f"{flag}: empty; give host:port of the external cluster")
        self.flag = flag
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
                              **self.client_config, **librdkafka_config()}
                             ) as admin:  # destroyed here, not by GC
                admin.list_topics(timeout=self.timeout_s)
        except Exception as exc:  # KafkaException: transport or auth failure
            reason = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else exc
            raise BrokerError(f"{self.flag}: {self.bootstrap_servers!r} did not answer a "
                              f"metadata request within {self.timeout_s:.0f} s ({reason}); "
                              "check the address and the SASL/TLS settings") from exc
        return self

    def stop(self, timeout_s: float = 0.0) -> None:
        """Nothing to release: the cluster is not ours."""
