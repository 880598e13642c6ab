"""Trigger metadata: ``spec.triggers[i].metadata`` validated per ``type``, with KEDA's rules (pure).

:data:`TRIGGER_TYPES` maps each ``type:`` lagscale simulates to a :class:`TriggerMetadataType`:
the ``metricType`` values it allows, whether it is a Resource metric, how its ``metadata`` is
read (one module per type here, each through the one typed reader :mod:`.typed`, as every KEDA
scaler reads its metadata through pkg/scalers/scalersconfig/typed_config.go), and how
``--lag-threshold`` rewrites it. :func:`pytest_lagscale.config.triggers.collect_triggers` uses it;
``control`` builds the trigger's logic from the result
(``TRIGGERS`` in ``control/keda/registry.py``, same keys, same order).

A new trigger type is one module here (its metadata dataclass and ``collect_*``), one entry in
:data:`TRIGGER_TYPES`, and its logic in ``control/keda/`` (docs/architecture.md "Where things go").

Example:
    >>> from pytest_lagscale.config.trigger_metadata import TRIGGER_TYPES
    >>> list(TRIGGER_TYPES)
    ['kafka', 'cpu', 'external', 'prometheus', 'aws-cloudwatch', 'metrics-api']
    >>> TRIGGER_TYPES["kafka"].metric_types
    ('AverageValue', 'Value')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_lagscale.config.trigger_metadata import (
    aws_cloudwatch,
    cpu,
    external,
    kafka,
    metrics_api,
    prometheus,
)

if TYPE_CHECKING:
    from pytest_lagscale.config._problems import Problems


def _no_lag_threshold(settings: Any, lag_threshold: int) -> None:
    """None: the trigger type has no per-replica lag target."""
    return None


@dataclass(frozen=True)
class TriggerMetadataType:
    """What the config loader knows of one trigger ``type``.

    Attributes:
        collect: ``collect(metadata, path, problems, has_authentication_ref) -> settings | None``:
            validates ``metadata`` (``path`` is its key path for messages), records every
            problem in ``problems``, None when invalid.
        metric_types: the ``metricType`` values allowed; the first is the default.
        resource_metric: a Resource metric (cpu) the HPA reads from the metrics API.
        with_lag_threshold: ``(settings, records) -> settings | None``: the settings with their
            per-replica lag target set to ``records``, None for a type without one.
    """

    collect: Callable[[Any, str, Problems, bool], Any]
    metric_types: tuple[str, ...] = ("AverageValue", "Value")
    resource_metric: bool = False
    with_lag_threshold: Callable[[Any, int], Any] = _no_lag_threshold


#: Trigger types lagscale simulates, in the order error messages list them.
TRIGGER_TYPES: dict[str, TriggerMetadataType] = {
    "kafka": TriggerMetadataType(kafka.collect_kafka_trigger_metadata,
                                 with_lag_threshold=kafka.with_lag_threshold),
    "cpu": TriggerMetadataType(cpu.collect_cpu_metadata, metric_types=("Utilization",), resource_metric=True),
    "external": TriggerMetadataType(external.collect_external_metadata,
                                    with_lag_threshold=external.with_lag_threshold),
    # value-reading triggers: the runner fetches their answer (platform/value_triggers.py)
    "prometheus": TriggerMetadataType(prometheus.collect_prometheus_metadata,
                                      with_lag_threshold=prometheus.with_lag_threshold),
    "aws-cloudwatch": TriggerMetadataType(aws_cloudwatch.collect_cloudwatch_metadata,
                                          with_lag_threshold=aws_cloudwatch.with_lag_threshold),
    "metrics-api": TriggerMetadataType(metrics_api.collect_metrics_api_metadata,
                                       with_lag_threshold=metrics_api.with_lag_threshold),
}

__all__ = ["TRIGGER_TYPES", "TriggerMetadataType"]
