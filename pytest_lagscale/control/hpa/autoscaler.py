"""One HPA's normalization state and decision (Kubernetes' HorizontalController, per HPA).

The controller passes ``now_s`` and the metric proposal each sync period; this object keeps the
recommendation history and the scale-event lists, and returns the decision with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_lagscale.config.behavior import Behavior, ScalingRules, parse_behavior
from pytest_lagscale.control.hpa.rate_limit import ScaleEvents, convert_with_behavior_rate, store_scale_event
from pytest_lagscale.control.hpa.stabilization import (
    NormalizationArgs,
    Normalized,
    Recommendation,
    convert_legacy,
    stabilize_legacy,
    stabilize_with_behavior,
)
from pytest_lagscale.contract.errors import ConfigError


@dataclass(frozen=True)
class HpaState:
    """What an HPA remembers between syncs.

    Attributes:
        recommendations: unstabilized desired counts, oldest slot first; None before the first
            sync (the first sync seeds it with the current replica count).
        events: scale-up and scale-down events (behavior path only).
    """

    recommendations: tuple[Recommendation, ...] | None = None
    events: ScaleEvents = field(default_factory=ScaleEvents)


@dataclass(frozen=True)
class HpaDecision:
    """One sync's decision, with everything an event log needs.

    Attributes:
        now_s: time of the sync in seconds.
        current_replicas: ``spec.replicas`` before the sync.
        desired_replicas: the metric proposal (None: metrics unavailable or not read).
        recommendation: the stabilized recommendation (None when normalization did not run).
        replicas: the resulting replica count.
        reason: CamelCase reason of the result: ScaleUpLimit, ScaleDownLimit, TooManyReplicas,
            TooFewReplicas, DesiredWithinRange, ScalingDisabled or FailedComputeMetricsReplicas.
        message: one-line explanation.
        stabilization_reason: ScaleUpStabilized, ScaleDownStabilized or ReadyForNewScale (None
            when normalization did not run).
        stabilized: the recommendation differs from the proposal.
        limited: the result differs from the recommendation (rate limit or min/max).
    """

    now_s: float
    current_replicas: int
    desired_replicas: int | None
    recommendation: int | None
    replicas: int
    reason: str
    message: str
    stabilization_reason: str | None = None
    stabilized: bool = False
    limited: bool = False

    @property
    def rescaled(self) -> bool:
        """The replica count changes."""
        return self.replicas != self.current_replicas


class HorizontalPodAutoscaler:
    """The Kubernetes HPA algorithm for one HPA, clock-injected.

    Args:
        min_replicas: ``spec.minReplicas`` (>= 0; KEDA always sets >= 1).
        max_replicas: ``spec.maxReplicas`` (>= max(1, min_replicas)).
        behavior: YAML-shaped ``spec.behavior`` dict (missing fields defaulted as the API server
            does, §3.4), a parsed :class:`~pytest_lagscale.config.behavior.Behavior`, or None for
            the legacy path (§3.5).
        tolerance: ratio band for proposals (``--horizontal-pod-autoscaler-tolerance``).
        downscale_stabilization_s: ``--horizontal-pod-autoscaler-downscale-stabilization`` in
            seconds: the legacy window, and the behavior scale-down window when unset.

    Raises:
        ConfigError: invalid bounds or behavior (every problem, one line each).

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler,
    normalizeDesiredReplicas, normalizeDesiredReplicasWithBehaviors v1.28.0;
    docs/semantics.md §3.2, §3.5-§3.7
    """

    def __init__(self, min_replicas: int, max_replicas: int, behavior: Mapping[str, Any] | Behavior | None = None,
                 tolerance: float = 0.1, downscale_stabilization_s: float = 300):
        _check_bounds(min_replicas, max_replicas, tolerance, downscale_stabilization_s)
        self.min_replicas = min_replicas
        self.max_replicas = max_replicas
        self.tolerance = tolerance
        self.downscale_stabilization_s = float(downscale_stabilization_s)
        if behavior is None or isinstance(behavior, Behavior):
            self.behavior = behavior
        else:
            self.behavior = parse_behavior(behavior, path="behavior",
                                           source="HorizontalPodAutoscaler(behavior=...)")
        self._state = HpaState()
        self.last_decision: HpaDecision | None = None

    @property
    def state(self) -> HpaState:
        """History and events (immutable snapshot)."""
        return self._state

    def restore(self, state: HpaState) -> None:
        """Replace history and events, e.g. to replay a recorded run or set up a test."""
        self._state = state

    @property
    def scale_up_rules(self) -> ScalingRules | None:
        """The scale-up rules in force (None on the legacy path)."""
        return self.behavior.scale_up if self.behavior else None

    @property
    def scale_down_rules(self) -> ScalingRules | None:
        """The scale-down rules with the window resolved (None on the legacy path)."""
        if self.behavior is None:
            return None
        rules = self.behavior.scale_down
        if rules.stabilization_window_s is None:
            return replace(rules, stabilization_window_s=int(self.downscale_stabilization_s))
        return rules

    def needs_metrics(self, current_replicas: int) -> bool:
        """Whether a sync at ``current_replicas`` reads metrics (False on the shortcuts of §3.2 step 3)."""
        disabled = current_replicas == 0 and self.min_replicas != 0
        return not disabled and self.min_replicas <= current_replicas <= self.max_replicas

    def decide(self, now_s: float, current_replicas: int, desired_replicas: int | None) -> int:
        """The replica count after one sync; see :meth:`decide_with_reason`."""
        return self.decide_with_reason(now_s, current_replicas, desired_replicas).replicas

    def decide_with_reason(self, now_s: float, current_replicas: int, desired_replicas: int | None) -> HpaDecision:
        """One reconcile (§3.2): seed, shortcuts, normalization, event recording.

        Args:
            now_s: time of the sync in seconds.
            current_replicas: the scale target's ``spec.replicas``.
            desired_replicas: the combined metric proposal; None when the metrics failed (no
                change, as the HPA returns before normalizing).

        Returns:
            The decision, also kept as :attr:`last_decision`.
        """
        if self._state.recommendations is None:
            self._state = replace(self._state, recommendations=(Recommendation(current_replicas, now_s),))
        decision = self._shortcut(now_s, current_replicas, desired_replicas)
        if decision is None:
            assert desired_replicas is not None
            decision = self._normalize(now_s, current_replicas, desired_replicas)
        if decision.rescaled and self.behavior is not None:
            events = store_scale_event(self._state.events, self.scale_up_rules, self.scale_down_rules,
                                       (current_replicas, decision.replicas, now_s))
            self._state = replace(self._state, events=events)
        self.last_decision = decision
        return decision

    def _shortcut(self, now_s: float, cur: int, desired: int | None) -> HpaDecision | None:
        """ScalingDisabled, out-of-range current, or failed metrics: no normalization."""
        base = dict(now_s=now_s, current_replicas=cur, desired_replicas=desired, recommendation=None)
        if cur == 0 and self.min_replicas != 0:
            return HpaDecision(**base, replicas=0, reason="ScalingDisabled",
                               message="scaling is disabled since the replica count of the target is zero")
        if cur > self.max_replicas:
            return HpaDecision(**base, replicas=self.max_replicas, reason="TooManyReplicas",
                               message="current number of replicas above spec.maxReplicas", limited=True)
        if cur < self.min_replicas:
            return HpaDecision(**base, replicas=self.min_replicas, reason="TooFewReplicas",
                               message="current number of replicas below spec.minReplicas", limited=True)
        if desired is None:
            return HpaDecision(**base, replicas=cur, reason="FailedComputeMetricsReplicas",
                               message="failed to compute desired number of replicas based on listed metrics")
        return None

    def _normalize(self, now_s: float, cur: int, desired: int) -> HpaDecision:
        history = self._state.recommendations or ()
        if self.behavior is None:
            rec, history = stabilize_legacy(history, desired, now_s, self.downscale_stabilization_s)
            stab_reason = "ScaleDownStabilized" if rec != desired else "ReadyForNewScale"
            result = convert_legacy(cur, rec, self.min_replicas, self.max_replicas)
        else:
            args = NormalizationArgs(cur, desired, self.min_replicas, self.max_replicas,
                                     self.scale_up_rules, self.scale_down_rules)
            stabilized, history = stabilize_with_behavior(history, args, now_s)
            rec = stabilized.replicas
            stab_reason = stabilized.reason if rec != desired else "ReadyForNewScale"
            result = convert_with_behavior_rate(replace(args, desired_replicas=rec), self._state.events, now_s)
        self._state = replace(self._state, recommendations=history)
        return _decision(now_s, (cur, desired, rec), result, stab_reason)


def _decision(now_s: float, counts: tuple[int, int, int], result: Normalized, stab_reason: str) -> HpaDecision:
    cur, desired, rec = counts
    return HpaDecision(now_s=now_s, current_replicas=cur, desired_replicas=desired, recommendation=rec,
                       replicas=result.replicas, reason=result.reason, message=result.message,
                       stabilization_reason=stab_reason, stabilized=rec != desired,
                       limited=result.replicas != rec)


def _check_bounds(min_replicas: int, max_replicas: int, tolerance: float, window_s: float) -> None:
    problems = []
    if not isinstance(min_replicas, int) or min_replicas < 0:
        problems.append(f"'min_replicas': got {min_replicas!r}, expected an integer >= 0 in "
                        f"HorizontalPodAutoscaler(); pass 1 or more")
    if not isinstance(max_replicas, int) or max_replicas < max(1, min_replicas if isinstance(min_replicas, int) else 1):
        problems.append(f"'max_replicas': got {max_replicas!r}, expected an integer >= max(1, min_replicas) in "
                        f"HorizontalPodAutoscaler(); raise max_replicas")
    if not 0 <= tolerance < 1:
        problems.append(f"'tolerance': got {tolerance!r}, expected a number in [0, 1) in "
                        f"HorizontalPodAutoscaler(); pass e.g. 0.1")
    if window_s < 0:
        problems.append(f"'downscale_stabilization_s': got {window_s!r}, expected a number >= 0 (seconds) in "
                        f"HorizontalPodAutoscaler(); pass e.g. 300")
    if problems:
        raise ConfigError(problems)
