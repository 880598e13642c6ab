"""A plain HPA's ``type: Pods`` metric (AverageValue target) as one of the controller's triggers.

Not a KEDA trigger (a ScaledObject cannot name it): :meth:`ScalingController.from_hpa
<pytest_lagscale.control.controller.ScalingController.from_hpa>` builds it from an
autoscaling/v2 HPA whose metric is ``type: Pods``, e.g. the Kafka Streams article's per-pod
records-lag (``k8s/hpa-pods-lag.yaml``). The runner reads the per-pod values (the way
prometheus-adapter serves them) into ``Observation.pod_metrics``; the HPA computes the proposal
from them (:func:`pytest_lagscale.control.hpa.proposal_for_pods_metric`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pytest_lagscale.control.hpa.replica_calculator import MetricError, proposal_for_pods_metric
from pytest_lagscale.control.keda.base import MetricTarget, TriggerError, TriggerResult

if TYPE_CHECKING:
    from pytest_lagscale.config.hpa import PodsMetric
    from pytest_lagscale.config.triggers import TriggerConfig
    from pytest_lagscale.control.observation import Observation


class PodsMetricTrigger:
    """The HPA's Pods metric: per-pod values against a per-pod ``averageValue``.

    Args:
        metric: the validated ``spec.metrics[0].pods`` (name and target in milli-units).

    Attributes:
        metric_name: the per-pod metric's name (``consumer_records_lag``).
        metric_target: ``MetricTarget('AverageValue', averageValue)`` in the metric's unit.
        needs_pod_metrics: class constant True: it reads ``observation.pod_metrics``.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    computeStatusForPodsMetric v1.28.0; docs/semantics.md §3.3
    """

    metric_types: ClassVar[tuple[str, ...]] = ("AverageValue",)
    resource_metric: ClassVar[bool] = False
    needs_lag: ClassVar[bool] = False
    needs_cpu: ClassVar[bool] = False
    needs_pod_metrics: ClassVar[bool] = True
    lag_threshold_records: ClassVar[int | None] = None

    def __init__(self, metric: PodsMetric):
        self.metric = metric
        self.metric_name = metric.metric_name
        self.metric_target = MetricTarget("AverageValue", metric.target_average)

    @classmethod
    def from_config(cls, config: TriggerConfig) -> PodsMetricTrigger:
        """Build from the HPA's metric wrapped as a trigger config (``settings``: the PodsMetric)."""
        return cls(config.settings)

    def evaluate(self, observation: Observation, now_s: float) -> TriggerResult:
        """The current average as the HPA status shows it: the integer mean of the non-pending
        pods' milli-values, in the metric's unit (None when no pod reported).

        Raises:
            TriggerError: the per-pod values could not be read this step.
        """
        if observation.pod_metrics is None:
            raise TriggerError(f"pods metric {self.metric_name!r}: no per-pod values this step")
        values = [p.value_milli for p in observation.pod_metrics if not p.pending and p.value_milli is not None]
        average = (sum(values) // len(values)) / 1000 if values else None
        return TriggerResult(metric_value=average, active=False, total_lag=None, total_lag_with_persistent=None)

    def proposal(self, metric_value: float | None, observation: Observation, tolerance: float) -> int | None:
        """The HPA's proposal from the per-pod values (None: not read, or no pod reported)."""
        if observation.pod_metrics is None:
            return None
        try:
            return proposal_for_pods_metric(observation.pod_metrics, self.metric.target_average_milli,
                                            observation.current_replicas, tolerance)
        except MetricError:
            return None


#: Metric sources of a plain HPA that are not KEDA triggers, by the controller's trigger type.
HPA_METRICS = {"pods": PodsMetricTrigger}
