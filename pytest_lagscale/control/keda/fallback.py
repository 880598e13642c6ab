"""KEDA ``spec.fallback``: a stand-in metric after too many consecutive failures.

One :class:`Fallback` per metric holds its failure count (the ScaledObject's
``status.health[metric].numberOfFailures``); the polling loop and HPA metric reads both count.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_lagscale.control.keda.base import MetricTarget
from pytest_lagscale.contract.errors import ConfigError

BEHAVIORS = ("static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower")


@dataclass(frozen=True)
class FallbackOutcome:
    """Result of one failed evaluation.

    Attributes:
        metric_value: the stand-in value (target x R), None when the error goes to the HPA.
        active: the fallback is in force (the trigger counts as active and not in error).
        failures: consecutive failures including this one.
        replicas: R, the replica count the stand-in value asks for (None when not active).
    """

    metric_value: float | None
    active: bool
    failures: int
    replicas: int | None = None


class Fallback:
    """Failure counting and the fallback value for one metric.

    Args:
        failure_threshold: failures tolerated before the fallback applies (>= 0).
        replicas: fallback replica count R (>= 0).
        behavior: static (R), currentReplicas, currentReplicasIfHigher (max(current, R)) or
            currentReplicasIfLower (min(current, R)).
        failures: initial consecutive failure count (the stored health status).

    Raises:
        ConfigError: a negative count or an unknown behavior.

    Source: kedacore/keda pkg/fallback/fallback.go GetMetricsWithFallback/doFallback v2.20.2;
    docs/semantics.md §2.5, §4.7
    """

    def __init__(self, failure_threshold: int, replicas: int, behavior: str = "static", failures: int = 0):
        problems = [f"'{name}': got {value!r}, expected an integer >= 0 in fallback; pass 0 or more"
                    for name, value in (("failureThreshold", failure_threshold), ("replicas", replicas))
                    if not isinstance(value, int) or value < 0]
        if behavior not in BEHAVIORS:
            problems.append(f"'behavior': got {behavior!r}, expected one of {', '.join(BEHAVIORS)} in fallback; "
                            f"use 'static'")
        if problems:
            raise ConfigError(problems)
        self.failure_threshold = failure_threshold
        self.replicas = replicas
        self.behavior = behavior
        self.failures = failures

    @property
    def health(self) -> str:
        """``Happy`` after a success (or before any failure), ``Failing`` after a failure."""
        return "Failing" if self.failures else "Happy"

    def on_success(self) -> None:
        """A successful evaluation resets the failure count."""
        self.failures = 0

    def fallback_replicas(self, current_replicas: int) -> int:
        """R for the configured behavior, given the scale target's current replicas."""
        return {"static": self.replicas,
                "currentReplicas": current_replicas,
                "currentReplicasIfHigher": max(current_replicas, self.replicas),
                "currentReplicasIfLower": min(current_replicas, self.replicas)}[self.behavior]

    def on_failure(self, target: MetricTarget, current_replicas: int, ready_replicas: int | None = None) -> FallbackOutcome:
        """Count a failure; past the threshold return ``target x R`` as the metric value.

        Args:
            target: the metric's target (AverageValue: value per replica; Value: total).
            current_replicas: the scale target's current replicas.
            ready_replicas: ready pods; for a Value target R is divided by them first, so the
                HPA's ``ceil(ratio x ready)`` lands on R.

        Returns:
            The outcome: active with a value when failures > failureThreshold, else an error.
        """
        self.failures += 1
        if self.failures <= self.failure_threshold:
            return FallbackOutcome(None, False, self.failures)
        replicas = self.fallback_replicas(current_replicas)
        scale = float(replicas)
        if target.type == "Value" and ready_replicas:
            scale = replicas / ready_replicas
        return FallbackOutcome(target.value * scale, True, self.failures, replicas)
