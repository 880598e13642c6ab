"""The ``metrics-api`` trigger's ``metadata``, read with KEDA's rules (pure).

Keys, defaults and meaning: ``control/keda/metrics_api.py`` (which reads the
number out of the endpoint's answer); docs/lag-sources.md "KEDA triggers for the same sources".

Source: kedacore/keda pkg/scalers/metrics_api_scaler.go (metricsAPIScalerMetadata,
parseMetricsAPIMetadata) v2.20.2
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pytest_lagscale.config._problems import MISSING, Problems, join
from pytest_lagscale.config.trigger_metadata import typed as tm
from pytest_lagscale.config.trigger_metadata.typed import check_target

KNOWN_KEYS = ("url", "valueLocation", "targetValue", "activationTargetValue", "format",
              "aggregateFromKubeServiceEndpoints", "aggregationType", "unsafeSsl", "timeout", *tm.AUTH_METADATA_KEYS)
FORMATS = ("json", "prometheus", "xml", "yaml")
AGGREGATION_TYPES = ("average", "sum", "max", "min")
@dataclass(frozen=True)
class MetricsApiTriggerMetadata:
    """Validated ``metrics-api`` trigger metadata with KEDA's defaults.

    Attributes:
        url: the endpoint.
        value_location: the GJSON path (json) or selector (prometheus) of the number.
        target_value: the metric target (not 0).
        activation_target_value: the value must exceed it to be active.
        format: json, prometheus, xml or yaml.
        aggregation_type: average, sum, max or min.
        unsafe_ssl: skip TLS verification.
        timeout_s: HTTP timeout in seconds, None = KEDA's global one.
        auth_modes: the ``authMode`` named.
    """

    url: str
    value_location: str
    target_value: float
    activation_target_value: float = 0.0
    format: str = "json"
    aggregation_type: str = "average"
    unsafe_ssl: bool = False
    timeout_s: float | None = None
    auth_modes: tuple[str, ...] = ()


def parse_metrics_api_metadata(metadata: Any, *, path: str = "", source: str = "trigger metadata",
                               has_authentication_ref: bool = False) -> MetricsApiTriggerMetadata:
    """Parse ``metadata`` with KEDA's rules.

    Raises:
        ConfigError: every invalid field, one line each.
    """
    return tm.parse(collect_metrics_api_metadata, metadata, path=path, source=source,
                    has_authentication_ref=has_authentication_ref)


def collect_metrics_api_metadata(metadata: Any, path: str, p: Problems,
                                 has_authentication_ref: bool = False) -> MetricsApiTriggerMetadata | None:
    """Like :func:`parse_metrics_api_metadata`, recording problems in ``p``; None when invalid."""
    before = len(p.lines)
    raw = tm.strings(metadata, path, p, KNOWN_KEYS)
    if raw is None:
        return None
    fields: dict[str, Any] = {
        "url": tm.required(raw, "url", path, p, "the metrics endpoint's URL", "http://consumer-health:8080/health"),
        "value_location": tm.required(raw, "valueLocation", path, p, "where the number is in the answer",
                                      "lag.total"),
    }
    before_target = len(p.lines)
    fields["target_value"] = tm.float64(raw, "targetValue", path, p, default=0.0)
    if len(p.lines) == before_target and fields["target_value"] == 0:
        p.add(join(path, "targetValue"), raw.get("targetValue", MISSING), "a number other than 0 (KEDA: 'no "
              "targetValue given in metadata')", "add targetValue: '10'")
    elif len(p.lines) == before_target:
        check_target(fields["target_value"], "targetValue", path, p)
    fields.update({
        "activation_target_value": tm.float64(raw, "activationTargetValue", path, p, default=0.0),
        "format": tm.enum(raw, "format", path, p, FORMATS, "json"),
        "aggregation_type": tm.enum(raw, "aggregationType", path, p, AGGREGATION_TYPES, "average"),
        "unsafe_ssl": tm.boolean(raw, "unsafeSsl", path, p),
        "timeout_s": tm.duration_s(raw, "timeout", path, p),
        "auth_modes": tm.auth_modes(raw, path, p, has_authentication_ref),
    })
    if tm.boolean(raw, "aggregateFromKubeServiceEndpoints", path, p):
        p.add(join(path, "aggregateFromKubeServiceEndpoints"), raw["aggregateFromKubeServiceEndpoints"],
              "false (lagscale has no Kubernetes Service endpoints to ask)",
              "remove it and point url at the one endpoint to read")
    if len(p.lines) != before:
        return None
    return MetricsApiTriggerMetadata(**fields)


def with_lag_threshold(settings: MetricsApiTriggerMetadata, lag_threshold: int) -> MetricsApiTriggerMetadata:
    """``settings`` with ``targetValue`` = ``lag_threshold`` (the value is lag in records)."""
    return replace(settings, target_value=float(lag_threshold))
