"""The local Metrics API's answers: auth, dataset, cluster, and points aggregated from Prometheus
bucket means (a scripted reader; the integration test reads a real Prometheus)."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone

import pytest

from pytest_lagscale.counterparts.confluent_metrics import ConfluentMetricsService
from pytest_lagscale.contract.errors import LagscaleError
from pytest_lagscale.sources.confluent import ConfluentSettings, lag_from_query_response, query_body
from pytest_lagscale.sources.credentials import Secret

NOW = datetime(2026, 11, 26, 0, 26, 10, tzinfo=timezone.utc)
KEY, SECRET = "local-key", "local-secret"
AUTH = "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()
SETTINGS = ConfluentSettings("lkc-abc123", "enrich", Secret(KEY), Secret(SECRET))
PATH = "/v2/metrics/cloud/query"


def minute(m: int) -> datetime:
    return datetime(2026, 11, 26, 0, m, tzinfo=timezone.utc)


class ScriptedReader:
    """PrometheusReader.bucket_means: per series a mean per bucket start (minute m -> value)."""

    def __init__(self, series: list[tuple[dict[str, str], dict[int, float]]]):
        self.series = series
        self.spans: list[list[tuple[datetime, datetime]]] = []

    def bucket_means(self, spans: list[tuple[datetime, datetime]]) -> list:
        self.spans.append(spans)
        starts = {s for s, _ in spans}
        return [(labels, {minute(m): v for m, v in means.items() if minute(m) in starts})
                for labels, means in self.series]


def lag(group: str, topic: str, partition: int) -> dict[str, str]:
    return {"consumergroup": group, "topic": topic, "partition": str(partition), "job": "lag_exporter"}


READER = ScriptedReader([
    (lag("enrich", "events", 0), {22: 100.0, 23: 300.0, 24: 500.0, 25: 700.0}),
    (lag("enrich", "events", 1), {22: 10.0, 23: 30.0, 24: 50.0, 25: 70.0}),
    (lag("enrich", "audit", 0), {24: 5.0, 25: 6.0}),
    (lag("other", "events", 0), {25: 99_999.0}),
])


def service(latency_s: float = 0.0, reader: ScriptedReader = READER) -> ConfluentMetricsService:
    return ConfluentMetricsService("http://unused", cluster_id="lkc-abc123", api_key=Secret(KEY),
                                   api_secret=Secret(SECRET), latency_s=latency_s, reader=reader,  # type: ignore[arg-type]
                                   clock=lambda: NOW)


def post(svc: ConfluentMetricsService, body: object, auth: str | None = AUTH, path: str = PATH,
         method: str = "POST") -> tuple[int, dict]:
    return svc.answer(method, path, auth, json.dumps(body).encode())


def test_the_recipes_query_sums_the_groups_partitions_per_minute_newest_first() -> None:
    status, answer = post(service(), query_body(SETTINGS, NOW))
    assert status == 200
    assert answer == {"data": [
        {"timestamp": "2026-11-26T00:25:00Z", "value": 776.0},
        {"timestamp": "2026-11-26T00:24:00Z", "value": 555.0},
        {"timestamp": "2026-11-26T00:23:00Z", "value": 330.0},
        {"timestamp": "2026-11-26T00:22:00Z", "value": 110.0},
    ]}
    reading = lag_from_query_response(answer, empty="zero", read_utc=NOW)
    assert (reading.lag_records, reading.staleness_s) == (776.0, 70.0)


def test_latency_holds_back_the_newest_buckets() -> None:
    status, answer = post(service(latency_s=120), query_body(SETTINGS, NOW))
    assert status == 200 and [p["timestamp"] for p in answer["data"]] == ["2026-11-26T00:23:00Z",
                                                                         "2026-11-26T00:22:00Z"]


def test_group_by_is_not_served() -> None:
    """The lag source never groups: a grouped query is a 400 naming the fields, not a wrong answer."""
    body = {**query_body(SETTINGS, NOW), "group_by": ["metric.topic"], "format": "GROUPED"}
    status, answer = post(service(), body)
    assert status == 400
    assert [e["detail"].split(" ")[0] for e in answer["errors"]] == ["group_by", "format"]


def test_nothing_matches_gives_no_points() -> None:
    body = query_body(ConfluentSettings("lkc-abc123", "nobody", Secret(KEY), Secret(SECRET)), NOW)
    assert post(service(), body) == (200, {"data": []})


@pytest.mark.parametrize(("auth", "why"), [
    pytest.param(None, "missing", id="no-header"),
    pytest.param("Bearer abc", "wrong-scheme", id="bearer"),
    pytest.param("Basic " + base64.b64encode(f"{KEY}:wrong".encode()).decode(), "wrong-secret", id="wrong-secret"),
    pytest.param("Basic !!!", "not-base64", id="not-base64"),
])
def test_bad_credentials_are_401(auth: str | None, why: str) -> None:
    status, answer = post(service(), query_body(SETTINGS, NOW), auth=auth)
    assert status == 401, why
    assert answer == {"errors": [{"status": "401", "detail": "Unauthorized: send 'Authorization: Basic "
                                  "base64(<api key>:<api secret>)' with a Cloud API key"}]}
    assert SECRET not in json.dumps(answer)


def test_another_clusters_query_is_403() -> None:
    body = query_body(ConfluentSettings("lkc-other", "enrich", Secret(KEY), Secret(SECRET)), NOW)
    assert post(service(), body) == (403, {"errors": [{"status": "403", "detail":
                                                       "not authorized for the resource(s) kafka.id:lkc-other"}]})


def test_unknown_metric_is_400() -> None:
    body = query_body(SETTINGS, NOW)
    body["aggregations"][0]["metric"] = "io.confluent.kafka.server/received_bytes"
    status, answer = post(service(), body)
    assert status == 400 and answer["errors"][0]["detail"].startswith("Unknown metric")


@pytest.mark.parametrize(("method", "path", "status"), [
    pytest.param("POST", "/v2/metrics/health-plus/query", 404, id="unknown-dataset"),
    pytest.param("POST", "/v1/metrics/cloud/query", 404, id="unknown-path"),
    pytest.param("GET", PATH, 405, id="get"),
])
def test_routes(method: str, path: str, status: int) -> None:
    assert post(service(), query_body(SETTINGS, NOW), path=path, method=method)[0] == status


def test_not_json_is_400() -> None:
    assert service().answer("POST", PATH, AUTH, b"{") == (400, {"errors": [
        {"status": "400", "detail": "request body is not valid JSON"}]})


class FailingReader:
    def bucket_means(self, spans: list) -> list:
        raise LagscaleError("confluent metrics service: Prometheus query 'x' at http://p failed: refused")


def test_a_prometheus_failure_is_500_without_details() -> None:
    assert post(service(reader=FailingReader()), query_body(SETTINGS, NOW)) == (500, {"errors": [  # type: ignore[arg-type]
        {"status": "500", "detail": "the metrics backend (Prometheus) could not be read"}]})


def test_spans_asked_of_prometheus_are_the_complete_minutes() -> None:
    reader = ScriptedReader([])
    post(service(reader=reader), query_body(SETTINGS, NOW))
    assert reader.spans == [[(minute(m), minute(m) + timedelta(minutes=1)) for m in range(21, 26)]]
