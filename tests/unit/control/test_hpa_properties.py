"""Invariants of the HPA decision over random behaviors and sync sequences (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, scale_up_limit

policy = st.fixed_dictionaries({
    "type": st.sampled_from(["Pods", "Percent"]),
    "value": st.integers(1, 300),
    "periodSeconds": st.integers(1, 600),
})
direction = st.fixed_dictionaries({}, optional={
    "stabilizationWindowSeconds": st.integers(0, 600),
    "selectPolicy": st.sampled_from(["Max", "Min", "Disabled"]),
    "policies": st.lists(policy, min_size=1, max_size=3),
})
behaviors = st.one_of(st.none(), st.fixed_dictionaries({}, optional={"scaleUp": direction, "scaleDown": direction}))
steps = st.lists(st.tuples(st.floats(0.5, 120.0), st.integers(0, 60)), min_size=1, max_size=25)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[int, int, dict | None, int, list[tuple[float, int]]]:
    low = draw(st.integers(0, 5))
    high = draw(st.integers(max(low, 1), 40))
    start = draw(st.integers(max(low, 1), high))
    return low, high, draw(behaviors), start, draw(steps)


SETTINGS = settings(max_examples=120, deadline=None, database=None)


@SETTINGS
@given(scenarios())
def test_result_within_min_max(scenario: tuple) -> None:
    low, high, behavior, current, sequence = scenario
    autoscaler = HorizontalPodAutoscaler(low, high, behavior)
    now = 0.0
    for dt, desired in sequence:
        now += dt
        current = autoscaler.decide(now, current, desired)
        assert low <= current <= high


@SETTINGS
@given(scenarios())
def test_never_exceeds_active_scale_up_limit(scenario: tuple) -> None:
    low, high, behavior, current, sequence = scenario
    autoscaler = HorizontalPodAutoscaler(low, high, behavior if behavior is not None else {})
    now = 0.0
    for dt, desired in sequence:
        now += dt
        rules = autoscaler.scale_up_rules
        assert rules is not None
        limit = max(scale_up_limit(current, autoscaler.state.events, rules, now), current)
        result = autoscaler.decide(now, current, desired)
        if result > current:
            assert result <= limit
        current = result


@SETTINGS
@given(scenarios(), st.integers(1, 600))
def test_stabilization_never_scales_down_inside_window(scenario: tuple, window: int) -> None:
    """A scale-down never goes below any recommendation recorded inside the down window."""
    low, high, behavior, current, sequence = scenario
    behavior = dict(behavior or {})
    behavior["scaleDown"] = dict(behavior.get("scaleDown", {}), stabilizationWindowSeconds=window)
    autoscaler = HorizontalPodAutoscaler(low, high, behavior)
    now = 0.0
    recorded = [(0.0 + sequence[0][0], current)]
    for dt, desired in sequence:
        now += dt
        recorded.append((now, desired))
        result = autoscaler.decide(now, current, desired)
        if result < current:
            assert result >= max(d for t, d in recorded if t > now - window)
        current = result
