"""The ``prometheus`` lag source: an instant PromQL query, as KEDA's ``prometheus`` trigger reads it.

The default query is ``sum(kafka_consumergroup_lag{consumergroup="<group>",topic="<topic>"})``
over the series of kafka_exporter (the run's lag exporter serves them, scraped every 1 s). It
goes through prometheus-api-client's ``custom_query`` (``GET /api/v1/query``), the client
imported at the first read (it pulls in pandas). The answer must be one series (zero series:
the source's empty policy; several: an error, as KEDA's scaler says "returned multiple
elements"); a NaN or infinite value counts as no value, as KEDA's ``ignoreNullValues`` does.

Staleness: an instant query's timestamp is its evaluation time, so the reading is dated "now";
the sample behind it is up to one scrape interval older (1 s in runs), and up to Prometheus's
5 min lookback when the exporter stopped answering.

Source: kedacore/keda pkg/scalers/prometheus_scaler.go ExecutePromQuery v2.20.2
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, ClassVar

from ..config._problems import Problems
from . import _options
from .base import EMPTY_POLICIES, LagSourceError, TotalLag, UtcNow, finite_lag, utc_now

OPTION_KEYS = ("url", "query", "empty")


def default_query(group: str, topic: str) -> str:
    """``sum(kafka_consumergroup_lag{consumergroup="<group>",topic="<topic>"})``: the group's
    total lag on the topic from kafka_exporter's per-partition series (label values escaped)."""
    return (f'sum(kafka_consumergroup_lag{{consumergroup="{_label(group)}",'
            f'topic="{_label(topic)}"}})')


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class PrometheusLagSource:
    """Total lag from one instant PromQL query.

    Args:
        url: Prometheus base URL (``http://127.0.0.1:9090``).
        query: the PromQL expression; it must answer one series (records).
        empty: ``zero`` (default) or ``unknown`` when the query matches no series.
        client: an object with prometheus-api-client's ``custom_query`` (default:
            ``PrometheusConnect(url, disable_ssl=True)``, made at the first read).
        clock: the wall clock readings are dated with when the answer has no timestamp.

    Raises:
        LagSourceError: from :meth:`total_lag` when the query fails or answers several series or a
            non-number.
    """

    name = "prometheus"
    per_partition: ClassVar[bool] = False

    def __init__(self, url: str, query: str, *, empty: str = "zero", client: Any = None,
                 clock: UtcNow = utc_now):
        self.url, self.query, self.empty = url, query, empty
        self._client = client
        self.clock = clock

    @classmethod
    def from_options(cls, admin: Any, group: str, topic: str,
                     options: Mapping[str, Any] | None = None) -> PrometheusLagSource:
        """The registry's factory: options ``url`` (required), ``query`` (default
        :func:`default_query`), ``empty`` (``zero``|``unknown``); ``admin`` is unused.

        Raises:
            ConfigError: every invalid option, one line each.
        """
        options = options or {}
        p = Problems("prometheus lag source options")
        _options.check_keys(options, OPTION_KEYS, p)
        url = _options.text(options, "url", p, example="http://127.0.0.1:9090")
        query = _options.text(options, "query", p, default=default_query(group, topic))
        empty = _options.choice(options, "empty", p, EMPTY_POLICIES)
        p.raise_if_any()
        return cls(url, query, empty=empty)

    @property
    def client(self) -> Any:
        """The prometheus-api-client connection, made on first use."""
        if self._client is None:
            from prometheus_api_client import PrometheusConnect
            self._client = PrometheusConnect(self.url, disable_ssl=True)
        return self._client

    def __repr__(self) -> str:
        return f"PrometheusLagSource(url={self.url!r}, query={self.query!r}, empty={self.empty!r})"

    def total_lag(self) -> TotalLag:
        """One instant query's value (see the module docstring for its rules).

        Raises:
            LagSourceError: the request failed, or the answer is several series or not a number.
        """
        read = self.clock()
        try:
            result = self.client.custom_query(self.query)
        except Exception as exc:  # requests or PrometheusApiClientException
            raise LagSourceError(f"prometheus lag source: query {self.query!r} at {self.url} failed: "
                                 f"{type(exc).__name__}: {exc}; check that Prometheus runs") from exc
        return lag_from_vector(result, query=self.query, empty=self.empty, read_utc=read)


def lag_from_vector(result: Any, *, query: str, empty: str, read_utc: datetime) -> TotalLag:
    """The reading from an instant query's ``data.result`` (a list of ``{"metric": {...},
    "value": [unix_s, "text"]}``).

    Raises:
        LagSourceError: the result is not a list, has several series, or a value is not a number.

    Source: kedacore/keda pkg/scalers/prometheus_scaler.go ExecutePromQuery v2.20.2 (empty
    result, multiple elements, NaN and Inf with ignoreNullValues)
    """
    where = f"prometheus lag source: query {query!r}"
    if not isinstance(result, list):
        raise LagSourceError(f"{where}: got {type(result).__name__}, expected a vector (list of series)")
    if not result:
        return TotalLag.empty(empty, read_utc, PrometheusLagSource.name)
    if len(result) > 1:
        raise LagSourceError(f"{where}: returned {len(result)} series, expected one; aggregate the query "
                             "with sum(...)")
    try:
        timestamp, text = result[0]["value"]
    except (KeyError, TypeError, ValueError) as exc:
        raise LagSourceError(f"{where}: got {result[0]!r}, expected a series with value [time, number]") from exc
    if isinstance(text, str) and text.strip().lower() in ("nan", "+inf", "-inf", "inf"):
        return TotalLag.empty(empty, read_utc, PrometheusLagSource.name)
    lag = finite_lag(text, f"{where} value")
    at = finite_lag(timestamp, f"{where} timestamp")
    return TotalLag(lag, datetime.fromtimestamp(at, timezone.utc), read_utc, PrometheusLagSource.name)
