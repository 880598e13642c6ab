"""docs/semantics.md §3.2-§3.3 and §4.1: per-metric proposals, the max rule, and whole-sync vectors."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_lagscale.control import hpa
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, HpaState, PodCpu

from ._helpers import NOW_S, behavior, rules


@dataclass(frozen=True)
class ExternalCase:
    # arguments
    target_type: str
    target: float
    usage: float
    # world state
    current: int
    ready: int | None
    # spec
    min_replicas: int
    max_replicas: int
    # expected
    proposal: int
    replicas: int


EXTERNAL = [
    pytest.param(ExternalCase("AverageValue", 2222, 8600, current=3, ready=None, min_replicas=2, max_replicas=6,
                              proposal=4, replicas=4), id="4.1-ScaleUpPerPodCMExternal"),
    pytest.param(ExternalCase("AverageValue", 3000, 8600, current=5, ready=None, min_replicas=2, max_replicas=6,
                              proposal=3, replicas=3), id="4.1-ScaleDownPerPodCMExternal"),
    pytest.param(ExternalCase("AverageValue", 2200, 8600, current=4, ready=None, min_replicas=2, max_replicas=6,
                              proposal=4, replicas=4), id="4.1-TolerancePerPodCMExternal-ratio0.977"),
    pytest.param(ExternalCase("Value", 6666, 8600, current=3, ready=3, min_replicas=2, max_replicas=6,
                              proposal=4, replicas=4), id="4.1-ScaleUpCMExternal"),
    pytest.param(ExternalCase("Value", 14400, 8600, current=5, ready=5, min_replicas=2, max_replicas=6,
                              proposal=3, replicas=3), id="4.1-ScaleDownCMExternal"),
    pytest.param(ExternalCase("Value", 14400, 0, current=5, ready=5, min_replicas=0, max_replicas=6,
                              proposal=0, replicas=0), id="4.1-ScaleDownToZeroCMExternal"),
]


def _proposal(case: ExternalCase) -> int:
    if case.target_type == "AverageValue":
        return hpa.proposal_for_average_value(case.usage, case.target, case.current)
    return hpa.proposal_for_value(case.usage, case.target, case.current, case.ready)


@pytest.mark.parametrize("case", EXTERNAL)
def test_external_metric_vectors(case: ExternalCase) -> None:
    assert _proposal(case) == case.proposal
    autoscaler = HorizontalPodAutoscaler(case.min_replicas, case.max_replicas)
    autoscaler.restore(HpaState(recommendations=()))
    assert autoscaler.decide(NOW_S, case.current, case.proposal) == case.replicas


def _cpu_pods(count: int, percent_used: int) -> tuple[PodCpu, ...]:
    return tuple(PodCpu(usage_millicores=10 * percent_used, request_millicores=1000) for _ in range(count))


def test_4_1_scale_up_one_metric_empty() -> None:
    """CPU 30 % target at 40 % used with a failing External metric still scales up."""
    cpu = hpa.proposal_for_utilization(_cpu_pods(3, 40), target_percent=30, current_replicas=3)
    desired = hpa.combine_proposals([cpu, None], current_replicas=3)
    autoscaler = HorizontalPodAutoscaler(2, 6)
    autoscaler.restore(HpaState(recommendations=()))
    assert (cpu, desired, autoscaler.decide(NOW_S, 3, desired)) == (4, 4, 4)


def test_4_1_no_scale_down_one_metric_empty() -> None:
    """CPU 50 % target at 28 % used with a failing External metric: no scale-down on partial data."""
    cpu = hpa.proposal_for_utilization(_cpu_pods(5, 28), target_percent=50, current_replicas=5)
    desired = hpa.combine_proposals([cpu, None], current_replicas=5)
    decision = HorizontalPodAutoscaler(2, 6).decide_with_reason(NOW_S, 5, desired)
    assert (cpu, desired, decision.replicas, decision.reason) == (3, None, 5, "FailedComputeMetricsReplicas")


def test_4_1_scale_down_stabilize_initial_size() -> None:
    """No behavior, no history: the seeded {current} entry holds the first scale-down."""
    cpu = hpa.proposal_for_utilization(_cpu_pods(5, 20), target_percent=50, current_replicas=5)
    decision = HorizontalPodAutoscaler(2, 6).decide_with_reason(NOW_S, 5, cpu)
    assert (cpu, decision.replicas, decision.stabilization_reason) == (2, 5, "ScaleDownStabilized")


@pytest.mark.parametrize(("max_replicas", "replicas", "reason"), [
    pytest.param(100, 24, "ScaleUpLimit", id="4.1-UpscaleCap"),
    pytest.param(20, 20, "TooManyReplicas", id="4.1-UpscaleCapGreaterThanMaxReplicas"),
])
def test_4_1_upscale_cap(max_replicas: int, replicas: int, reason: str) -> None:
    autoscaler = HorizontalPodAutoscaler(1, max_replicas, behavior(up=rules("Percent 700/60")))
    decision = autoscaler.decide_with_reason(NOW_S, 3, 60)
    assert (decision.replicas, decision.reason, decision.limited) == (replicas, reason, True)


@pytest.mark.parametrize(("usage", "target", "status", "expected"), [
    pytest.param(25, 10, 2, 3, id="3.3-kafka-lag25-threshold10-pods2"),
    pytest.param(11, 10, 1, 2, id="3.3-quirk-ratio-1.1-scales"),
    pytest.param(10.9, 10, 1, 1, id="3.3-ratio-1.09-within-tolerance"),
    pytest.param(0, 10, 0, 0, id="3.3-zero-usage-zero-status-stays"),
    pytest.param(35, 10, 0, 4, id="3.3-zero-status-scales-by-ceil"),
    pytest.param(1e15, 1, 1, 2**31 - 1, id="3.3-capped-at-maxint32"),
])
def test_average_value_proposal(usage: float, target: float, status: int, expected: int) -> None:
    assert hpa.proposal_for_average_value(usage, target, status) == expected


@pytest.mark.parametrize(("usage", "target", "current", "ready", "expected"), [
    pytest.param(25, 10, 0, 0, 3, id="3.3-value-current0-ceil-ratio-no-tolerance"),
    pytest.param(10.5, 10, 0, 0, 2, id="3.3-value-current0-tolerance-ignored"),
    pytest.param(10.5, 10, 4, 4, 4, id="3.3-value-within-tolerance-keeps-current"),
    pytest.param(20, 10, 4, 2, 4, id="3.3-value-uses-ready-pods"),
])
def test_value_proposal(usage: float, target: float, current: int, ready: int, expected: int) -> None:
    assert hpa.proposal_for_value(usage, target, current, ready) == expected


@pytest.mark.parametrize(("pods", "expected"), [
    pytest.param((PodCpu(900, 1000), PodCpu(900, 1000), PodCpu(None, 1000)), 4,
                 id="4.1-cpu-missing-pod-counts-0-on-scale-up"),
    pytest.param((PodCpu(100, 1000), PodCpu(100, 1000), PodCpu(100, 1000), PodCpu(None, 1000)), 3,
                 id="4.1-cpu-missing-pod-counts-100pct-on-scale-down"),
    pytest.param((PodCpu(200, 1000), PodCpu(None, 1000)), 2, id="4.1-cpu-missing-pod-flips-direction-keeps-current"),
    pytest.param((PodCpu(900, 1000), PodCpu(900, 1000), PodCpu(900, 1000, ready=False)), 4,
                 id="4.1-cpu-unready-pod-counts-0-on-scale-up"),
    pytest.param((PodCpu(200, 1000), PodCpu(200, 1000), PodCpu(200, 1000), PodCpu(200, 1000, ready=False)), 2,
                 id="4.1-cpu-unready-pod-ignored-on-scale-down"),
])
def test_cpu_utilization_proposal_with_missing_and_unready(pods: tuple[PodCpu, ...], expected: int) -> None:
    current = len(pods)
    assert hpa.proposal_for_utilization(pods, target_percent=50, current_replicas=current) == expected


@pytest.mark.parametrize(("pods", "message"), [
    pytest.param((), "no pods returned by selector while calculating replica count", id="4.1-cpu-no-pods"),
    pytest.param((PodCpu(100, 0),), "missing request for cpu", id="4.1-cpu-no-request"),
    pytest.param((PodCpu(None, 100),), "did not receive metrics for targeted pods (pods might be unready)",
                 id="4.1-cpu-no-metrics"),
])
def test_cpu_utilization_errors(pods: tuple[PodCpu, ...], message: str) -> None:
    with pytest.raises(hpa.MetricError) as info:
        hpa.proposal_for_utilization(pods, target_percent=50, current_replicas=1)
    assert str(info.value) == message


@pytest.mark.parametrize(("proposals", "current", "expected"), [
    pytest.param([3, 7], 5, 7, id="3.2-max-over-metrics"),
    pytest.param([None, None], 5, None, id="3.2-all-invalid-no-change"),
    pytest.param([], 5, None, id="3.2-no-metrics-no-change"),
    pytest.param([4, None], 5, None, id="3.2-partial-data-never-scales-down"),
    pytest.param([5, None], 5, 5, id="3.2-partial-data-equal-current-proceeds"),
    pytest.param([8, None], 5, 8, id="3.2-partial-data-scales-up"),
])
def test_combine_proposals(proposals: list[int | None], current: int, expected: int | None) -> None:
    assert hpa.combine_proposals(proposals, current) == expected
