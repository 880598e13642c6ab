"""The ``prometheus`` trigger's ``metadata``, read with KEDA's rules (pure).

Keys, defaults and meaning: ``control/keda/prometheus.py`` (which evaluates the
query's answer); docs/lag-sources.md "KEDA triggers for the same sources".

Source: kedacore/keda pkg/scalers/prometheus_scaler.go (prometheusMetadata,
parsePrometheusMetadata) v2.20.2
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_lagscale.config._problems import Problems, join
from pytest_lagscale.config.trigger_metadata import typed as tm
from pytest_lagscale.config.trigger_metadata.typed import check_target

KNOWN_KEYS = ("serverAddress", "query", "queryParameters", "threshold", "activationThreshold", "namespace",
              "customHeaders", "ignoreNullValues", "unsafeSsl", "awsRegion", "timeout", "identityOwner",
              *tm.AUTH_METADATA_KEYS)


@dataclass(frozen=True)
class PrometheusTriggerMetadata:
    """Validated ``prometheus`` trigger metadata with KEDA's defaults.

    Attributes:
        server_address: Prometheus base URL.
        query: the PromQL expression.
        threshold: the metric target (float).
        activation_threshold: the value must exceed it to be active.
        ignore_null_values: an empty answer or NaN/Inf reads as 0.
        query_parameters: extra URL parameters.
        namespace: the ``namespace`` URL parameter, None when unset.
        custom_headers: request headers (not in the repr: they may carry credentials).
        unsafe_ssl: skip TLS verification.
        timeout_s: HTTP timeout in seconds, None = KEDA's global one.
        auth_modes: the ``authModes`` named.
    """

    server_address: str
    query: str
    threshold: float
    activation_threshold: float = 0.0
    ignore_null_values: bool = True
    query_parameters: Mapping[str, str] = field(default_factory=dict)
    namespace: str | None = None
    custom_headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    unsafe_ssl: bool = False
    timeout_s: float | None = None
    auth_modes: tuple[str, ...] = ()


def parse_prometheus_metadata(metadata: Any, *, path: str = "", source: str = "trigger metadata",
                              has_authentication_ref: bool = False) -> PrometheusTriggerMetadata:
    """Parse ``metadata`` with KEDA's rules.

    Raises:
        ConfigError: every invalid field, one line each.
    """
    return tm.parse(collect_prometheus_metadata, metadata, path=path, source=source,
                    has_authentication_ref=has_authentication_ref)


def collect_prometheus_metadata(metadata: Any, path: str, p: Problems,
                                has_authentication_ref: bool = False) -> PrometheusTriggerMetadata | None:
    """Like :func:`parse_prometheus_metadata`, recording problems in ``p``; None when invalid."""
    before = len(p.lines)
    raw = tm.strings(metadata, path, p, KNOWN_KEYS)
    if raw is None:
        return None
    fields: dict[str, Any] = {
        "server_address": tm.required(raw, "serverAddress", path, p, "the Prometheus base URL",
                                      "http://prometheus.monitoring:9090"),
        "query": tm.required(raw, "query", path, p, "a PromQL expression answering one series",
                             'sum(kafka_consumergroup_lag{consumergroup="enrich",topic="events"})'),
        "threshold": tm.float64(raw, "threshold", path, p, is_required=True),
        "activation_threshold": tm.float64(raw, "activationThreshold", path, p, default=0.0),
        "ignore_null_values": tm.boolean(raw, "ignoreNullValues", path, p, default=True),
        "query_parameters": tm.string_map(raw, "queryParameters", path, p),
        "namespace": raw.get("namespace"),
        "custom_headers": tm.string_map(raw, "customHeaders", path, p),
        "unsafe_ssl": tm.boolean(raw, "unsafeSsl", path, p),
        "timeout_s": tm.duration_s(raw, "timeout", path, p),
        "auth_modes": tm.auth_modes(raw, path, p, has_authentication_ref),
    }
    check_target(fields["threshold"], "threshold", path, p)
    if raw.get("serverAddress") and not raw["serverAddress"].startswith(("http://", "https://")):
        p.add(join(path, "serverAddress"), raw["serverAddress"], "an http:// or https:// URL",
              "write e.g. 'http://prometheus.monitoring:9090'")
    if len(p.lines) != before:
        return None
    return PrometheusTriggerMetadata(**fields)


def with_lag_threshold(settings: PrometheusTriggerMetadata, lag_threshold: int) -> PrometheusTriggerMetadata:
    """``settings`` with ``threshold`` = ``lag_threshold`` (the query reads lag in records)."""
    return replace(settings, threshold=float(lag_threshold))
