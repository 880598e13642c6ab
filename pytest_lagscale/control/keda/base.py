"""What every simulated KEDA trigger offers: a metric spec and an evaluation.

Source: kedacore/keda pkg/scalers/scaler.go Scaler (GetMetricsAndActivity,
GetMetricSpecForScaling) v2.20.2; specs/keda-hpa-semantics.md §1.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pytest_lagscale.errors import LagscaleError

METRIC_TYPES = ("AverageValue", "Value", "Utilization")


class TriggerError(LagscaleError):
    """The scaler failed this evaluation (KEDA: no metric, not active, error)."""


@dataclass(frozen=True)
class MetricTarget:
    """The HPA metric target a trigger publishes.

    Attributes:
        type: ``AverageValue`` (per replica), ``Value`` (total) or ``Utilization`` (percent).
        value: the target in the metric's unit (offsets of lag for kafka, percent for cpu).
    """

    type: str
    value: float


@dataclass(frozen=True)
class TriggerResult:
    """One evaluation of a trigger.

    Attributes:
        metric_value: the value KEDA reports to the HPA (offsets for kafka; never negative).
        active: the trigger asks for at least one replica (0 <-> 1 activation).
        total_lag: total lag in offsets after the caps (kafka only).
        total_lag_with_persistent: total lag including persistent-lag partitions, uncapped.
        partition_lag: partition id -> lag counted for scaling, for partitions in the
            latest-offset response (persistent lag counts 0 here).
        partition_lag_with_persistent: partition id -> lag including persistent lag.
        partition_count: P, the partitions summed (after partitionLimitation, present in the
            latest-offset response).
        partitions_with_lag: partitions with counted lag > 0.
        missing_partitions: considered partitions absent from the latest-offset response.
    """

    metric_value: float
    active: bool
    total_lag: int = 0
    total_lag_with_persistent: int = 0
    partition_lag: Mapping[int, int] = field(default_factory=dict)
    partition_lag_with_persistent: Mapping[int, int] = field(default_factory=dict)
    partition_count: int = 0
    partitions_with_lag: int = 0
    missing_partitions: tuple[int, ...] = ()


@runtime_checkable
class Trigger(Protocol):
    """A trigger that publishes one External metric."""

    metric_name: str
    metric_target: MetricTarget
