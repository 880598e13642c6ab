"""What KEDA's value-reading scalers share (``prometheus``, ``aws-cloudwatch``, ``metrics-api``):
one number read from a service -> a milli-quantity metric, ``active`` when the number exceeds
the activation threshold, and the HPA's External-metric proposal against the threshold.

Pure: the reading is the runner's (the lag sources, :mod:`pytest_lagscale.sources`); these
functions take the number it gave.

Source: kedacore/keda pkg/scalers/scaler.go (GetMetricTargetType, GetMetricTargetMili,
GenerateMetricInMili, quantityFromFloat64, GenerateMetricNameWithIndex) v2.20.2,
pkg/util/normalize_string.go NormalizeString v2.20.2; kubernetes/kubernetes
pkg/apis/autoscaling/validation/validation.go validateMetricTarget v1.28.0 (a Value or
AverageValue target must be positive); docs/semantics.md §2.3, §3.3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_lagscale.config.trigger_metadata.typed import milli_quantity
from pytest_lagscale.control.keda.base import MetricTarget, TriggerError, TriggerResult, external_metric_proposal

if TYPE_CHECKING:
    from pytest_lagscale.config.triggers import TriggerConfig
    from pytest_lagscale.control.observation import Observation

_NORMALIZED = str.maketrans({c: "-" for c in "/.:%()"})

__all__ = ["ValueTrigger", "metric_name", "milli_quantity"]


def metric_name(trigger_index: int, name: str) -> str:
    """``s<index>-<name>`` with ``/ . : % ( )`` as ``-`` (KEDA's NormalizeString)."""
    return f"s{trigger_index}-{name.translate(_NORMALIZED)}"


class ValueTrigger:
    """The common part of a value-reading trigger.

    Args:
        name: the metric name after ``s<index>-`` (``prometheus``, ``aws-cloudwatch``, ...).
        threshold: the target (``threshold``, ``targetMetricValue``, ``targetValue``).
        activation_threshold: the value must exceed it to be active.
        trigger_index: position in ``spec.triggers``.
        metric_type: ``AverageValue`` (default) or ``Value``.
        type_name: the trigger's ``type`` when it is not ``name`` (``metrics-api``).

    Attributes:
        type_name: the trigger's ``type`` (what the runner's reader dispatches on).
        metric_name: ``s<index>-<name>``.
        metric_target: the threshold as a milli-quantity target.
    """

    resource_metric = False
    needs_lag = False
    needs_cpu = False
    #: :meth:`evaluate` reads ``observation.values[trigger_index]`` (the runner fetches it).
    needs_value = True
    lag_threshold_records = None

    def __init__(self, name: str, threshold: float, activation_threshold: float, *, trigger_index: int = 0,
                 metric_type: str = "AverageValue", type_name: str | None = None):
        self.trigger_index = trigger_index
        self.type_name = type_name or name
        self.metric_name = metric_name(trigger_index, name)
        self.metric_target = MetricTarget(metric_type, milli_quantity(threshold))
        self.activation_threshold = activation_threshold

    @classmethod
    def from_config(cls, config: "TriggerConfig") -> "ValueTrigger":
        """Build from a validated ``spec.triggers[i]`` (its settings are the subclass's
        metadata)."""
        return cls(config.settings, trigger_index=config.index,  # type: ignore[call-arg]
                   metric_type=config.metric_type)

    def result(self, value: float) -> TriggerResult:
        """The metric KEDA reports for a reading of ``value``: its milli-quantity, and ``active``
        when ``value`` > the activation threshold (compared before rounding, as KEDA does)."""
        return TriggerResult(metric_value=milli_quantity(value), active=value > self.activation_threshold,
                             total_lag=None, total_lag_with_persistent=None)

    def evaluate_response(self, response: Any) -> TriggerResult:
        """The metric and activity for one answer of the service (the subclass's parser)."""
        raise NotImplementedError

    def evaluate(self, observation: Observation, now_s: float) -> TriggerResult:
        """The metric and activity of the answer the runner fetched just before the step.

        Args:
            observation: ``values[trigger_index]`` holds the answer
                (:class:`~pytest_lagscale.control.observation.ValueReading`).
            now_s: time of the step in seconds (unused: the service dates its own data).

        Raises:
            TriggerError: nothing was read, the call failed, or the answer is not a value
                (the subclass's messages, KEDA's).
        """
        reading = (observation.values or {}).get(self.trigger_index)
        where = f"{self.type_name} trigger {self.trigger_index}"
        if reading is None:
            raise TriggerError(f"{where}: not read")
        if reading.error is not None:
            raise TriggerError(f"{where}: {reading.error}")
        return self.evaluate_response(reading.response)

    def proposal(self, metric_value: float | None, observation: Observation, tolerance: float) -> int | None:
        """The HPA's proposal for this External metric (None without a value)."""
        return external_metric_proposal(self.metric_target, metric_value, observation, tolerance)
