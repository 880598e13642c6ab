"""KEDA's ``prometheus`` trigger: metadata with KEDA's rules, and a query answer -> metric, activity,
proposal (pure).

Metadata (strings): the keys, their defaults and meanings are tabled in docs/lag-sources.md,
"KEDA triggers for the same sources"; the reader is
:mod:`pytest_lagscale.config.trigger_metadata`.

The metric is ``s<i>-prometheus``; its value is the query's one number (a milli-quantity);
active when it exceeds ``activationThreshold``.

Registered in :data:`~pytest_lagscale.control.keda.registry.TRIGGERS`; the runner fetches the
answer (:mod:`pytest_lagscale.platform.value_triggers`) into ``observation.values`` and
:meth:`~.value_trigger.ValueTrigger.evaluate` parses it here.

Source: kedacore/keda pkg/scalers/prometheus_scaler.go (prometheusMetadata, parsePrometheusMetadata,
ExecutePromQuery, GetMetricsAndActivity, GetMetricSpecForScaling) v2.20.2
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_lagscale.config.trigger_metadata.prometheus import PrometheusTriggerMetadata
from pytest_lagscale.control.keda.base import TriggerError, TriggerResult
from pytest_lagscale.control.keda.value_trigger import ValueTrigger


def value_from_query_result(response: Mapping[str, Any], meta: PrometheusTriggerMetadata) -> float:
    """The number KEDA takes from a ``GET /api/v1/query`` answer.

    Raises:
        TriggerError: several series; an empty answer or a NaN/Inf value with
            ``ignoreNullValues: false``; a value that is not a number. Messages are KEDA's.

    Source: kedacore/keda pkg/scalers/prometheus_scaler.go ExecutePromQuery v2.20.2
    """
    result = (response.get("data") or {}).get("result") or []
    if not result:
        if meta.ignore_null_values:
            return 0.0
        raise TriggerError("prometheus metrics 'prometheus' target may be lost, the result is empty")
    if len(result) > 1:
        raise TriggerError(f"prometheus query {meta.query} returned multiple elements")
    value = result[0].get("value") or []
    if not value:
        if meta.ignore_null_values:
            return 0.0
        raise TriggerError("prometheus metrics 'prometheus' target may be lost, the value list is empty")
    if len(value) < 2:
        raise TriggerError(f"prometheus query {meta.query} didn't return enough values")
    number = -1.0
    if value[1] is not None:
        try:
            number = float(str(value[1]))
        except ValueError as exc:
            raise TriggerError(f"prometheus query {meta.query}: value {value[1]!r} is not a number") from exc
    if math.isnan(number) or math.isinf(number):
        if meta.ignore_null_values:
            return 0.0
        raise TriggerError(f"prometheus query returns {_go_float(number)}")
    return number


def _go_float(number: float) -> str:
    """Go's ``%f`` of a float: ``+Inf``, ``-Inf``, ``NaN`` or six decimals."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return f"{number:f}"


class PrometheusTrigger(ValueTrigger):
    """A ``type: prometheus`` trigger.

    Args:
        meta: the validated metadata.
        trigger_index: position in ``spec.triggers``.
        metric_type: ``AverageValue`` (default) or ``Value``.
    """

    metric_types: ClassVar[tuple[str, ...]] = ("AverageValue", "Value")

    def __init__(self, meta: PrometheusTriggerMetadata, *, trigger_index: int = 0, metric_type: str = "AverageValue"):
        super().__init__("prometheus", meta.threshold, meta.activation_threshold, trigger_index=trigger_index,
                         metric_type=metric_type)
        self.meta = meta

    def evaluate_response(self, response: Mapping[str, Any]) -> TriggerResult:
        """The metric and activity for one query answer (:func:`value_from_query_result`).

        Raises:
            TriggerError: as :func:`value_from_query_result`.
        """
        return self.result(value_from_query_result(response, self.meta))
