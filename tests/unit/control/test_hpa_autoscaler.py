"""docs/semantics.md §3.2 and §3.4: reconcile order, shortcuts, API defaults, decision fields and errors."""

from __future__ import annotations

import pytest

from pytest_lagscale.config.behavior import DEFAULT_SCALE_DOWN, DEFAULT_SCALE_UP, ScalingPolicy
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, HpaDecision, HpaState, Recommendation
from pytest_lagscale.contract.errors import ConfigError


@pytest.mark.parametrize(("current", "desired", "replicas", "reason", "min_replicas"), [
    pytest.param(0, 5, 0, "ScalingDisabled", 1, id="3.2-current0-min1-scaling-disabled"),
    pytest.param(12, 3, 10, "TooManyReplicas", 1, id="3.2-current-above-max-goes-to-max"),
    pytest.param(1, 9, 2, "TooFewReplicas", 2, id="3.2-current-below-min-goes-to-min"),
    pytest.param(4, None, 4, "FailedComputeMetricsReplicas", 1, id="3.2-metrics-failed-no-change"),
])
def test_3_2_shortcuts_skip_normalization(current: int, desired: int | None, replicas: int, reason: str,
                                          min_replicas: int) -> None:
    autoscaler = HorizontalPodAutoscaler(min_replicas, 10, {})
    decision = autoscaler.decide_with_reason(100.0, current, desired)
    assert (decision.replicas, decision.reason, decision.recommendation) == (replicas, reason, None)
    assert autoscaler.state.recommendations == (Recommendation(current, 100.0),)


def test_3_2_shortcut_rescale_records_event_with_behavior() -> None:
    autoscaler = HorizontalPodAutoscaler(1, 10, {})
    autoscaler.decide(0.0, 12, 3)
    assert [(e.replica_change, e.at_s) for e in autoscaler.state.events.down] == [(2, 0.0)]


def test_3_2_needs_metrics() -> None:
    autoscaler = HorizontalPodAutoscaler(2, 10)
    assert [autoscaler.needs_metrics(n) for n in (0, 1, 2, 10, 11)] == [False, False, True, True, False]


def test_3_2_seed_only_on_first_sync() -> None:
    autoscaler = HorizontalPodAutoscaler(1, 10, {"scaleDown": {"stabilizationWindowSeconds": 60}})
    autoscaler.decide(0.0, 4, 4)
    autoscaler.decide(15.0, 4, 6)
    assert [r.replicas for r in autoscaler.state.recommendations or ()] == [4, 4, 6]


def test_3_4_defaults_when_behavior_present() -> None:
    autoscaler = HorizontalPodAutoscaler(1, 10, {}, downscale_stabilization_s=120)
    assert autoscaler.scale_up_rules == DEFAULT_SCALE_UP
    assert autoscaler.scale_down_rules is not None
    assert autoscaler.scale_down_rules.stabilization_window_s == 120
    assert autoscaler.scale_down_rules.policies == DEFAULT_SCALE_DOWN.policies


def test_3_4_user_policies_replace_default_list() -> None:
    autoscaler = HorizontalPodAutoscaler(1, 10, {"scaleUp": {"policies": [{"type": "Pods", "value": 1,
                                                                            "periodSeconds": 30}]}})
    assert autoscaler.scale_up_rules is not None
    assert autoscaler.scale_up_rules.policies == (ScalingPolicy("Pods", 1, 30),)
    assert autoscaler.scale_up_rules.select_policy == "Max"


def test_3_5_legacy_path_when_behavior_none() -> None:
    autoscaler = HorizontalPodAutoscaler(1, 100)
    decision = autoscaler.decide_with_reason(0.0, 3, 50)
    assert (decision.replicas, decision.reason, decision.limited) == (6, "ScaleUpLimit", True)
    assert autoscaler.scale_up_rules is None and autoscaler.state.events.up == ()


def test_decision_fields_and_last_decision() -> None:
    autoscaler = HorizontalPodAutoscaler(1, 10, {"scaleDown": {"stabilizationWindowSeconds": 60}})
    autoscaler.restore(HpaState(recommendations=(Recommendation(8, 0.0),)))
    decision = autoscaler.decide_with_reason(30.0, 8, 2)
    assert decision == HpaDecision(
        now_s=30.0, current_replicas=8, desired_replicas=2, recommendation=8, replicas=8,
        reason="DesiredWithinRange", message="the desired count is within the acceptable range",
        stabilization_reason="ScaleDownStabilized", stabilized=True, limited=False)
    assert autoscaler.last_decision is decision and not decision.rescaled
    assert autoscaler.decide(31.0, 8, 2) == 8


@pytest.mark.parametrize(("kwargs", "message"), [
    pytest.param(dict(min_replicas=-1, max_replicas=5),
                 "'min_replicas': got -1, expected an integer >= 0 in HorizontalPodAutoscaler(); pass 1 or more",
                 id="bad-min"),
    pytest.param(dict(min_replicas=3, max_replicas=2),
                 "'max_replicas': got 2, expected an integer >= max(1, min_replicas) in HorizontalPodAutoscaler(); "
                 "raise max_replicas", id="max-below-min"),
    pytest.param(dict(min_replicas=1, max_replicas=2, tolerance=1.5),
                 "'tolerance': got 1.5, expected a number in [0, 1) in HorizontalPodAutoscaler(); pass e.g. 0.1",
                 id="bad-tolerance"),
    pytest.param(dict(min_replicas=1, max_replicas=2, behavior={"scaleUp": {"selectPolicy": "Fastest"}}),
                 "'behavior.scaleUp.selectPolicy': got 'Fastest', expected one of {'Max', 'Min', 'Disabled'} in "
                 "HorizontalPodAutoscaler(behavior=...); use one of {'Max', 'Min', 'Disabled'}",
                 id="bad-behavior"),
])
def test_constructor_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        HorizontalPodAutoscaler(**kwargs)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)
