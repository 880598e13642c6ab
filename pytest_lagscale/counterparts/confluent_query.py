"""The Confluent Cloud Metrics API's query request, as far as the ``confluent`` lag source sends it (pure).

:func:`parse_query` turns a ``POST /v2/metrics/cloud/query`` body into a :class:`MetricsQuery`
or raises :class:`ApiError` with the documented status and an ``ErrorResponse`` body
(``{"errors": [{"status": "400", "detail": "..."}]}``), one detail per problem. Served: the body
:func:`pytest_lagscale.sources.confluent.query_body` sends (the recipe's query), so

* ``aggregations``: exactly one ``{metric, agg?}``; the metric one this service serves
  (:data:`METRICS`: ``io.confluent.kafka.server/consumer_lag_offsets``); ``agg``, when given, ``SUM``;
* ``granularity``: ``PT1M``, each interval at most 6 hours;
* ``intervals``: at least one ``<start>/<end>`` of RFC 3339 timestamps;
* ``filter``: an ``EQ`` field filter or an ``AND`` of them, on labels of the metric, with the
  ``resource.kafka.id`` the dataset ``cloud`` requires (authorization); ``format`` FLAT.

Anything else the API documents (the other granularities, ``now`` and ISO-8601 durations in
intervals, OR/NOT/GT/GTE filters, ``group_by``, GROUPED, ``limit``, ``order_by``) is a 400 whose
detail names the field and says this service does not serve it; values the API itself refuses
keep the API's wording.

Source: confluentinc/ccloud-sdk-go-v2 metrics/v2/api/openapi.yaml (QueryRequest, Aggregation,
AggregationFunction, Granularity, Interval, FieldFilter, CompoundFilter, ErrorResponse;
"Datasets": cloud needs a resource filter)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

#: Metric -> {label as the query names it: label of the Prometheus series it is served from}.
METRICS: dict[str, dict[str, str]] = {
    "io.confluent.kafka.server/consumer_lag_offsets": {
        "resource.kafka.id": "",  # the service's cluster, not a series label
        "metric.consumer_group_id": "consumergroup",
        "metric.topic": "topic",
        "metric.partition": "partition",
    },
}
#: The API's Granularity enum (what a request may name).
GRANULARITIES = ("PT1M", "PT5M", "PT15M", "PT30M", "PT1H", "PT4H", "PT6H", "PT12H", "P1D", "ALL")
#: The one granularity served: bucket seconds and the longest interval the API allows for it.
SERVED_GRANULARITY, BUCKET_S, LONGEST_INTERVAL_S = "PT1M", 60.0, 6 * 3600.0
#: The API's filter ops (what a request may name); only EQ and AND are served.
FILTER_OPS = ("EQ", "GT", "GTE", "AND", "OR", "NOT")
#: QueryRequest fields the lag source never sends: refused with the field named.
_UNSERVED_FIELDS = ("group_by", "limit", "order_by")
_NOT_SERVED = "is not served by lagscale's Metrics API (it serves the confluent lag source's query)"


class ApiError(Exception):
    """A documented error answer: HTTP ``status`` and one ``detail`` per problem."""

    def __init__(self, status: int, details: list[str]):
        self.status, self.details = status, list(details)
        super().__init__(f"{status}: " + "; ".join(self.details))

    def body(self) -> dict[str, Any]:
        """The ErrorResponse: ``{"errors": [{"status": "<status>", "detail": "..."}, ...]}``."""
        return {"errors": [{"status": str(self.status), "detail": d} for d in self.details]}


@dataclass(frozen=True)
class MetricsQuery:
    """A validated query.

    Attributes:
        metric: the metric name.
        granularity: ``PT1M``.
        bucket_s: bucket length in seconds (60).
        intervals: ``(start, end)`` pairs, aware UTC.
        filter: the filter as sent (None: none).
        cluster_ids: the ``resource.kafka.id`` values the filter names (authorization).
    """

    metric: str
    granularity: str
    bucket_s: float
    intervals: tuple[tuple[datetime, datetime], ...]
    filter: Mapping[str, Any] | None = None
    cluster_ids: tuple[str, ...] = field(default=())


def parse_query(body: Any) -> MetricsQuery:
    """Validate a query body (see the module docstring).

    Raises:
        ApiError: 400 with every problem found.
    """
    problems: list[str] = []
    if not isinstance(body, Mapping):
        raise ApiError(400, ["request body must be a JSON object"])
    metric = _aggregation(body.get("aggregations"), problems)
    labels = METRICS.get(metric or "", {})
    granularity = body.get("granularity")
    if granularity is None:
        problems.append("granularity must not be null")
    elif granularity not in GRANULARITIES:
        problems.append(f"granularity {granularity!r} is not one of {', '.join(GRANULARITIES)}")
    elif granularity != SERVED_GRANULARITY:
        problems.append(f"granularity {granularity!r} {_NOT_SERVED}; use {SERVED_GRANULARITY}")
    intervals = _intervals(body.get("intervals"), problems)
    for start, end in intervals:
        if granularity == SERVED_GRANULARITY and (end - start).total_seconds() > LONGEST_INTERVAL_S:
            problems.append(f"interval {_iso(start)}/{_iso(end)} is longer than {LONGEST_INTERVAL_S / 3600:g} "
                            f"hours, the maximum for granularity {SERVED_GRANULARITY}")
    cluster_ids: list[str] = []
    flt = body.get("filter")
    if flt is not None:
        _filter(flt, labels, problems, cluster_ids, "filter", top=True)
    for name in _UNSERVED_FIELDS:
        if body.get(name) is not None:
            problems.append(f"{name} {_NOT_SERVED}; remove it")
    fmt = body.get("format", "FLAT")
    if fmt != "FLAT":
        problems.append(f"format {fmt!r} {_NOT_SERVED}; use FLAT or leave format out")
    if not problems and not cluster_ids:
        problems.append("the cloud dataset requires a resource filter: add {\"field\": \"resource.kafka.id\", "
                        "\"op\": \"EQ\", \"value\": \"lkc-...\"}")
    if problems:
        raise ApiError(400, problems)
    return MetricsQuery(metric or "", granularity, BUCKET_S, tuple(intervals), flt, tuple(cluster_ids))


def _aggregation(aggregations: Any, problems: list[str]) -> str | None:
    if not isinstance(aggregations, list) or len(aggregations) != 1 or not isinstance(aggregations[0], Mapping):
        problems.append("aggregations must hold exactly one {\"metric\": ..., \"agg\": ...} (one aggregation per "
                        "request is supported)")
        return None
    metric, agg = aggregations[0].get("metric"), aggregations[0].get("agg")
    if not isinstance(metric, str) or not metric:
        problems.append("aggregations[0].metric must not be null")
        return None
    if metric not in METRICS:
        problems.append(f"Unknown metric {metric!r}; this service serves {', '.join(METRICS)}")
        return None
    if agg is not None and agg != "SUM":
        problems.append(f"aggregations[0].agg {agg!r} is not one of SUM")
    return metric


def _filter(node: Any, labels: Mapping[str, str], problems: list[str], cluster_ids: list[str], where: str,
            *, top: bool = False) -> None:
    """Validate an EQ field filter, or (at the top) an AND of them; collect the cluster ids."""
    if not isinstance(node, Mapping):
        problems.append(f"{where} must be an object")
        return
    op = node.get("op")
    if op == "AND" and top:
        children = node.get("filters")
        if not isinstance(children, list) or not children:
            problems.append(f"{where}.filters must be a non-empty list for op {op}")
            return
        for i, child in enumerate(children):
            _filter(child, labels, problems, cluster_ids, f"{where}.filters[{i}]")
    elif op == "EQ":
        name, value = node.get("field"), node.get("value")
        if not isinstance(name, str) or (labels and name not in labels):
            problems.append(f"{where}.field {name!r} is not a label of the metric"
                            + (f" (one of {', '.join(labels)})" if labels else ""))
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            problems.append(f"{where}.value {value!r} must be a string or an integer")
        elif name == "resource.kafka.id":
            cluster_ids.append(str(value))
    elif op in FILTER_OPS:
        problems.append(f"{where}.op {op!r} {_NOT_SERVED}; use EQ filters, joined by one AND")
    else:
        problems.append(f"{where}.op {op!r} is not one of {', '.join(FILTER_OPS)}")


def matches(node: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a series with query labels ``labels`` (``metric.topic`` ...) passes a validated
    filter (EQ compares as strings, as the API documents)."""
    if node is None:
        return True
    if node["op"] == "AND":
        return all(matches(child, labels) for child in node["filters"])
    return labels.get(node["field"]) == str(node["value"])


def _intervals(value: Any, problems: list[str]) -> list[tuple[datetime, datetime]]:
    if not isinstance(value, list) or not value:
        problems.append("intervals must hold at least one ISO-8601 interval")
        return []
    out = []
    for text in value:
        try:
            out.append(parse_interval(text))
        except ValueError as exc:
            problems.append(str(exc))
    return out


def parse_interval(text: Any) -> tuple[datetime, datetime]:
    """``<start>/<end>`` of RFC 3339 timestamps as aware UTC datetimes.

    Raises:
        ValueError: not an ISO-8601 interval; a duration or ``now`` bound (not served); a bound
            that is not a timestamp; a start not before the end.
    """
    parts = text.split("/") if isinstance(text, str) else []
    if len(parts) != 2:
        raise ValueError(f"interval {text!r} is not an ISO-8601 interval (<start>/<end>, <start>/<duration> or "
                         "<duration>/<end>)")
    if any(part.startswith(("P", "now")) for part in parts):
        raise ValueError(f"interval {text!r}: durations and 'now' {_NOT_SERVED}; send <start>/<end> timestamps")
    start, end = (_instant(part) for part in parts)
    if start >= end:
        raise ValueError(f"interval {text!r} must start before it ends")
    return start, end


def _instant(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"interval bound {text!r} is not an ISO-8601 timestamp") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def buckets(query: MetricsQuery, visible_until: datetime) -> list[tuple[datetime, datetime]]:
    """The query's time buckets, aligned to UTC multiples of the granularity, that overlap an
    interval and ended by ``visible_until`` (complete and published)."""
    out = []
    for start, end in query.intervals:
        step = query.bucket_s
        t = start.timestamp() // step * step
        while t < end.timestamp():
            b_end = datetime.fromtimestamp(t + step, timezone.utc)
            if b_end <= visible_until:
                out.append((datetime.fromtimestamp(t, timezone.utc), b_end))
            t += step
    return sorted(set(out))


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
