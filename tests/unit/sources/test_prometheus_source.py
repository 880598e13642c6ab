"""The prometheus lag source on recorded instant-query answers (fake prometheus-api-client)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.sources import LagSourceError, PrometheusLagSource, TotalLag, TotalLagSource, make_lag_source
from pytest_lagscale.sources.prometheus import default_query

from ._fixtures import prometheus

T0 = datetime(2026, 11, 26, 0, 25, tzinfo=timezone.utc)
SAMPLE_AT = datetime.fromtimestamp(1795652580.123, timezone.utc)


@dataclass
class FakePrometheus:
    """prometheus-api-client's ``custom_query``: a scripted ``data.result``."""

    result: object = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    error: Exception | None = None

    def custom_query(self, query: str) -> object:
        self.queries.append(query)
        if self.error is not None:
            raise self.error
        return self.result


def source(result: object, *, empty: str = "zero", error: Exception | None = None) -> PrometheusLagSource:
    return PrometheusLagSource("http://127.0.0.1:9090", default_query("enrich", "events"), empty=empty,
                               client=FakePrometheus(result, error=error), clock=lambda: T0)


def test_default_query_is_the_groups_summed_kafka_exporter_lag() -> None:
    assert default_query("enrich", "events") == 'sum(kafka_consumergroup_lag{consumergroup="enrich",topic="events"})'
    assert default_query('a"b', "t\\1") == 'sum(kafka_consumergroup_lag{consumergroup="a\\"b",topic="t\\\\1"})'


def test_one_series_is_the_total_lag_dated_at_the_evaluation_time() -> None:
    lag_source = source(prometheus("prometheus_query_sum.json"))
    assert isinstance(lag_source, TotalLagSource) and not lag_source.per_partition
    assert lag_source.total_lag() == TotalLag(4521.0, SAMPLE_AT, T0, "prometheus")
    assert lag_source.client.queries == [default_query("enrich", "events")]


@pytest.mark.parametrize(("fixture", "empty", "expected"), [
    pytest.param("prometheus_query_empty.json", "zero", TotalLag(0.0, T0, T0, "prometheus"), id="no-series-zero"),
    pytest.param("prometheus_query_empty.json", "unknown", TotalLag(None, None, T0, "prometheus"),
                 id="no-series-unknown"),
    pytest.param("prometheus_query_nan.json", "zero", TotalLag(0.0, T0, T0, "prometheus"),
                 id="nan-as-no-value-as-keda-ignoreNullValues"),
])
def test_no_value(fixture: str, empty: str, expected: TotalLag) -> None:
    assert source(prometheus(fixture), empty=empty).total_lag() == expected


def test_several_series_are_an_error_as_in_keda() -> None:
    with pytest.raises(LagSourceError) as info:
        source(prometheus("prometheus_query_by_partition.json")).total_lag()
    assert str(info.value) == ("prometheus lag source: query 'sum(kafka_consumergroup_lag{consumergroup=\"enrich\","
                               "topic=\"events\"})': returned 2 series, expected one; aggregate the query with sum(...)")


def test_a_failed_query_names_the_url() -> None:
    with pytest.raises(LagSourceError) as info:
        source([], error=ConnectionError("refused")).total_lag()
    assert str(info.value).endswith("at http://127.0.0.1:9090 failed: ConnectionError: refused; "
                                    "check that Prometheus runs")


def test_a_value_that_is_not_a_number() -> None:
    with pytest.raises(LagSourceError) as info:
        source([{"metric": {}, "value": [1.0, "many"]}]).total_lag()
    assert str(info.value).endswith("value: got 'many', expected a number of records")


def test_options() -> None:
    lag_source = make_lag_source("prometheus", None, "enrich", "events", {"url": "http://p:9090", "empty": "unknown"})
    assert (lag_source.url, lag_source.query, lag_source.empty) == (
        "http://p:9090", default_query("enrich", "events"), "unknown")
    with pytest.raises(ConfigError) as info:
        make_lag_source("prometheus", None, "enrich", "events", {"empty": "none", "qeury": "x"})
    assert info.value.problems == [
        "'qeury': got 'x', expected a known key of the document root in prometheus lag source options; "
        "rename it to 'query'",
        "'url': got no value, expected a non-empty string in prometheus lag source options; "
        "set url=http://127.0.0.1:9090",
        "'empty': got 'none', expected one of {'zero', 'unknown'} in prometheus lag source options; set empty=zero",
    ]


def test_the_client_is_made_at_the_first_read_not_when_built() -> None:
    lag_source = make_lag_source("prometheus", None, "enrich", "events", {"url": "http://127.0.0.1:1"})
    assert lag_source._client is None
    assert repr(lag_source) == ("PrometheusLagSource(url='http://127.0.0.1:1', query='sum(kafka_consumergroup_lag"
                                "{consumergroup=\"enrich\",topic=\"events\"})', empty='zero')")
