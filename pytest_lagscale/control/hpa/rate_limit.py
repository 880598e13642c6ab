"""HPA behavior rate limits: policies over the scale-event history.

Pure functions. An event counts for a policy of period ``p`` when recorded strictly after
``now_s - p``: an event exactly at the boundary counts as outside.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_lagscale.config.behavior import ScalingRules
from pytest_lagscale.control.hpa.stabilization import NormalizationArgs, Normalized

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class ScaleEvent:
    """One successful rescale in one direction.

    Attributes:
        replica_change: absolute change in replicas (> 0).
        at_s: time of the rescale in seconds.
        outdated: older than the direction's longest policy period when last checked; the slot
            is reused by the next event.
    """

    replica_change: int
    at_s: float
    outdated: bool = False


@dataclass(frozen=True)
class ScaleEvents:
    """The per-HPA event lists (absolute sizes), oldest slot first."""

    up: tuple[ScaleEvent, ...] = ()
    down: tuple[ScaleEvent, ...] = ()


def replicas_change_in_period(period_s: float, events: Sequence[ScaleEvent], now_s: float) -> int:
    """Sum of ``replica_change`` over events recorded strictly after ``now_s - period_s``.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    getReplicasChangePerPeriod v1.28.0; docs/semantics.md §3.7, §4.5
    """
    cutoff = now_s - period_s
    return sum(e.replica_change for e in events if e.at_s > cutoff)


def _period_start(current: int, events: ScaleEvents, period_s: float, now_s: float) -> int:
    added = replicas_change_in_period(period_s, events.up, now_s)
    deleted = replicas_change_in_period(period_s, events.down, now_s)
    return current - added + deleted


def scale_up_limit(current: int, events: ScaleEvents, rules: ScalingRules, now_s: float) -> int:
    """Highest replica count the scale-up policies allow now.

    Pods: ``start + value``; Percent: ``ceil(start * (1 + value / 100))`` where ``start`` is the
    count at the start of the policy's period. selectPolicy Max takes the largest limit, Min the
    smallest, Disabled returns ``current``.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    calculateScaleUpLimitWithScalingRules v1.28.0; docs/semantics.md §3.7
    Quirk: the percent product is float64, so 25 x (1 + 12/100) = 28.000000000000004 rounds up
    to 29; test id 3.7-quirk-percent-float-ceil.
    """
    if rules.select_policy == "Disabled":
        return current
    pick, result = (min, _INT32_MAX) if rules.select_policy == "Min" else (max, _INT32_MIN)
    for policy in rules.policies:
        start = _period_start(current, events, policy.period_s, now_s)
        if policy.type == "Pods":
            proposed = start + policy.value
        else:
            proposed = math.ceil(start * (1 + policy.value / 100))
        result = pick(result, proposed)
    return result


def scale_down_limit(current: int, events: ScaleEvents, rules: ScalingRules, now_s: float) -> int:
    """Lowest replica count the scale-down policies allow now.

    Pods: ``start - value``; Percent: ``start * (1 - value / 100)`` truncated toward zero (may be
    negative). selectPolicy Max takes the lowest limit (largest drop), Min the highest,
    Disabled returns ``current``.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    calculateScaleDownLimitWithBehaviors v1.28.0; docs/semantics.md §3.7
    """
    if rules.select_policy == "Disabled":
        return current
    pick, result = (max, _INT32_MIN) if rules.select_policy == "Min" else (min, _INT32_MAX)
    for policy in rules.policies:
        start = _period_start(current, events, policy.period_s, now_s)
        if policy.type == "Pods":
            proposed = start - policy.value
        else:
            proposed = math.trunc(start * (1 - policy.value / 100))
        result = pick(result, proposed)
    return result


def convert_with_behavior_rate(args: NormalizationArgs, events: ScaleEvents, now_s: float) -> Normalized:
    """Apply the rate limits and [min, max] to a stabilized recommendation.

    Args:
        args: ``desired_replicas`` here is the stabilized recommendation.
        events: the scale-event history.
        now_s: current time in seconds.

    Returns:
        The allowed count with reason ScaleUpLimit, TooManyReplicas, ScaleDownLimit,
        TooFewReplicas or DesiredWithinRange. ``desired == current`` is returned unchanged.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    convertDesiredReplicasWithBehaviorRate v1.28.0; docs/semantics.md §3.7, §4.5
    """
    cur, desired = args.current_replicas, args.desired_replicas
    if desired > cur:
        limit = max(scale_up_limit(cur, events, args.scale_up, now_s), cur)
        if args.max_replicas > limit:
            maximum, reason = limit, "ScaleUpLimit"
            message = "the desired replica count is increasing faster than the maximum scale rate"
        else:
            maximum, reason = args.max_replicas, "TooManyReplicas"
            message = "the desired replica count is more than the maximum replica count"
        if desired > maximum:
            return Normalized(maximum, reason, message)
    elif desired < cur:
        limit = min(scale_down_limit(cur, events, args.scale_down, now_s), cur)
        if args.min_replicas < limit:
            minimum, reason = limit, "ScaleDownLimit"
            message = "the desired replica count is decreasing faster than the maximum scale rate"
        else:
            minimum, reason = args.min_replicas, "TooFewReplicas"
            message = "the desired replica count is less than the minimum replica count"
        if desired < minimum:
            return Normalized(minimum, reason, message)
    return Normalized(desired, "DesiredWithinRange", "the desired count is within the acceptable range")


def store_scale_event(events: ScaleEvents, rules_up: ScalingRules, rules_down: ScalingRules,
                      change: tuple[int, int, float]) -> ScaleEvents:
    """Record a rescale ``(previous, new, now_s)`` in its direction's list.

    Events older than that direction's longest policy period are marked outdated (for good);
    the new event overwrites the last outdated one, else it is appended.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    storeScaleEvent/markScaleEventsOutdated v1.28.0; docs/semantics.md §3.7
    """
    previous, new, now_s = change
    up = new > previous
    rules, history = (rules_up, events.up) if up else (rules_down, events.down)
    longest = max((pol.period_s for pol in rules.policies), default=0)
    cutoff = now_s - longest
    marked = [ScaleEvent(e.replica_change, e.at_s, e.outdated or e.at_s < cutoff) for e in history]
    old_index = max((i for i, e in enumerate(marked) if e.outdated), default=None)
    event = ScaleEvent(abs(new - previous), now_s)
    if old_index is None:
        marked.append(event)
    else:
        marked[old_index] = event
    stored = tuple(marked)
    return ScaleEvents(up=stored, down=events.down) if up else ScaleEvents(up=events.up, down=stored)
