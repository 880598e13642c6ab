"""The confluent lag source against the local Metrics API service, which answers from a real
Prometheus scraping a tiny kafka_exporter with known values (no Kafka). Needs the ``prometheus``
binary (scripts/bootstrap).

A PT1M bucket is served once it has ended; so that the test need not wait for a minute to end,
the service's clock runs 60 s ahead, which serves the current minute's bucket (its mean so far:
the exporter's constant values)."""

from __future__ import annotations

import base64
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pytest_lagscale.counterparts.confluent_metrics import ConfluentMetricsService
from pytest_lagscale.observe.prometheus import PrometheusServer
from pytest_lagscale.sources import LagSourceError, make_lag_source
from pytest_lagscale.sources.base import utc_now
from pytest_lagscale.sources.confluent import ConfluentSettings, query_body
from pytest_lagscale.sources.credentials import Secret

from ._lag_exporter import TinyLagExporter, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed; run scripts/bootstrap (apt-get install prometheus)"),
]
KEY, SECRET = "lagscale-local-key", "lagscale-local-secret-9f3b"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ConfluentMetricsService]:
    exporter = TinyLagExporter()
    exporter.set("enrich", "events", {0: 700, 1: 70, 2: 7})
    exporter.set("enrich", "audit", {0: 1000})
    exporter.set("other", "events", {0: 123_456})
    try:
        with PrometheusServer(tmp_path) as prom:
            prom.set_targets("lag_exporter", [exporter.target])
            svc = ConfluentMetricsService(prom.url, cluster_id="lkc-local1", api_key=Secret(KEY),
                                          api_secret=Secret(SECRET),
                                          clock=lambda: utc_now() + timedelta(seconds=60))
            with svc:
                yield svc
    finally:
        exporter.close()


def test_the_recipes_query_reads_the_groups_lag(service: ConfluentMetricsService,
                                                monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("CONFLUENT_API_KEY", KEY)
    monkeypatch.setenv("CONFLUENT_API_SECRET", SECRET)
    caplog.set_level("DEBUG")
    source = make_lag_source("confluent", None, "enrich", "events", {"cluster_id": "lkc-local1", "url": service.url})
    wait_for(lambda: source.total_lag().lag_records == 1777.0, within_s=20,
             what="the group's lag over both topics (the recipe filters on cluster and group only)")
    reading = source.total_lag()
    assert reading.source == "confluent" and reading.staleness_s is not None and reading.staleness_s < 61.0
    nobody = make_lag_source("confluent", None, "nobody", "events", {"cluster_id": "lkc-local1", "url": service.url,
                                                                     "empty": "unknown"})
    assert nobody.total_lag().known is False
    assert KEY not in caplog.text and SECRET not in caplog.text


def test_wrong_credentials_and_cluster_are_refused(service: ConfluentMetricsService,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFLUENT_API_KEY", KEY)
    monkeypatch.setenv("CONFLUENT_API_SECRET", "not-the-secret")
    source = make_lag_source("confluent", None, "enrich", "events", {"cluster_id": "lkc-local1", "url": service.url})
    with pytest.raises(LagSourceError) as info:
        source.total_lag()
    assert str(info.value) == (f"confluent lag source: POST {service.url}/v2/metrics/cloud/query answered 401: "
                               "Unauthorized: send 'Authorization: Basic base64(<api key>:<api secret>)' with a "
                               "Cloud API key")
    monkeypatch.setenv("CONFLUENT_API_SECRET", SECRET)
    other = make_lag_source("confluent", None, "enrich", "events", {"cluster_id": "lkc-other", "url": service.url})
    with pytest.raises(LagSourceError, match="answered 403: not authorized for the resource"):
        other.total_lag()


def test_an_unknown_metric_is_400_with_the_error_body(service: ConfluentMetricsService) -> None:
    body = query_body(ConfluentSettings("lkc-local1", "enrich", Secret(KEY), Secret(SECRET)), utc_now())
    body["aggregations"][0]["metric"] = "io.confluent.kafka.server/consumer_lag"
    body["granularity"] = "PT2M"
    request = urllib.request.Request(
        f"{service.url}/v2/metrics/cloud/query", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json",
                 "Authorization": "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 400
    assert json.loads(info.value.read()) == {"errors": [
        {"status": "400", "detail": "Unknown metric 'io.confluent.kafka.server/consumer_lag'; this service serves "
                                    "io.confluent.kafka.server/consumer_lag_offsets"},
        {"status": "400", "detail": "granularity 'PT2M' is not one of PT1M, PT5M, PT15M, PT30M, PT1H, PT4H, PT6H, "
                                    "PT12H, P1D, ALL"}]}
