"""The confluent lag source: the recipe's query body, recorded answers and error bodies, and the
request it sends (urlopen replaced; the integration test asks the local Metrics API service)."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
from datetime import datetime, timezone
from typing import Any

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.sources import ConfluentLagSource, LagSourceError, TotalLag, make_lag_source
from pytest_lagscale.sources import confluent
from pytest_lagscale.sources.confluent import ConfluentSettings, lag_from_query_response, query_body
from pytest_lagscale.sources.credentials import Secret

from ._fixtures import FIXTURES, load

T0 = datetime(2026, 11, 26, 0, 26, 10, tzinfo=timezone.utc)
KEY, SECRET = "CCLOUDKEY123", "cCl0udS3cr3t/+="
SETTINGS = ConfluentSettings("lkc-abc123", "enrich", Secret(KEY), Secret(SECRET), url="http://127.0.0.1:8089")


def test_the_body_is_the_recipes_query() -> None:
    assert query_body(SETTINGS, T0) == {
        "aggregations": [{"metric": "io.confluent.kafka.server/consumer_lag_offsets", "agg": "SUM"}],
        "filter": {"op": "AND", "filters": [
            {"field": "resource.kafka.id", "op": "EQ", "value": "lkc-abc123"},
            {"field": "metric.consumer_group_id", "op": "EQ", "value": "enrich"},
        ]},
        "granularity": "PT1M",
        "intervals": ["2026-11-26T00:21:10Z/2026-11-26T00:26:10Z"],
    }


@pytest.mark.parametrize(("fixture", "empty", "expected"), [
    pytest.param("confluent_query_flat.json", "zero",
                 TotalLag(2100.0, datetime(2026, 11, 26, 0, 24, tzinfo=timezone.utc), T0, "confluent"),
                 id="newest-bucket-of-a-flat-answer"),
    pytest.param("confluent_query_grouped_by_topic.json", "zero",
                 TotalLag(1525.5, datetime(2026, 11, 26, 0, 23, tzinfo=timezone.utc), T0, "confluent"),
                 id="points-of-the-newest-timestamp-summed"),
    pytest.param("confluent_query_empty.json", "zero", TotalLag(0.0, T0, T0, "confluent"), id="no-points-zero"),
    pytest.param("confluent_query_empty.json", "unknown", TotalLag(None, None, T0, "confluent"),
                 id="no-points-unknown"),
])
def test_recorded_answers(fixture: str, empty: str, expected: TotalLag) -> None:
    assert lag_from_query_response(load(fixture), empty=empty, read_utc=T0) == expected


WHERE = "confluent lag source: io.confluent.kafka.server/consumer_lag_offsets"


@pytest.mark.parametrize(("response", "message"), [
    pytest.param({"errors": []}, f"{WHERE}: got \"{{'errors': []}}\", expected a query response with a 'data' list",
                 id="no-data"),
    pytest.param({"data": [{"timestamp": "yesterday", "value": 1}]},
                 f"{WHERE} point timestamp: got 'yesterday', expected an RFC 3339 timestamp", id="bad-timestamp"),
    pytest.param({"data": [{"timestamp": "2026-11-26T00:24:00Z", "value": "x"}]},
                 f"{WHERE} point value: got 'x', expected a number of records", id="bad-value"),
])
def test_malformed_answers(response: Any, message: str) -> None:
    with pytest.raises(LagSourceError) as info:
        lag_from_query_response(response, empty="zero", read_utc=T0)
    assert str(info.value) == message


class Urlopen:
    """``urllib.request.urlopen`` of the source module: records requests, answers a scripted body or
    raises an HTTPError carrying an error body."""

    def __init__(self, body: bytes = b"", status: int = 200):
        self.body, self.status = body, status
        self.requests: list[Any] = []

    def __call__(self, request: Any, timeout: float) -> Any:
        self.requests.append((request, timeout))
        if self.status != 200:
            raise urllib.error.HTTPError(request.full_url, self.status, "error", {}, io.BytesIO(self.body))
        return io.BytesIO(self.body)


def test_the_request_posts_the_body_with_basic_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    urlopen = Urlopen((FIXTURES / "confluent_query_flat.json").read_bytes())
    monkeypatch.setattr(confluent.urllib.request, "urlopen", urlopen)
    reading = ConfluentLagSource(SETTINGS, clock=lambda: T0).total_lag()
    assert reading.lag_records == 2100.0 and reading.staleness_s == 130.0
    (request, timeout), = urlopen.requests
    assert (request.full_url, request.get_method(), timeout) == ("http://127.0.0.1:8089/v2/metrics/cloud/query",
                                                                 "POST", 10.0)
    assert json.loads(request.data) == query_body(SETTINGS, T0)
    assert request.get_header("Authorization") == "Basic " + base64.b64encode(f"{KEY}:{SECRET}".encode()).decode()


@pytest.mark.parametrize(("fixture", "status", "message"), [
    pytest.param("confluent_error_400.json", 400,
                 "answered 400: Unknown metric 'io.confluent.kafka.server/consumer_lag'", id="400-details"),
    pytest.param("confluent_error_429.json", 429, "answered 429: Too many requests have been made for the following "
                 "resources:\nkafka.id:lkc-12345. Please see the documentation for current rate limits.",
                 id="429-rate-limit"),
])
def test_error_answers_carry_the_apis_details_and_no_credential(monkeypatch: pytest.MonkeyPatch, fixture: str,
                                                                status: int, message: str) -> None:
    monkeypatch.setattr(confluent.urllib.request, "urlopen", Urlopen((FIXTURES / fixture).read_bytes(), status))
    with pytest.raises(LagSourceError) as info:
        ConfluentLagSource(SETTINGS, clock=lambda: T0).total_lag()
    assert str(info.value) == f"confluent lag source: POST http://127.0.0.1:8089/v2/metrics/cloud/query {message}"
    shown = str(info.value) + repr(info.value.__cause__) + str(info.value.__cause__)
    assert KEY not in shown and SECRET not in shown


def test_an_error_without_a_json_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confluent.urllib.request, "urlopen", Urlopen(b"<html>bad gateway</html>", 502))
    with pytest.raises(LagSourceError) as info:
        ConfluentLagSource(SETTINGS, clock=lambda: T0).total_lag()
    assert str(info.value).endswith("answered 502: <html>bad gateway</html>")


def test_credentials_come_from_the_environment_and_never_show() -> None:
    environ = {"CONFLUENT_API_KEY": KEY, "CONFLUENT_API_SECRET": SECRET}
    settings = ConfluentSettings.from_options("enrich", {"cluster_id": "lkc-abc123"}, environ)
    assert (settings.api_key.reveal(), settings.api_secret.reveal()) == (KEY, SECRET)
    assert (settings.url, settings.window_s, settings.empty) == ("https://api.telemetry.confluent.cloud", 300.0, "zero")
    for shown in (repr(settings), str(settings), repr(ConfluentLagSource(settings))):
        assert KEY not in shown and SECRET not in shown and "'***'" in shown
    named = ConfluentSettings.from_options("enrich", {"cluster_id": "lkc-1", "api_key_env": "K", "api_secret_env": "S"},
                                           {"K": "k-value", "S": "s-value"})
    assert (named.api_key.reveal(), named.api_key.origin) == ("k-value", "$K")


def test_missing_credentials_are_named_not_shown() -> None:
    with pytest.raises(ConfigError) as info:
        make_lag_source("confluent", None, "enrich", "events",
                        {"cluster_id": "lkc-1", "api_key_env": "LAGSCALE_TEST_UNSET_KEY",
                         "api_secret_env": "LAGSCALE_TEST_UNSET_SECRET", "window_s": 30})
    assert info.value.problems == [
        "'window_s': got 30, expected a number of seconds in [60, 21600] in confluent lag source options; "
        "set window_s=300",
        "'api_key_env': got 'LAGSCALE_TEST_UNSET_KEY', expected the name of a set, non-empty environment variable in "
        "confluent lag source options; export LAGSCALE_TEST_UNSET_KEY=... before the run",
        "'api_secret_env': got 'LAGSCALE_TEST_UNSET_SECRET', expected the name of a set, non-empty environment "
        "variable in confluent lag source options; export LAGSCALE_TEST_UNSET_SECRET=... before the run",
    ]
