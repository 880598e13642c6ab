"""What one external-metrics read of the HPA controller asked and was answered.

:func:`parse_metric_path` reads the request target (namespace, metric, label selector),
:func:`parse_metric_values` the adapter's ``ExternalMetricValueList`` (JSON, or the Kubernetes
protobuf kube-controller-manager asks for, :mod:`.metric_proto`), and :class:`MetricRead` is the
record the metrics tap (:mod:`.metrics_tap`) makes of each read and the shadow
(:mod:`.shadow`) replays.

Source: k8s.io/metrics pkg/client/external_metrics/client.go ``namespacedMetrics.List`` (the
request shape); k8s.io/metrics pkg/apis/external_metrics/v1beta1 (the answer).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass

EXTERNAL_METRICS_PREFIX = "/apis/external.metrics.k8s.io/v1beta1/namespaces/"


@dataclass(frozen=True)
class MetricRead:
    """One external-metrics read of the HPA controller, as it passed through the tap.

    Attributes:
        t_s: the tap clock's ``now()`` (monotonic seconds) when the request arrived.
        wall_utc: the same instant as UTC ISO-8601.
        namespace, metric_name: the path's ``<ns>`` and ``<metric>`` (KEDA: ``s0-kafka-events``).
        label_selector: the ``labelSelector`` query parameter, URL-decoded ("" when absent).
        status: the HTTP status returned to the aggregator (502: the adapter was unreachable).
        values: ``items[].value`` of the ExternalMetricValueList, one float per item, in order.
        total: the sum of ``values``; None when there are no items, the status is not 2xx or the
            body does not parse (the HPA's "no metrics returned" / failed read).
        remote_user: the ``X-Remote-User`` header ("" when absent).
        error: why ``total`` is None, or None.
    """

    t_s: float
    wall_utc: str
    namespace: str
    metric_name: str
    label_selector: str
    status: int
    values: tuple[float, ...]
    total: float | None
    remote_user: str
    error: str | None = None


def parse_metric_path(target: str) -> tuple[str, str, str] | None:
    """``(namespace, metric_name, label_selector)`` of an external-metrics request target.

    Args:
        target: the request target, path plus query
            (``/apis/external.metrics.k8s.io/v1beta1/namespaces/default/s0-kafka-events?labelSelector=...``).

    Returns:
        The URL-decoded parts (selector "" when absent); None for any other path (discovery
        ``/apis/external.metrics.k8s.io/v1beta1``, ``/openapi/v2``, a deeper or shorter path).
    """
    split = urllib.parse.urlsplit(target)
    if not split.path.startswith(EXTERNAL_METRICS_PREFIX):
        return None
    parts = split.path[len(EXTERNAL_METRICS_PREFIX):].split("/")
    if len(parts) != 2 or not all(parts):
        return None
    query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
    selector = query.get("labelSelector", [""])[0]
    return urllib.parse.unquote(parts[0]), urllib.parse.unquote(parts[1]), selector


def parse_metric_values(status: int, body: bytes) -> tuple[tuple[float, ...], float | None, str | None]:
    """``(values, total, error)`` of an ExternalMetricValueList answer, JSON or Kubernetes
    protobuf (what kube-controller-manager asks for: :mod:`.metric_proto`).

    Each ``items[].value`` is a Kubernetes quantity (``"52338"``, ``"1500m"``, ``"2k"``) parsed
    with ``kubernetes.utils.parse_quantity``. ``total`` is None (and ``error`` says why) for a
    non-2xx status, a body that is not such a list, or no items.
    """
    if not 200 <= status < 300:
        return (), None, f"HTTP {status}"
    from kubernetes.utils import parse_quantity

    from .metric_proto import ENVELOPE_PREFIX, external_metric_values

    try:
        if body.startswith(ENVELOPE_PREFIX):
            quantities = [value for _, value in external_metric_values(body)]
        else:
            quantities = [item["value"] for item in json.loads(body)["items"]]
        values = tuple(float(parse_quantity(q)) for q in quantities)
    except (ValueError, TypeError, KeyError) as exc:
        return (), None, f"not an ExternalMetricValueList: {type(exc).__name__}: {exc}"
    if not values:
        return (), None, "no items"
    return values, sum(values), None


__all__ = ["EXTERNAL_METRICS_PREFIX", "MetricRead", "parse_metric_path", "parse_metric_values"]
