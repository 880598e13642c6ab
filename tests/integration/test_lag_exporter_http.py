"""The lag exporter over HTTP also serves this machine's load (node_exporter names)."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pytest_lagscale.observe.lag_exporter import serve_lag_exporter

pytestmark = pytest.mark.integration


class FixedSource:
    def read(self):
        return {0: (3, 10)}


def test_served_endpoint_has_lag_and_machine_load() -> None:
    with serve_lag_exporter(FixedSource(), "enrich", "events") as exporter:
        url = f"http://127.0.0.1:{exporter.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["kafka_consumergroup_lag_sum"].samples[0].value == 7
    assert families["node_load1"].type == "gauge"
    assert families["node_load1"].samples[0].value >= 0.0
    idle = [s for s in families["node_cpu_seconds"].samples if s.labels["mode"] == "idle"]
    assert idle and all(s.name == "node_cpu_seconds_total" for s in idle)


def test_close_releases_the_port_at_once() -> None:
    """``shutdown()`` alone leaves the socket listening until garbage collection; ``close()``
    releases it at once."""
    import socket

    exporter = serve_lag_exporter(FixedSource(), "enrich", "events")
    port = exporter.port
    exporter.close()
    exporter.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
