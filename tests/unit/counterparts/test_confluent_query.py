"""The local Metrics API's request checks, as the Confluent Cloud Metrics API documents them."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from pytest_lagscale.counterparts.confluent_query import ApiError, buckets, matches, parse_interval, parse_query
from pytest_lagscale.sources.confluent import ConfluentSettings, query_body
from pytest_lagscale.sources.credentials import Secret

NOW = datetime(2026, 11, 26, 0, 26, 10, tzinfo=timezone.utc)
RECIPE = query_body(ConfluentSettings("lkc-abc123", "enrich", Secret("k"), Secret("s")), NOW)


def with_(path: str, value: Any) -> dict[str, Any]:
    """The recipe's body with one field (dotted path, list indexes as numbers) set; ``...`` deletes it."""
    body = copy.deepcopy(RECIPE)
    node: Any = body
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        node = node[key]
    if value is ...:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return body


def test_the_recipes_body_is_valid() -> None:
    query = parse_query(RECIPE)
    assert (query.metric, query.granularity, query.bucket_s, query.cluster_ids) == (
        "io.confluent.kafka.server/consumer_lag_offsets", "PT1M", 60.0, ("lkc-abc123",))
    assert query.intervals == ((NOW - timedelta(minutes=5), NOW),)


@pytest.mark.parametrize(("body", "details"), [
    pytest.param(with_("aggregations.0.metric", "io.confluent.kafka.server/consumer_lag"),
                 ["Unknown metric 'io.confluent.kafka.server/consumer_lag'; this service serves "
                  "io.confluent.kafka.server/consumer_lag_offsets"], id="unknown-metric"),
    pytest.param(with_("aggregations.0.agg", "MAX"), ["aggregations[0].agg 'MAX' is not one of SUM"], id="bad-agg"),
    pytest.param(with_("aggregations", []), ["aggregations must hold exactly one {\"metric\": ..., \"agg\": ...} "
                                             "(one aggregation per request is supported)"], id="no-aggregation"),
    pytest.param(with_("granularity", "PT2M"), ["granularity 'PT2M' is not one of PT1M, PT5M, PT15M, PT30M, PT1H, "
                                                "PT4H, PT6H, PT12H, P1D, ALL"], id="bad-granularity"),
    pytest.param(with_("granularity", ...), ["granularity must not be null"], id="missing-granularity"),
    pytest.param(with_("intervals", ["2026-11-25T00:00:00Z/2026-11-25T07:00:00Z"]),
                 ["interval 2026-11-25T00:00:00Z/2026-11-25T07:00:00Z is longer than 6 hours, the maximum for "
                  "granularity PT1M"], id="interval-too-long-for-PT1M"),
    pytest.param(with_("intervals", ["last-5-minutes"]),
                 ["interval 'last-5-minutes' is not an ISO-8601 interval (<start>/<end>, <start>/<duration> or "
                  "<duration>/<end>)"], id="bad-interval"),
    pytest.param(with_("intervals", []), ["intervals must hold at least one ISO-8601 interval"], id="no-interval"),
    pytest.param(with_("filter.filters.1.field", "metric.consumer_group"),
                 ["filter.filters[1].field 'metric.consumer_group' is not a label of the metric (one of "
                  "resource.kafka.id, metric.consumer_group_id, metric.topic, metric.partition)"], id="bad-filter-field"),
    pytest.param(with_("filter.filters.1.op", "LIKE"), ["filter.filters[1].op 'LIKE' is not one of EQ, GT, GTE, AND, "
                                                        "OR, NOT"], id="bad-filter-op"),
    pytest.param(with_("filter.filters.1.value", ["enrich"]), ["filter.filters[1].value ['enrich'] must be a string "
                                                                "or an integer"], id="bad-filter-value"),
    pytest.param(with_("filter.filters", []), ["filter.filters must be a non-empty list for op AND"],
                 id="empty-compound-filter"),
    pytest.param(with_("filter", ...), ["the cloud dataset requires a resource filter: add {\"field\": "
                                        "\"resource.kafka.id\", \"op\": \"EQ\", \"value\": \"lkc-...\"}"],
                 id="no-resource-filter"),
    pytest.param(with_("granularity", "PT5M"), ["granularity 'PT5M' is not served by lagscale's Metrics API (it serves the confluent lag source's query); use PT1M"],
                 id="other-granularity-not-served"),
    pytest.param(with_("intervals", ["PT5M/now"]), ["interval 'PT5M/now': durations and 'now' is not served by lagscale's Metrics API (it serves the confluent lag source's query); send "
                                                   "<start>/<end> timestamps"], id="duration-and-now-not-served"),
    pytest.param(with_("intervals", ["2026-11-26T00:21:10Z/yesterday"]),
                 ["interval bound 'yesterday' is not an ISO-8601 timestamp"], id="bad-interval-bound"),
    pytest.param(with_("filter.filters.1.op", "GTE"), ["filter.filters[1].op 'GTE' is not served by lagscale's Metrics API (it serves the confluent lag source's query); use EQ filters, joined "
                                                       "by one AND"], id="other-filter-op-not-served"),
    pytest.param(with_("filter", {"op": "OR", "filters": RECIPE["filter"]["filters"]}),
                 ["filter.op 'OR' is not served by lagscale's Metrics API (it serves the confluent lag source's query); use EQ filters, joined by one AND"], id="or-not-served"),
    pytest.param(with_("format", "GROUPED"), ["format 'GROUPED' is not served by lagscale's Metrics API (it serves the confluent lag source's query); use FLAT or leave format out"],
                 id="grouped-not-served"),
    pytest.param(with_("limit", 10), ["limit is not served by lagscale's Metrics API (it serves the confluent lag source's query); remove it"], id="limit-not-served"),
    pytest.param(with_("order_by", [{"metric": "m"}]), ["order_by is not served by lagscale's Metrics API (it serves the confluent lag source's query); remove it"], id="order-by-not-served"),
    pytest.param(with_("group_by", ["metric.topic"]), ["group_by is not served by lagscale's Metrics API (it serves the confluent lag source's query); remove it"], id="group-by-not-served"),
    pytest.param([], ["request body must be a JSON object"], id="not-an-object"),
])
def test_bad_requests_are_400_with_the_documented_error_body(body: Any, details: list[str]) -> None:
    with pytest.raises(ApiError) as info:
        parse_query(body)
    assert info.value.status == 400 and info.value.details == details
    assert info.value.body() == {"errors": [{"status": "400", "detail": d} for d in details]}


def test_every_problem_at_once() -> None:
    body = with_("granularity", "PT2M")
    body["limit"] = 5000
    with pytest.raises(ApiError) as info:
        parse_query(body)
    assert len(info.value.details) == 2


@pytest.mark.parametrize(("text", "start", "end"), [
    pytest.param("2026-11-26T00:21:10Z/2026-11-26T00:26:10Z", NOW - timedelta(minutes=5), NOW, id="start-end"),
    pytest.param("2026-11-26T01:21:10+01:00/2026-11-26T00:26:10Z", NOW - timedelta(minutes=5), NOW,
                 id="offset-timestamp"),
    pytest.param("2026-11-26T01:26:10+01:00/2026-11-26T00:26:10Z", NOW, None, id="equal-start-is-error"),
])
def test_intervals(text: str, start: datetime, end: datetime | None) -> None:
    if end is None:
        with pytest.raises(ValueError, match="must start before it ends"):
            parse_interval(text)
        return
    assert parse_interval(text) == (start, end)


def test_buckets_are_aligned_complete_and_published() -> None:
    query = parse_query(RECIPE)  # 00:21:10 .. 00:26:10
    minute = lambda m: datetime(2026, 11, 26, 0, m, tzinfo=timezone.utc)  # noqa: E731
    assert buckets(query, NOW) == [(minute(m), minute(m + 1)) for m in range(21, 26)]
    assert buckets(query, NOW - timedelta(seconds=130)) == [(minute(m), minute(m + 1)) for m in range(21, 24)]


@pytest.mark.parametrize(("flt", "passes"), [
    pytest.param(RECIPE["filter"], True, id="recipe-and"),
    pytest.param({"field": "metric.partition", "op": "EQ", "value": 3}, True, id="eq-compares-as-strings"),
    pytest.param({"op": "AND", "filters": [{"field": "metric.topic", "op": "EQ", "value": "x"},
                                           {"field": "metric.partition", "op": "EQ", "value": "3"}]}, False,
                 id="and-needs-every-filter"),
])
def test_filters(flt: dict, passes: bool) -> None:
    labels = {"resource.kafka.id": "lkc-abc123", "metric.consumer_group_id": "enrich", "metric.topic": "events",
              "metric.partition": "3"}
    assert matches(flt, labels) is passes
