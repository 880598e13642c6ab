"""Per-metric replica proposals and their combination (the HPA's ReplicaCalculator).

Pure functions: metric values in, a replica count out. Units only need to be consistent between
``usage`` and ``target`` (the HPA works in milli-units; the ratios are the same).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_lagscale.contract.errors import LagscaleError

MAX_INT32 = 2**31 - 1


class MetricError(LagscaleError):
    """A metric could not produce a proposal (the HPA marks it invalid for this sync)."""


def _ceil(value: float) -> int:
    return min(MAX_INT32, math.ceil(value))


def _outside_tolerance(ratio: float, tolerance: float) -> bool:
    """v1.28 form ``|1 - ratio| > tolerance``; NaN (0/0) is never outside.

    Quirk: ratio 1.1 with tolerance 0.1 scales, because 1.0 - 1.1 is -0.10000000000000009
    in float64; test id 3.3-quirk-ratio-1.1-scales.
    """
    return abs(1.0 - ratio) > tolerance


def proposal_for_average_value(usage: float, target: float, status_replicas: int,
                               tolerance: float = 0.1) -> int:
    """Replicas for an External metric with an ``AverageValue`` target (KEDA's default).

    Args:
        usage: the metric value summed over all series (e.g. total lag in offsets).
        target: the per-replica target (e.g. lagThreshold), > 0.
        status_replicas: the scale target's ``status.replicas`` (pods that exist).
        tolerance: half-width of the no-change band around ratio 1.0.

    Returns:
        ``status_replicas`` when ``usage / (target * status_replicas)`` is within tolerance,
        else ``ceil(usage / target)`` (capped at MaxInt32).

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go
    GetExternalPerPodMetricReplicas v1.28.0; docs/semantics.md §3.3
    """
    denominator = target * status_replicas
    if denominator == 0:
        ratio = math.nan if usage == 0 else math.inf
    else:
        ratio = usage / denominator
    if _outside_tolerance(ratio, tolerance):
        return _ceil(usage / target)
    return status_replicas


def proposal_for_value(usage: float, target: float, current_replicas: int, ready_pods: int | None = None,
                       *, tolerance: float = 0.1) -> int:
    """Replicas for an External metric with a ``Value`` target.

    Args:
        usage: the metric value summed over all series.
        target: the total target, > 0.
        current_replicas: the scale target's ``spec.replicas``.
        ready_pods: Running and Ready pods of the target (default ``current_replicas``).
        tolerance: half-width of the no-change band around ratio 1.0.

    Returns:
        ``ceil(usage / target)`` when current is 0 (no tolerance); ``current_replicas`` within
        tolerance; else ``ceil(usage / target * ready_pods)``.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go
    GetExternalMetricReplicas/getUsageRatioReplicaCount v1.28.0; docs/semantics.md §3.3
    """
    ratio = usage / target
    if current_replicas == 0:
        return _ceil(ratio)
    if not _outside_tolerance(ratio, tolerance):
        return current_replicas
    ready = current_replicas if ready_pods is None else ready_pods
    return _ceil(ratio * ready)


@dataclass(frozen=True)
class PodCpu:
    """One pod of the scale target as the CPU metric sees it.

    Attributes:
        usage_millicores: CPU usage in millicores (None = no metric for this pod: "missing").
        request_millicores: the pod's CPU request in millicores (> 0).
        ready: the pod counts as ready (Running, Ready and past the CPU initialization period).
    """

    usage_millicores: int | None
    request_millicores: int
    ready: bool = True


def _utilization_ratio(usage: dict[int, int], requests: Sequence[int], target_percent: int) -> float:
    total_usage = sum(usage.values())
    total_request = sum(requests[i] for i in usage)
    if total_request == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = (total_usage * 100) // total_request
    return utilization / target_percent


def proposal_for_utilization(pods: Sequence[PodCpu], target_percent: int, current_replicas: int,
                             tolerance: float = 0.1) -> int:
    """Replicas for a Resource ``cpu`` metric with an ``Utilization`` target.

    Args:
        pods: every pod of the scale target (one entry per pod).
        target_percent: target average utilization in percent of requests (> 0).
        current_replicas: the scale target's ``spec.replicas``.
        tolerance: half-width of the no-change band around ratio 1.0.

    Raises:
        MetricError: no pods, a pod without a CPU request, or no ready pod with a metric.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go
    GetResourceReplicas v1.28.0 and metrics/utilization.go GetResourceUtilizationRatio v1.28.0;
    docs/semantics.md §4.1
    """
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    requests = [pod.request_millicores for pod in pods]
    if any(r <= 0 for r in requests):
        raise MetricError("missing request for cpu")
    missing = [i for i, pod in enumerate(pods) if pod.usage_millicores is None]
    unready = [i for i, pod in enumerate(pods) if pod.usage_millicores is not None and not pod.ready]
    usage = {i: int(pod.usage_millicores) for i, pod in enumerate(pods)
             if pod.usage_millicores is not None and pod.ready}
    if not usage:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    return _grouped_proposal(usage, (missing, unready), _Fill(
        ratio_of=lambda values: _utilization_ratio(values, requests, target_percent),
        on_scale_down=lambda i: requests[i] * max(100, target_percent) // 100), current_replicas, tolerance)


@dataclass(frozen=True)
class PodMetric:
    """One pod of the scale target as a ``type: Pods`` metric sees it.

    Attributes:
        value_milli: the pod's metric value in milli-units, as the custom metrics API serves it
            (prometheus-adapter: the per-pod sum of the series, times 1000, truncated); None = no
            value for this pod ("missing").
        pending: the pod's phase is Pending (its containers have not started): counted as unready
            whatever it reports. Running pods count with their value whether Ready or not (the
            HPA checks readiness only for cpu), terminating and failed pods are left out.
    """

    value_milli: int | None
    pending: bool = False


def _average_ratio(values: dict[int, int], target_milli: int) -> float:
    """``GetMetricUsageRatio``: the integer mean of the milli-values over the target."""
    return (sum(values.values()) // len(values)) / target_milli


def proposal_for_pods_metric(pods: Sequence[PodMetric], target_average_milli: int, current_replicas: int,
                             tolerance: float = 0.1) -> int:
    """Replicas for a ``type: Pods`` metric with an ``AverageValue`` target.

    Args:
        pods: every pod of the scale target that is not terminating (one entry per pod).
        target_average_milli: ``target.averageValue`` in milli-units (> 0).
        current_replicas: the scale target's ``spec.replicas``.
        tolerance: half-width of the no-change band around ratio 1.0.

    Returns:
        With every pod reporting and none pending: ``current_replicas`` when
        ``mean / target`` is within tolerance, else ``ceil(ratio * pods reporting)``. Otherwise
        the ratio is recomputed with missing pods at 0 (ratio > 1) or at the target (ratio < 1)
        and pending pods at 0 (ratio > 1 only); no change when that lands within tolerance or
        flips the direction, else ``ceil(new ratio * pods counted)`` unless that count itself
        goes the other way.

    Raises:
        MetricError: no pods, or no non-pending pod with a value.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go
    GetMetricReplicas/calcPlainMetricReplicas/groupPods v1.28.0 and metrics/utilization.go
    GetMetricUsageRatio v1.28.0; docs/semantics.md §3.3
    """
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    unready = [i for i, pod in enumerate(pods) if pod.pending]
    missing = [i for i, pod in enumerate(pods) if not pod.pending and pod.value_milli is None]
    usage = {i: int(pod.value_milli) for i, pod in enumerate(pods)
             if not pod.pending and pod.value_milli is not None}
    if not usage:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    return _grouped_proposal(usage, (missing, unready), _Fill(
        ratio_of=lambda values: _average_ratio(values, target_average_milli),
        on_scale_down=lambda i: target_average_milli), current_replicas, tolerance)


@dataclass(frozen=True)
class _Fill:
    """How a metric kind turns per-pod values into a ratio, and what a missing pod counts as on
    a scale-down (cpu: 100 % of its request or the target if higher; plain metrics: the target)."""

    ratio_of: Callable[[dict[int, int]], float]
    on_scale_down: Callable[[int], int]


def _grouped_proposal(usage: dict[int, int], missing_unready: tuple[list[int], list[int]], fill: _Fill,
                      current_replicas: int, tolerance: float) -> int:
    """The part of calcPlainMetricReplicas and GetResourceReplicas after grouping the pods.

    Missing pods count as the scale-down fill (ratio < 1) or 0 (ratio > 1); unready pods as 0
    on the way up only.
    """
    missing, unready = missing_unready
    ratio = fill.ratio_of(usage)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if not _outside_tolerance(ratio, tolerance):
            return current_replicas
        return _ceil(ratio * len(usage))
    filled = dict(usage)
    for i in missing:
        if ratio < 1.0:
            filled[i] = fill.on_scale_down(i)
        elif ratio > 1.0:
            filled[i] = 0
    if scale_up_with_unready:
        filled.update({i: 0 for i in unready})
    new_ratio = fill.ratio_of(filled)
    if (not _outside_tolerance(new_ratio, tolerance) or (ratio < 1.0 < new_ratio)
            or (new_ratio < 1.0 < ratio)):
        return current_replicas
    proposal = _ceil(new_ratio * len(filled))
    if (new_ratio < 1.0 and proposal > current_replicas) or (new_ratio > 1.0 and proposal < current_replicas):
        return current_replicas
    return proposal


def combine_proposals(proposals: Sequence[int | None], current_replicas: int) -> int | None:
    """The HPA's max rule over metrics, with its partial-data rule.

    Args:
        proposals: one entry per metric, None for a metric that failed.
        current_replicas: the scale target's ``spec.replicas``.

    Returns:
        The largest valid proposal; None (no change this sync) when every metric failed, or
        when some failed and the largest valid proposal is below ``current_replicas``.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    computeReplicasForMetrics v1.28.0; docs/semantics.md §3.2 step 4
    """
    valid = [p for p in proposals if p is not None]
    invalid = len(proposals) - len(valid)
    if invalid >= len(proposals):
        return None
    best = max(0, *valid)
    if invalid and best < current_replicas:
        return None
    return best
