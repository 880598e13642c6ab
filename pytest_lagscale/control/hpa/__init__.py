"""The Kubernetes HPA algorithm (autoscaling/v2, v1.28 semantics), pure and clock-injected.

* :mod:`.replica_calculator`: per-metric proposals (External, Resource cpu, Pods) and the
  max-over-metrics rule;
* :mod:`.stabilization` and :mod:`.rate_limit`: normalization as free functions;
* :mod:`.autoscaler`: :class:`HorizontalPodAutoscaler`, which keeps one HPA's history.

Example:
    >>> from pytest_lagscale.control import hpa
    >>> hpa.proposal_for_average_value(usage=25, target=10, status_replicas=2)
    3
    >>> autoscaler = hpa.HorizontalPodAutoscaler(1, 10, behavior={})
    >>> autoscaler.decide(now_s=0.0, current_replicas=2, desired_replicas=3)
    3
"""

from pytest_lagscale.control.hpa.autoscaler import HorizontalPodAutoscaler, HpaDecision, HpaState
from pytest_lagscale.control.hpa.rate_limit import (
    ScaleEvent,
    ScaleEvents,
    convert_with_behavior_rate,
    replicas_change_in_period,
    scale_down_limit,
    scale_up_limit,
    store_scale_event,
)
from pytest_lagscale.control.hpa.replica_calculator import (
    MetricError,
    PodCpu,
    PodMetric,
    combine_proposals,
    proposal_for_average_value,
    proposal_for_pods_metric,
    proposal_for_utilization,
    proposal_for_value,
)
from pytest_lagscale.control.hpa.stabilization import (
    NormalizationArgs,
    Normalized,
    Recommendation,
    convert_legacy,
    stabilize_legacy,
    stabilize_with_behavior,
)

__all__ = [
    "HorizontalPodAutoscaler", "HpaDecision", "HpaState", "MetricError", "NormalizationArgs", "Normalized",
    "PodCpu", "PodMetric", "Recommendation", "ScaleEvent", "ScaleEvents", "combine_proposals", "convert_legacy",
    "convert_with_behavior_rate", "proposal_for_average_value", "proposal_for_pods_metric", "proposal_for_utilization",
    "proposal_for_value", "replicas_change_in_period", "scale_down_limit", "scale_up_limit",
    "stabilize_legacy", "stabilize_with_behavior", "store_scale_event",
]
