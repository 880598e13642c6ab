"""docs/semantics.md §3.7 and §4.5: behavior rate limits over the scale-event history."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pytest_lagscale.config.behavior import Behavior, ScalingPolicy, ScalingRules
from pytest_lagscale.control import hpa
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, HpaState, NormalizationArgs, ScaleEvent, ScaleEvents

from ._helpers import NOW_S, behavior, rules, spread_events


@dataclass(frozen=True)
class RateCase:
    # arguments
    current: int
    desired: int
    # spec
    min_replicas: int
    max_replicas: int
    up: dict | None = None
    down: dict | None = None
    # world state: replica changes spread over 120 s (§4.5)
    up_events: list[int] = field(default_factory=list)
    down_events: list[int] = field(default_factory=list)
    # expected
    replicas: int = 0
    reason: str = ""


RATES = [
    pytest.param(RateCase(10, 50, 1, 1000, replicas=20, reason="ScaleUpLimit"), id="4.5-up-defaults"),
    pytest.param(RateCase(10, 500, 1, 1000, up=rules("Pods 100/60", "Percent 100/60"),
                          replicas=110, reason="ScaleUpLimit"), id="4.5-up-pods100-percent100"),
    pytest.param(RateCase(10, 500, 1, 1000, up=rules("Pods 2/60", "Percent 100/60"),
                          replicas=20, reason="ScaleUpLimit"), id="4.5-up-pods2-percent100"),
    pytest.param(RateCase(10, 50, 1, 1000, up=rules("Pods 30/60"), replicas=40, reason="ScaleUpLimit"),
                 id="4.5-up-pods30"),
    pytest.param(RateCase(10, 50, 1, 1000, up=rules("Percent 200/60"), replicas=30, reason="ScaleUpLimit"),
                 id="4.5-up-percent200"),
    pytest.param(RateCase(3, 1000, 1, 2000, up=rules("Percent 1/60"), replicas=4, reason="ScaleUpLimit"),
                 id="4.5-up-percent1-rounds-up"),
    pytest.param(RateCase(100, 1000, 100, 150, replicas=150, reason="TooManyReplicas"),
                 id="4.5-up-defaults-too-many"),
    pytest.param(RateCase(100, 2, 1, 1000, down=rules("Pods 20/60", "Percent 1/60"),
                          replicas=80, reason="ScaleDownLimit"), id="4.5-down-pods20-percent1"),
    pytest.param(RateCase(100, 2, 1, 1000, down=rules("Pods 2/60", "Percent 1/60"),
                          replicas=98, reason="ScaleDownLimit"), id="4.5-down-pods2-percent1"),
    pytest.param(RateCase(10, 2, 5, 1000, down=rules("Percent 100/60"), replicas=5, reason="TooFewReplicas"),
                 id="4.5-down-percent100-too-few"),
    pytest.param(RateCase(10, 2, 1, 1000, down=rules("Pods 5/60"), replicas=5, reason="ScaleDownLimit"),
                 id="4.5-down-pods5"),
    pytest.param(RateCase(100, 500, 1, 1000, up=rules("Pods 150/120"), up_events=[1, 5, 9],
                          replicas=235, reason="ScaleUpLimit"), id="4.5-up-pods150-with-up-events"),
    pytest.param(RateCase(100, 500, 1, 1000, up=rules("Percent 200/120"), up_events=[1, 5, 9],
                          replicas=255, reason="ScaleUpLimit"), id="4.5-up-percent200-with-up-events"),
    pytest.param(RateCase(100, 500, 1, 1000, up=rules("Pods 5/120"), up_events=[1, 5, 9],
                          replicas=100, reason="ScaleUpLimit"), id="4.5-up-pods5-exhausted-holds-current"),
    pytest.param(RateCase(6, 24, 1, 1000, up=rules("Percent 300/300"), up_events=[4], down_events=[2],
                          replicas=16, reason="ScaleUpLimit"), id="4.5-up-percent300-with-up-and-down-events"),
    pytest.param(RateCase(100, 2, 1, 1000, down=rules("Pods 5/120"), down_events=[1, 5, 9],
                          replicas=100, reason="ScaleDownLimit"), id="4.5-down-pods5-exhausted-holds-current"),
    pytest.param(RateCase(100, 0, 1, 1000, down=rules("Percent 50/120"), down_events=[2, 4, 6],
                          replicas=56, reason="ScaleDownLimit"), id="4.5-down-percent50-with-down-events"),
    pytest.param(RateCase(10, 1, 1, 1000, down=rules("Percent 50/180"), up_events=[2], down_events=[4],
                          replicas=6, reason="ScaleDownLimit"), id="4.5-down-percent50-with-up-and-down-events"),
    pytest.param(RateCase(100, 0, 1, 1000, down=rules("Percent 10/120"), down_events=[10, 10, 10],
                          replicas=100, reason="ScaleDownLimit"), id="4.5-down-percent10-exhausted"),
    pytest.param(RateCase(10, 5, 1, 1000, down=rules("Percent 1000/120"), down_events=[10, 10, 10],
                          replicas=5, reason="DesiredWithinRange"), id="4.5-down-percent1000-negative-limit"),
]


def _parsed(case: RateCase) -> Behavior:
    return behavior(up=case.up, down=case.down)


def _events(case: RateCase) -> ScaleEvents:
    return ScaleEvents(spread_events(case.up_events), spread_events(case.down_events))


@pytest.mark.parametrize("case", RATES)
def test_4_5_rate_limits(case: RateCase) -> None:
    parsed = _parsed(case)
    down = ScalingRules(0, parsed.scale_down.select_policy, parsed.scale_down.policies)
    args = NormalizationArgs(case.current, case.desired, case.min_replicas, case.max_replicas, parsed.scale_up, down)
    result = hpa.convert_with_behavior_rate(args, _events(case), NOW_S)
    assert (result.replicas, result.reason) == (case.replicas, case.reason)


@pytest.mark.parametrize("case", RATES)
def test_4_5_rate_limits_through_autoscaler(case: RateCase) -> None:
    """Same vectors through decide() with both windows 0, so stabilization passes desired through."""
    up = dict(case.up or {}, stabilizationWindowSeconds=0)
    down = dict(case.down or {}, stabilizationWindowSeconds=0)
    autoscaler = HorizontalPodAutoscaler(case.min_replicas, case.max_replicas, {"scaleUp": up, "scaleDown": down})
    autoscaler.restore(HpaState(recommendations=(), events=_events(case)))
    decision = autoscaler.decide_with_reason(NOW_S, case.current, case.desired)
    assert (decision.replicas, decision.reason) == (case.replicas, case.reason)


@pytest.mark.parametrize(("limit", "current", "expected"), [
    pytest.param(hpa.scale_up_limit, 1, 2, id="4.5-direct-up-select-min-pods2-percent50"),
    pytest.param(hpa.scale_down_limit, 5, 3, id="4.5-direct-down-select-min-pods2-percent50"),
])
def test_4_5_direct_limit_functions(limit, current: int, expected: int) -> None:
    policies = (ScalingPolicy("Pods", 2, 60), ScalingPolicy("Percent", 50, 60))
    assert limit(current, ScaleEvents(), ScalingRules(0, "Min", policies), NOW_S) == expected


@pytest.mark.parametrize(("limit", "current"), [
    pytest.param(hpa.scale_up_limit, 7, id="3.7-up-select-disabled-returns-current"),
    pytest.param(hpa.scale_down_limit, 7, id="3.7-down-select-disabled-returns-current"),
])
def test_3_7_select_policy_disabled(limit, current: int) -> None:
    rules_ = ScalingRules(0, "Disabled", (ScalingPolicy("Pods", 4, 15),))
    assert limit(current, ScaleEvents(), rules_, NOW_S) == current


@pytest.mark.parametrize(("current", "percent", "expected"), [
    pytest.param(25, 12, 29, id="3.7-quirk-percent-float-ceil"),
    pytest.param(3, 1, 4, id="3.7-percent-rounds-up-to-progress"),
])
def test_3_7_percent_scale_up_rounding(current: int, percent: int, expected: int) -> None:
    """25 x (1 + 12/100) is 28.000000000000004 in float64, so the limit is 29, not 28."""
    rules_ = ScalingRules(0, "Max", (ScalingPolicy("Percent", percent, 60),))
    assert hpa.scale_up_limit(current, ScaleEvents(), rules_, NOW_S) == expected


@pytest.mark.parametrize(("current", "percent", "expected"), [
    pytest.param(5, 50, 2, id="3.7-percent-scale-down-truncates"),
    pytest.param(3, 150, -1, id="3.7-percent-scale-down-may-be-negative"),
])
def test_3_7_percent_scale_down_truncation(current: int, percent: int, expected: int) -> None:
    rules_ = ScalingRules(0, "Max", (ScalingPolicy("Percent", percent, 60),))
    assert hpa.scale_down_limit(current, ScaleEvents(), rules_, NOW_S) == expected


@pytest.mark.parametrize(("age_s", "counted"), [
    pytest.param(59.999, 5, id="4.5-event-inside-period-counts"),
    pytest.param(60.0, 0, id="4.5-event-exactly-at-boundary-outside"),
    pytest.param(60.001, 0, id="4.5-event-older-than-period-outside"),
])
def test_4_5_boundary_rule(age_s: float, counted: int) -> None:
    events = (ScaleEvent(5, NOW_S - age_s),)
    assert hpa.replicas_change_in_period(60, events, NOW_S) == counted


def test_3_7_store_event_overwrites_last_outdated_else_appends() -> None:
    rules_ = ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 60),))
    events = ScaleEvents(up=(ScaleEvent(1, NOW_S - 200), ScaleEvent(2, NOW_S - 100), ScaleEvent(3, NOW_S - 30)))
    stored = hpa.store_scale_event(events, rules_, rules_, (10, 14, NOW_S))
    assert [(e.replica_change, e.at_s, e.outdated) for e in stored.up] == [
        (1, NOW_S - 200, True), (4, NOW_S, False), (3, NOW_S - 30, False)]
    appended = hpa.store_scale_event(ScaleEvents(down=(ScaleEvent(3, NOW_S - 30),)), rules_, rules_, (10, 8, NOW_S))
    assert [(e.replica_change, e.outdated) for e in appended.down] == [(3, False), (2, False)]
    assert appended.up == ()


def test_3_7_events_recorded_only_on_rescale_with_behavior() -> None:
    with_behavior = HorizontalPodAutoscaler(1, 10, {"scaleUp": {"policies": [{"type": "Pods", "value": 1,
                                                                               "periodSeconds": 60}]}})
    with_behavior.decide(0.0, 2, 2)
    assert with_behavior.state.events == ScaleEvents()
    with_behavior.decide(15.0, 2, 9)
    assert [(e.replica_change, e.at_s) for e in with_behavior.state.events.up] == [(1, 15.0)]
    legacy = HorizontalPodAutoscaler(1, 10)
    legacy.decide(0.0, 2, 9)
    assert legacy.state.events == ScaleEvents()


def test_3_7_rate_limit_spreads_over_periods() -> None:
    """Pods 1 per 60 s: +1 now, then held until the event is no longer strictly inside the period."""
    autoscaler = HorizontalPodAutoscaler(1, 10, {"scaleUp": {"policies": [{"type": "Pods", "value": 1,
                                                                            "periodSeconds": 60}]}})
    assert autoscaler.decide(0.0, 2, 9) == 3
    assert autoscaler.decide(30.0, 3, 9) == 3
    assert autoscaler.decide(59.5, 3, 9) == 3
    assert autoscaler.decide(60.0, 3, 9) == 4
