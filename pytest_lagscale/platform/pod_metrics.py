"""The per-pod values of a ``type: Pods`` metric, read from the run's Prometheus the way
prometheus-adapter serves them to the HPA: the metric's series summed per pod, at the newest
sample (an instant query: the last scrape within Prometheus's 5 min lookback, none after a
replica stopped exporting the series, whose staleness marker ends it at once).

On Kubernetes the adapter's rule would be::

    rules:
      - seriesQuery: 'consumer_records_lag{namespace!="",pod!=""}'
        resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
        metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'

Locally every replica is a scrape target of the ``replicas`` job (``instance`` =
``127.0.0.1:<metrics port>``), so the query is ``sum by (instance) (<metric>{job="replicas"})``
and each instance maps back to the live replica listening on that port. A live replica without
a value is a missing pod; terminating replicas are not pods of the scale target any more (the
HPA ignores pods with a deletion timestamp), so their values are dropped. Values become
milli-units as the adapter's ``resource.NewMilliQuantity(int64(value * 1000))`` does
(truncated).

Source: kubernetes-sigs/prometheus-adapter docs/config.md (metricsQuery) and
pkg/custom-provider/provider.go metricsFor v0.12.0; kubernetes/kubernetes
pkg/controller/podautoscaler/metrics/client.go customMetricsClient.GetRawMetric v1.28.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..control.hpa import PodMetric
from ..contract.errors import LagscaleError


@dataclass(frozen=True)
class PodMetricsReading:
    """One reading of a Pods metric.

    Attributes:
        pods: one :class:`PodMetric` per live replica, in the order given (none Pending: a local
            replica's process runs from its start).
        values: ``{replica_id: value}`` in the metric's unit, None for a missing pod (the
            ``pod_metrics`` event).
    """

    pods: tuple[PodMetric, ...]
    values: dict[str, float | None]


class PrometheusPodMetrics:
    """Reads ``sum by (instance)`` of a metric from Prometheus and maps instances to replicas.

    Args:
        url: Prometheus base URL.
        job: the scrape job of the replicas.
        client: an object with prometheus-api-client's ``custom_query`` (default:
            ``PrometheusConnect(url, disable_ssl=True)``, made at the first :meth:`read`: every
            run builds this reader, only a Pods-metric policy reads it, and the client's import
            pulls in pandas).
    """

    def __init__(self, url: str, *, job: str = "replicas", client: Any = None):
        self.url = url
        self.job = job
        self._client = client

    @property
    def client(self) -> Any:
        """The prometheus-api-client connection, made on first use."""
        if self._client is None:
            from prometheus_api_client import PrometheusConnect
            self._client = PrometheusConnect(self.url, disable_ssl=True)
        return self._client

    def promql(self, metric_name: str) -> str:
        """The instant query for ``metric_name``."""
        return f'sum by (instance) ({metric_name}{{job="{self.job}"}})'

    def read(self, metric_name: str, replicas: Sequence[Any]) -> PodMetricsReading:
        """The per-pod values of ``metric_name`` for ``replicas`` (the platform's live replicas,
        each with ``replica_id`` and ``metrics_port``).

        Raises:
            LagscaleError: the query failed (the HPA then has no value for the metric this sync).
        """
        query = self.promql(metric_name)
        try:
            result = self.client.custom_query(query)
        except Exception as exc:  # requests or PrometheusApiClientException
            raise LagscaleError(f"pods metric {metric_name!r}: query {query!r} failed: {exc}; check that "
                                "Prometheus runs") from exc
        by_instance: dict[str, float] = {}
        for series in result or ():
            value = float(series["value"][1])
            if not math.isnan(value):
                by_instance[series["metric"].get("instance", "")] = value
        values = {r.replica_id: by_instance.get(f"127.0.0.1:{r.metrics_port}") for r in replicas}
        pods = tuple(PodMetric(None if v is None else int(v * 1000)) for v in values.values())
        return PodMetricsReading(pods, values)
