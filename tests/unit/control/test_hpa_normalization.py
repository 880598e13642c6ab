"""docs/semantics.md §3.5-§3.6 and §4.2-§4.4: legacy clamp, legacy and behavior stabilization."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_lagscale.config.behavior import ScalingRules
from pytest_lagscale.control import hpa
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, HpaState, NormalizationArgs, Recommendation

from ._helpers import NOW_S, history

MINUTE = 60.0


@pytest.mark.parametrize(("current", "desired", "min_replicas", "max_replicas", "replicas", "reason"), [
    pytest.param(5, 7, 3, 8, 7, "DesiredWithinRange", id="4.2-cur5-desired7-within-range"),
    pytest.param(3, 1, 2, 8, 2, "TooFewReplicas", id="4.2-cur3-desired1-too-few"),
    pytest.param(1, 0, 0, 10, 0, "DesiredWithinRange", id="4.2-cur1-desired0-min0-within-range"),
    pytest.param(20, 1000, 1, 10, 10, "TooManyReplicas", id="4.2-cur20-desired1000-too-many"),
    pytest.param(3, 1000, 1, 2000, 6, "ScaleUpLimit", id="4.2-cur3-desired1000-scale-up-limit-2x"),
    pytest.param(1, 1000, 1, 2000, 4, "ScaleUpLimit", id="4.2-cur1-scale-up-limit-minimum-4"),
])
def test_4_2_legacy_clamp(current: int, desired: int, min_replicas: int, max_replicas: int, replicas: int,
                          reason: str) -> None:
    result = hpa.convert_legacy(current, desired, min_replicas, max_replicas)
    assert (result.replicas, result.reason) == (replicas, reason)


@dataclass(frozen=True)
class LegacyCase:
    history: tuple[Recommendation, ...]
    desired: int
    result: int
    length_after: int


LEGACY = [
    pytest.param(LegacyCase(history(), 5, 5, 1), id="4.3-empty-history"),
    pytest.param(LegacyCase(history((4, 2 * MINUTE), (5, 1 * MINUTE)), 3, 5, 3), id="4.3-recent-higher-holds"),
    pytest.param(LegacyCase(history((1, 2 * MINUTE), (2, 1 * MINUTE)), 3, 3, 3), id="4.3-recent-lower-ignored"),
    pytest.param(LegacyCase(history((10, 10 * MINUTE), (9, 9 * MINUTE)), 3, 3, 2), id="4.3-old-entries-overwritten"),
    pytest.param(LegacyCase(history((10, 10 * MINUTE), (4, 1 * MINUTE), (5, 2 * MINUTE), (9, 9 * MINUTE)), 3, 5, 4),
                 id="4.3-mixed-last-old-overwritten"),
]


@pytest.mark.parametrize("case", LEGACY)
def test_4_3_legacy_stabilization(case: LegacyCase) -> None:
    result, after = hpa.stabilize_legacy(case.history, case.desired, NOW_S, 300.0)
    assert (result, len(after)) == (case.result, case.length_after)
    assert Recommendation(case.desired, NOW_S) in after


@pytest.mark.parametrize("case", LEGACY)
def test_4_3_legacy_stabilization_through_autoscaler(case: LegacyCase) -> None:
    autoscaler = HorizontalPodAutoscaler(1, 1000)
    autoscaler.restore(HpaState(recommendations=case.history))
    decision = autoscaler.decide_with_reason(NOW_S, 5, case.desired)
    assert decision.recommendation == case.result
    assert len(autoscaler.state.recommendations or ()) == case.length_after


def test_3_5_legacy_window_edge_counts() -> None:
    """Legacy keeps entries at exactly now - window (not Before the cutoff)."""
    result, after = hpa.stabilize_legacy(history((9, 300.0)), 3, NOW_S, 300.0)
    assert (result, len(after)) == (9, 2)


@dataclass(frozen=True)
class BehaviorCase:
    # world state
    history: tuple[Recommendation, ...]
    current: int
    # arguments
    desired: int
    # spec
    up_window: int
    down_window: int
    # expected
    result: int
    history_after: tuple[int, ...] | None


BEHAVIOR = [
    pytest.param(BehaviorCase(history(), 100, 5, 0, 0, 5, (5,)), id="4.4-empty-history-windows-0"),
    pytest.param(BehaviorCase(history((4, 120), (5, 60)), 100, 3, 0, 180, 5, (4, 5, 3)),
                 id="4.4-down-window-180-holds-max"),
    pytest.param(BehaviorCase(history((4, 120), (5, 60)), 1, 7, 300, 0, 4, (4, 5, 7)),
                 id="4.4-up-window-300-holds-min"),
    pytest.param(BehaviorCase(history((1, 120), (2, 60)), 100, 3, 300, 0, 3, (1, 2, 3)),
                 id="4.4-up-window-scale-down-passes"),
    pytest.param(BehaviorCase(history((4, 120), (5, 60)), 1, 3, 0, 300, 3, (4, 5, 3)),
                 id="4.4-down-window-scale-up-passes"),
    pytest.param(BehaviorCase(history((10, 600), (9, 540)), 100, 3, 0, 0, 3, (10, 3)),
                 id="4.4-windows-0-overwrite-last-old"),
    pytest.param(BehaviorCase(history((10, 600), (4, 60), (5, 120), (9, 540)), 100, 3, 0, 180, 5, (10, 4, 5, 3)),
                 id="4.4-mixed-down-window-180"),
    pytest.param(BehaviorCase(history((10, 6000), (6, 60), (5, 120), (9, 180)), 1, 100, 300, 0, 5, (100, 6, 5, 9)),
                 id="4.4-up-window-min-of-recent"),
    pytest.param(BehaviorCase(history((2, 6000), (3, 180)), 2, 1, 300, 300, 2, None),
                 id="4.4-both-windows-hold-current-down"),
    pytest.param(BehaviorCase(history((2, 6000), (1, 180)), 2, 3, 300, 300, 2, None),
                 id="4.4-both-windows-hold-current-up"),
]


def _args(case: BehaviorCase) -> NormalizationArgs:
    up = ScalingRules(case.up_window, "Max", ())
    down = ScalingRules(case.down_window, "Max", ())
    return NormalizationArgs(case.current, case.desired, 1, 1000, up, down)


@pytest.mark.parametrize("case", BEHAVIOR)
def test_4_4_behavior_stabilization(case: BehaviorCase) -> None:
    result, after = hpa.stabilize_with_behavior(case.history, _args(case), NOW_S)
    assert result.replicas == case.result
    if case.history_after is not None:
        assert tuple(r.replicas for r in after) == case.history_after


@pytest.mark.parametrize(("current", "desired", "reason"), [
    pytest.param(5, 9, "ScaleUpStabilized", id="3.6-reason-up-when-desired-ge-current"),
    pytest.param(5, 5, "ScaleUpStabilized", id="3.6-reason-up-when-desired-equal"),
    pytest.param(5, 2, "ScaleDownStabilized", id="3.6-reason-down-when-desired-lt-current"),
])
def test_3_6_stabilization_reason(current: int, desired: int, reason: str) -> None:
    args = NormalizationArgs(current, desired, 1, 10, ScalingRules(0, "Max", ()), ScalingRules(0, "Max", ()))
    result, _ = hpa.stabilize_with_behavior((), args, NOW_S)
    assert result.reason == reason


@pytest.mark.parametrize(("age_s", "result", "after"), [
    pytest.param(60.0, 3, (9, 3), id="4.4-quirk-edge-entry-not-counted"),
    pytest.param(59.5, 9, (9, 3), id="4.4-entry-inside-window-counts"),
    pytest.param(60.5, 3, (3,), id="4.4-entry-older-than-both-windows-overwritten"),
])
def test_4_4_window_edge(age_s: float, result: int, after: tuple[int, ...]) -> None:
    """An entry exactly at now - window neither counts (not After) nor is outdated (not Before)."""
    args = NormalizationArgs(10, 3, 1, 100, ScalingRules(0, "Max", ()), ScalingRules(60, "Max", ()))
    normalized, history_after = hpa.stabilize_with_behavior(history((9, age_s)), args, NOW_S)
    assert normalized.replicas == result
    assert tuple(r.replicas for r in history_after) == after


def test_3_6_seeded_entry_delays_first_scale_down() -> None:
    """The first sync seeds {current}; a scale-down waits a full down window."""
    autoscaler = HorizontalPodAutoscaler(1, 10, {"scaleDown": {"stabilizationWindowSeconds": 60}})
    assert autoscaler.decide(0.0, 8, 2) == 8
    assert autoscaler.decide(59.0, 8, 2) == 8
    assert autoscaler.decide(61.0, 8, 2) == 2
