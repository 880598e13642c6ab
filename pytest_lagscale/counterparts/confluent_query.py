"""The Confluent Cloud Metrics API's query request, validated as the API documents it (pure).

:func:`parse_query` turns a ``POST /v2/metrics/cloud/query`` body into a :class:`MetricsQuery`
or raises :class:`ApiError` with the documented status and an ``ErrorResponse`` body
(``{"errors": [{"status": "400", "detail": "..."}]}``), one detail per problem:

* ``aggregations``: required, exactly one ``{metric, agg?}``; the metric must be one this
  service serves (:data:`METRICS`: ``io.confluent.kafka.server/consumer_lag_offsets``); ``agg``,
  when given, ``SUM`` (the only AggregationFunction);
* ``granularity``: required, one of the enum (``PT1M`` ... ``P1D``, ``ALL``), and each interval
  no longer than its maximum (PT1M: 6 h, PT5M: 1 d, PT15M: 4 d, PT30M: 7 d);
* ``intervals``: required, at least one ISO-8601 interval ``<start>/<end>``, ``<start>/<duration>``
  or ``<duration>/<end>``; ``now`` with offsets (``now-2m``) and truncation (``now|m``) allowed;
* ``filter``: a field filter (``op`` EQ/GT/GTE, ``field``, ``value`` string or integer), a
  compound one (AND/OR over ``filters``) or a unary one (NOT); fields must be labels of the
  metric; the dataset ``cloud`` requires a ``resource.kafka.id`` EQ filter (authorization);
* ``group_by``: labels of the metric; ``format`` FLAT (default) or GROUPED (only with group_by);
  ``limit`` 1..1000 (default 100); ``order_by`` only with granularity ALL.

Source: confluentinc/ccloud-sdk-go-v2 metrics/v2/api/openapi.yaml (QueryRequest, Aggregation,
AggregationFunction, Granularity, Interval, Filter, FieldFilter, CompoundFilter, UnaryFilter,
ResponseFormat, ErrorResponse; "Datasets": cloud needs a resource filter)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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
#: Granularity -> (bucket seconds, longest interval seconds); ALL: one bucket per interval.
GRANULARITIES: dict[str, tuple[float | None, float | None]] = {
    "PT1M": (60.0, 6 * 3600.0), "PT5M": (300.0, 86_400.0), "PT15M": (900.0, 4 * 86_400.0),
    "PT30M": (1800.0, 7 * 86_400.0), "PT1H": (3600.0, None), "PT4H": (4 * 3600.0, None),
    "PT6H": (6 * 3600.0, None), "PT12H": (12 * 3600.0, None), "P1D": (86_400.0, None), "ALL": (None, None),
}
_NOW = re.compile(r"now(?P<offset>[+-]\d+[mhd])?(?:\|(?P<trunc>[mhd]))?")
_DURATION = re.compile(r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?")
_UNIT_S = {"m": 60, "h": 3600, "d": 86_400}


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
        granularity: the enum value.
        bucket_s: bucket length in seconds (None for ALL).
        intervals: ``(start, end)`` pairs, aware UTC.
        filter: the filter tree as sent (None: none).
        group_by: labels to group by.
        format: FLAT or GROUPED.
        limit: most groups returned.
        cluster_ids: the ``resource.kafka.id`` values the filter names (authorization).
    """

    metric: str
    granularity: str
    bucket_s: float | None
    intervals: tuple[tuple[datetime, datetime], ...]
    filter: Mapping[str, Any] | None = None
    group_by: tuple[str, ...] = ()
    format: str = "FLAT"
    limit: int = 100
    cluster_ids: tuple[str, ...] = field(default=())


def parse_query(body: Any, now_utc: datetime) -> MetricsQuery:
    """Validate a query body (see the module docstring) at ``now_utc`` (what ``now`` means).

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
    intervals = _intervals(body.get("intervals"), now_utc, problems)
    if granularity in GRANULARITIES and GRANULARITIES[granularity][1] is not None:
        longest = GRANULARITIES[granularity][1]
        for start, end in intervals:
            if (end - start).total_seconds() > longest:
                problems.append(f"interval {_iso(start)}/{_iso(end)} is longer than {longest / 3600:g} hours, the "
                                f"maximum for granularity {granularity}")
    cluster_ids: list[str] = []
    flt = body.get("filter")
    if flt is not None:
        _filter(flt, labels, problems, cluster_ids, "filter")
    group_by = body.get("group_by") or []
    if not isinstance(group_by, list) or not all(isinstance(g, str) for g in group_by):
        problems.append("group_by must be a list of label names")
        group_by = []
    for label in group_by:
        if labels and label not in labels:
            problems.append(f"group_by label {label!r} is not a label of {metric} (one of {', '.join(labels)})")
    fmt = body.get("format", "FLAT")
    if fmt not in ("FLAT", "GROUPED"):
        problems.append(f"format {fmt!r} is not one of FLAT, GROUPED")
    elif fmt == "GROUPED" and not group_by:
        problems.append("format GROUPED is only allowed when group_by is non-empty")
    limit = body.get("limit", 100)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        problems.append(f"limit {limit!r} must be an integer in [1, 1000]")
    if body.get("order_by") is not None and granularity != "ALL":
        problems.append("order_by is only valid for granularity ALL")
    if not problems and not cluster_ids:
        problems.append("the cloud dataset requires a resource filter: add {\"field\": \"resource.kafka.id\", "
                        "\"op\": \"EQ\", \"value\": \"lkc-...\"}")
    if problems:
        raise ApiError(400, problems)
    return MetricsQuery(metric or "", granularity, GRANULARITIES[granularity][0], tuple(intervals), flt,
                        tuple(group_by), fmt, limit, tuple(cluster_ids))


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


def _filter(node: Any, labels: Mapping[str, str], problems: list[str], cluster_ids: list[str], where: str) -> None:
    """Validate one filter node (recursively); collect the cluster ids of EQ filters."""
    if not isinstance(node, Mapping):
        problems.append(f"{where} must be an object")
        return
    op = node.get("op")
    if op in ("AND", "OR"):
        children = node.get("filters")
        if not isinstance(children, list) or not children:
            problems.append(f"{where}.filters must be a non-empty list for op {op}")
            return
        for i, child in enumerate(children):
            _filter(child, labels, problems, cluster_ids if op == "AND" else [], f"{where}.filters[{i}]")
    elif op == "NOT":
        _filter(node.get("filter"), labels, problems, [], f"{where}.filter")
    elif op in ("EQ", "GT", "GTE"):
        name, value = node.get("field"), node.get("value")
        if not isinstance(name, str) or (labels and name not in labels):
            problems.append(f"{where}.field {name!r} is not a label of the metric"
                            + (f" (one of {', '.join(labels)})" if labels else ""))
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            problems.append(f"{where}.value {value!r} must be a string or an integer")
        elif name == "resource.kafka.id" and op == "EQ":
            cluster_ids.append(str(value))
    else:
        problems.append(f"{where}.op {op!r} is not one of EQ, GT, GTE, AND, OR, NOT")


def matches(node: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a series with query labels ``labels`` (``metric.topic`` ...) passes the filter
    (labels compare lexicographically as strings, as the API documents)."""
    if node is None:
        return True
    op = node["op"]
    if op == "AND":
        return all(matches(child, labels) for child in node["filters"])
    if op == "OR":
        return any(matches(child, labels) for child in node["filters"])
    if op == "NOT":
        return not matches(node["filter"], labels)
    have, want = labels.get(node["field"]), str(node["value"])
    if have is None:
        return False
    return have == want if op == "EQ" else have > want if op == "GT" else have >= want


def _intervals(value: Any, now_utc: datetime, problems: list[str]) -> list[tuple[datetime, datetime]]:
    if not isinstance(value, list) or not value:
        problems.append("intervals must hold at least one ISO-8601 interval")
        return []
    out = []
    for text in value:
        try:
            out.append(parse_interval(text, now_utc))
        except ValueError as exc:
            problems.append(str(exc))
    return out


def parse_interval(text: Any, now_utc: datetime) -> tuple[datetime, datetime]:
    """``<start>/<end>``, ``<start>/<duration>`` or ``<duration>/<end>`` as aware UTC datetimes.

    Raises:
        ValueError: not such an interval, or its start is not before its end.
    """
    parts = text.split("/") if isinstance(text, str) else []
    if len(parts) != 2:
        raise ValueError(f"interval {text!r} is not an ISO-8601 interval (<start>/<end>, <start>/<duration> or "
                         "<duration>/<end>)")
    first, second = parts
    if first.startswith("P"):
        end = parse_instant(second, now_utc)
        start = end - parse_duration(first)
    else:
        start = parse_instant(first, now_utc)
        end = start + parse_duration(second) if second.startswith("P") else parse_instant(second, now_utc)
    if start >= end:
        raise ValueError(f"interval {text!r} must start before it ends")
    return start, end


def parse_instant(text: str, now_utc: datetime) -> datetime:
    """An RFC 3339 timestamp, or ``now`` with an optional offset (``-2m``) and truncation (``|m``)."""
    found = _NOW.fullmatch(text)
    if found:
        moment = now_utc
        if found["offset"]:
            moment += timedelta(seconds=int(found["offset"][:-1]) * _UNIT_S[found["offset"][-1]])
        if found["trunc"]:
            unit = _UNIT_S[found["trunc"]]
            moment = datetime.fromtimestamp(moment.timestamp() // unit * unit, timezone.utc)
        return moment
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"interval bound {text!r} is not an ISO-8601 timestamp or a 'now' expression") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def parse_duration(text: str) -> timedelta:
    """An ISO-8601 duration of days, hours, minutes and seconds (``PT5M``, ``P1DT2H``)."""
    found = _DURATION.fullmatch(text)
    if not found or text in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"interval duration {text!r} is not an ISO-8601 duration such as PT5M")
    parts = {k: float(v) for k, v in found.groupdict().items() if v}
    return timedelta(days=parts.get("d", 0), hours=parts.get("h", 0), minutes=parts.get("m", 0),
                     seconds=parts.get("s", 0))


def buckets(query: MetricsQuery, visible_until: datetime) -> list[tuple[datetime, datetime]]:
    """The query's time buckets, aligned to UTC multiples of the granularity, that overlap an
    interval and ended by ``visible_until`` (complete and published); for ALL, one per interval."""
    out = []
    for start, end in query.intervals:
        if query.bucket_s is None:
            if end <= visible_until:
                out.append((start, end))
            continue
        step = query.bucket_s
        t = start.timestamp() // step * step
        while t < end.timestamp():
            b_start = datetime.fromtimestamp(t, timezone.utc)
            b_end = datetime.fromtimestamp(t + step, timezone.utc)
            if b_end <= visible_until:
                out.append((b_start, b_end))
            t += step
    return sorted(set(out))


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
