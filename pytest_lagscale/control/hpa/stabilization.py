"""HPA stabilization over the recommendation history, and the legacy clamp.

Pure functions: history in, (result, new history) out. Times are float seconds on the caller's
clock; an entry "recorded at" ``at_s`` is inside a window ``w`` when ``at_s > now_s - w``
(strictly newer) for the behavior path and ``at_s >= now_s - w`` for the legacy path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_lagscale.config.behavior import ScalingRules

SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0


@dataclass(frozen=True)
class Recommendation:
    """One unstabilized desired replica count and when it was computed.

    Attributes:
        replicas: the metric-desired replica count.
        at_s: time it was recorded, in seconds.
    """

    replicas: int
    at_s: float


@dataclass(frozen=True)
class Normalized:
    """A replica count with the HPA condition reason (CamelCase) and message explaining it."""

    replicas: int
    reason: str
    message: str


@dataclass(frozen=True)
class NormalizationArgs:
    """Inputs of the behavior path (Kubernetes' ``NormalizationArg``).

    Attributes:
        current_replicas: the scale target's ``spec.replicas``.
        desired_replicas: the metric proposal (or, for the rate step, the stabilized value).
        min_replicas: HPA ``minReplicas``.
        max_replicas: HPA ``maxReplicas``.
        scale_up: scale-up rules (window resolved).
        scale_down: scale-down rules (window resolved: never None here).
    """

    current_replicas: int
    desired_replicas: int
    min_replicas: int
    max_replicas: int
    scale_up: ScalingRules
    scale_down: ScalingRules


def _store(history: Sequence[Recommendation], old_index: int | None,
           entry: Recommendation) -> tuple[Recommendation, ...]:
    """Overwrite the last outdated entry if any, else append."""
    out = list(history)
    if old_index is None:
        out.append(entry)
    else:
        out[old_index] = entry
    return tuple(out)


def stabilize_legacy(history: Sequence[Recommendation], desired: int, now_s: float,
                     window_s: float) -> tuple[int, tuple[Recommendation, ...]]:
    """Legacy (behavior nil) stabilization: the max over the downscale window.

    Args:
        history: the recommendation history, oldest first.
        desired: this sync's metric proposal.
        now_s: current time in seconds.
        window_s: ``--horizontal-pod-autoscaler-downscale-stabilization`` in seconds (300).

    Returns:
        ``max(desired, entries recorded at or after now - window)`` and the history with
        ``{desired, now}`` overwriting the last entry older than the window, else appended.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    stabilizeRecommendation v1.28.0; docs/semantics.md §3.5, §4.3
    """
    cutoff = now_s - window_s
    result, old_index = desired, None
    for i, rec in enumerate(history):
        if rec.at_s < cutoff:
            old_index = i
        elif rec.replicas > result:
            result = rec.replicas
    return result, _store(history, old_index, Recommendation(desired, now_s))


def convert_legacy(current: int, desired: int, min_replicas: int, max_replicas: int) -> Normalized:
    """Legacy clamp: [min, min(max, max(2 x current, 4))].

    Returns:
        The clamped count with reason TooFewReplicas, ScaleUpLimit, TooManyReplicas or
        DesiredWithinRange.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    convertDesiredReplicasWithRules/calculateScaleUpLimit v1.28.0 (the 2x cap cites
    kubernetes/kubernetes#32304); docs/semantics.md §3.5, §4.2
    """
    up_limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
    if max_replicas > up_limit:
        maximum, reason = up_limit, "ScaleUpLimit"
        message = "the desired replica count is increasing faster than the maximum scale rate"
    else:
        maximum, reason = max_replicas, "TooManyReplicas"
        message = "the desired replica count is more than the maximum replica count"
    if desired < min_replicas:
        return Normalized(min_replicas, "TooFewReplicas",
                          "the desired replica count is less than the minimum replica count")
    if desired > maximum:
        return Normalized(maximum, reason, message)
    return Normalized(desired, "DesiredWithinRange", "the desired count is within the acceptable range")


def stabilize_with_behavior(history: Sequence[Recommendation], args: NormalizationArgs,
                            now_s: float) -> tuple[Normalized, tuple[Recommendation, ...]]:
    """Behavior stabilization: clamp current into [min over up window, max over down window].

    Args:
        history: the recommendation history (unstabilized values), oldest first.
        args: current/desired replicas and the rules (scale-down window resolved).
        now_s: current time in seconds.

    Returns:
        The stabilized recommendation (reason ScaleUpStabilized when desired >= current, else
        ScaleDownStabilized; the caller reports ReadyForNewScale when it equals desired) and the
        history with ``{desired, now}`` overwriting the last entry older than both windows.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    stabilizeRecommendationWithBehaviors v1.28.0; docs/semantics.md §3.6, §4.4
    Quirk: an entry exactly at a window's edge neither counts nor is outdated; test id
    4.4-quirk-edge-entry-not-counted.
    """
    up_cutoff = now_s - (args.scale_up.stabilization_window_s or 0)
    down_cutoff = now_s - (args.scale_down.stabilization_window_s or 0)
    up_rec = down_rec = args.desired_replicas
    old_index = None
    for i, rec in enumerate(history):
        if rec.at_s > up_cutoff:
            up_rec = min(up_rec, rec.replicas)
        if rec.at_s > down_cutoff:
            down_rec = max(down_rec, rec.replicas)
        if rec.at_s < up_cutoff and rec.at_s < down_cutoff:
            old_index = i
    result = min(max(args.current_replicas, up_rec), down_rec)
    new_history = _store(history, old_index, Recommendation(args.desired_replicas, now_s))
    if args.desired_replicas >= args.current_replicas:
        normalized = Normalized(result, "ScaleUpStabilized",
                                "recent recommendations were lower than current one, "
                                "applying the lowest recent recommendation")
    else:
        normalized = Normalized(result, "ScaleDownStabilized",
                                "recent recommendations were higher than current one, "
                                "applying the highest recent recommendation")
    return normalized, new_history
