"""The prometheus lag source against a real Prometheus scraping a tiny kafka_exporter with known
values (no Kafka). Needs the ``prometheus`` binary (scripts/bootstrap)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_lagscale.observe.prometheus import PrometheusServer
from pytest_lagscale.sources import LagSourceError, make_lag_source

from ._lag_exporter import TinyLagExporter, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed; run scripts/bootstrap (apt-get install prometheus)"),
]


@pytest.fixture
def exporter() -> Iterator[TinyLagExporter]:
    exporter = TinyLagExporter()
    yield exporter
    exporter.close()


def test_the_groups_summed_lag_follows_the_exporter(tmp_path: Path, exporter: TinyLagExporter) -> None:
    exporter.set("enrich", "events", {0: 1000, 1: 234, 2: 0})
    exporter.set("other", "events", {0: 5_000_000})
    with PrometheusServer(tmp_path) as prom:
        prom.set_targets("lag_exporter", [exporter.target])
        source = make_lag_source("prometheus", None, "enrich", "events", {"url": prom.url, "empty": "unknown"})
        wait_for(lambda: source.total_lag().known, within_s=20, what="the first scrape")
        first = source.total_lag()
        assert (first.lag_records, first.source) == (1234.0, "prometheus")
        assert first.staleness_s is not None and first.staleness_s < 5.0

        exporter.set("enrich", "events", {0: 10, 1: 20, 2: 30})
        wait_for(lambda: source.total_lag().lag_records == 60.0, within_s=10, what="the new values")

        nobody = make_lag_source("prometheus", None, "nobody", "events", {"url": prom.url})
        assert nobody.total_lag().lag_records == 0.0  # no series: zero, as the recipe and KEDA do
        by_partition = make_lag_source("prometheus", None, "enrich", "events",
                                       {"url": prom.url, "query": 'kafka_consumergroup_lag{consumergroup="enrich"}'})
        with pytest.raises(LagSourceError, match="returned 3 series, expected one"):
            by_partition.total_lag()
    with pytest.raises(LagSourceError, match="check that Prometheus runs"):
        source.total_lag()
