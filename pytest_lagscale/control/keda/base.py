"""What every simulated KEDA trigger offers: a metric spec, an evaluation and the HPA's proposal.

A trigger type's logic is one module here (``kafka_lag.py``, ``cpu.py``) and one line in
:data:`pytest_lagscale.control.keda.registry.TRIGGERS`; its ``metadata`` is read in
:mod:`pytest_lagscale.config.trigger_metadata`. The class is the :class:`TriggerType` (it builds
itself from a validated :class:`~pytest_lagscale.config.triggers.TriggerConfig`); its instances
are :class:`Trigger`\\ s.

Source: kedacore/keda pkg/scalers/scaler.go Scaler (GetMetricsAndActivity,
GetMetricSpecForScaling) v2.20.2; docs/semantics.md §1.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pytest_lagscale.control.hpa.replica_calculator import proposal_for_average_value, proposal_for_value
from pytest_lagscale.contract.errors import LagscaleError

if TYPE_CHECKING:
    from pytest_lagscale.config.triggers import TriggerConfig
    from pytest_lagscale.control.observation import Observation

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
        metric_value: the value KEDA reports to the HPA (offsets for kafka; never negative;
            percent for cpu, None when no pod has a CPU metric).
        active: the trigger asks for at least one replica (0 <-> 1 activation).
        total_lag: total lag in offsets after the caps (kafka; None for triggers without lag).
        total_lag_with_persistent: total lag including persistent-lag partitions, uncapped
            (None for triggers without lag).
        partition_lag: partition id -> lag counted for scaling, for partitions in the
            latest-offset response (persistent lag counts 0 here).
        partition_lag_with_persistent: partition id -> lag including persistent lag.
        partition_count: P, the partitions summed (after partitionLimitation, present in the
            latest-offset response).
        partitions_with_lag: partitions with counted lag > 0.
        missing_partitions: considered partitions absent from the latest-offset response.
    """

    metric_value: float | None
    active: bool
    total_lag: int | None = 0
    total_lag_with_persistent: int | None = 0
    partition_lag: Mapping[int, int] = field(default_factory=dict)
    partition_lag_with_persistent: Mapping[int, int] = field(default_factory=dict)
    partition_count: int = 0
    partitions_with_lag: int = 0
    missing_partitions: tuple[int, ...] = ()


@runtime_checkable
class Trigger(Protocol):
    """A trigger that publishes one metric to the HPA.

    Attributes:
        metric_name: the metric's name (``s0-kafka-events``, ``cpu``).
        metric_target: its HPA target.
        resource_metric: a Resource metric (cpu, memory) that the HPA reads from the metrics
            API: KEDA's polling loop gets no value for it, it has no fallback and a
            ScaledObject with only such triggers is always active.
        needs_lag: :meth:`evaluate` reads ``observation.offsets``.
        needs_cpu: :meth:`evaluate` or :meth:`proposal` read ``observation.cpu_pods``.
        lag_threshold_records: the per-replica lag target in records, None for a trigger
            without one.
    """

    metric_name: str
    metric_target: MetricTarget
    resource_metric: bool
    needs_lag: bool
    needs_cpu: bool
    lag_threshold_records: int | None

    def evaluate(self, observation: Observation, now_s: float) -> TriggerResult:
        """The metric value and activity for one KEDA poll or HPA metric read.

        Args:
            observation: what the runner measured just before.
            now_s: time of the step in seconds (runner's monotonic clock).

        Raises:
            TriggerError: the scaler failed (KEDA counts it toward the fallback).
        """

    def proposal(self, metric_value: float | None, observation: Observation, tolerance: float) -> int | None:
        """The HPA's replica proposal for this metric (None: the metric is invalid this sync).

        Args:
            metric_value: the value the HPA read (live, cached or the fallback's stand-in).
            observation: replica counts (and pods) at the sync.
            tolerance: half-width of the HPA's no-change band around ratio 1.0.
        """


class TriggerType(Protocol):
    """A trigger class as the registry holds it: it builds itself from a validated config.

    Attributes:
        metric_types: the ``metricType`` values allowed; the first is the default.
        resource_metric: see :class:`Trigger`.
    """

    metric_types: tuple[str, ...]
    resource_metric: bool

    def from_config(self, config: TriggerConfig) -> Trigger:
        """Build the trigger from a validated config (``config.settings`` came from the type's
        :data:`~pytest_lagscale.config.trigger_metadata.TRIGGER_TYPES` entry).

        Raises:
            ConfigError: a field invalid for this trigger.
        """


def external_metric_proposal(target: MetricTarget, metric_value: float | None, observation: Observation,
                             tolerance: float) -> int | None:
    """The HPA's proposal for an External metric (what KEDA publishes for non-resource triggers).

    Args:
        target: ``Value`` (total) or ``AverageValue`` (per replica) target.
        metric_value: the value read, None when the read failed (then None).
        observation: ``current_replicas`` and ready pods (Value), ``status.replicas`` (AverageValue).
        tolerance: half-width of the no-change band around ratio 1.0.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go
    GetExternalMetricReplicas/GetExternalPerPodMetricReplicas v1.28.0; docs/semantics.md §3.3
    """
    if metric_value is None:
        return None
    if target.type == "Value":
        return proposal_for_value(metric_value, target.value, observation.current_replicas, observation.ready,
                                  tolerance=tolerance)
    return proposal_for_average_value(metric_value, target.value, observation.status, tolerance)
