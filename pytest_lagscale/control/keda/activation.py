"""KEDA's activation step (each pollingInterval): only KEDA moves 0 <-> N; the HPA owns 1..N.

Pure: given activity, errors, current replicas and ``now_s``, it returns what KEDA would set.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_lagscale.contract.errors import ConfigError


@dataclass(frozen=True)
class ActivationSpec:
    """The ScaledObject fields the activation step reads.

    Attributes:
        min_replica_count: minReplicaCount (0 when unset).
        idle_replica_count: idleReplicaCount (None when unset).
        cooldown_period_s: seconds after the last active poll before scaling to idle/min (300).
        initial_cooldown_period_s: seconds after creation before the first such scale-in (0).
        created_at_s: the ScaledObject's creation time in seconds (same clock as ``now_s``).
        fallback_replicas: ``spec.fallback.replicas``, None when no fallback section.
    """

    min_replica_count: int = 0
    idle_replica_count: int | None = None
    cooldown_period_s: float = 300.0
    initial_cooldown_period_s: float = 0.0
    created_at_s: float = 0.0
    fallback_replicas: int | None = None


@dataclass(frozen=True)
class ActivationDecision:
    """One activation step.

    Attributes:
        now_s: time of the poll in seconds.
        current_replicas: replicas of the scale target before the step.
        replicas: replicas after the step (equal to current when KEDA does nothing).
        is_active: OR over triggers of (metric active or fallback active).
        is_error: some trigger errored.
        reason: ScaledFromZero, ScaledFromIdle, ActiveWithError, Active, FallbackPending,
            TriggerError, ScaledToIdle, ScaledToMin, CoolingDown, ScaledUpToMin or Idle.
        last_active_s: lastActiveTime after the step (None = never active).
    """

    now_s: float
    current_replicas: int
    replicas: int
    is_active: bool
    is_error: bool
    reason: str
    last_active_s: float | None

    @property
    def changed(self) -> bool:
        """KEDA changes the replica count in this step."""
        return self.replicas != self.current_replicas


class ActivationLoop:
    """The scale executor's decision for a ScaledObject, with its lastActiveTime.

    Args:
        spec: the fields read from the ScaledObject.
        last_active_s: initial lastActiveTime (None = never active).

    Raises:
        ConfigError: negative counts or idleReplicaCount >= minReplicaCount.

    Source: kedacore/keda pkg/scaling/executor/scale_scaledobjects.go RequestScale,
    scaleToZeroOrIdle, scaleFromZeroOrIdle, getIdleOrMinimumReplicaCount v2.20.2;
    docs/semantics.md §2.2
    """

    def __init__(self, spec: ActivationSpec, last_active_s: float | None = None):
        if spec.min_replica_count < 0 or (spec.idle_replica_count is not None
                                          and not 0 <= spec.idle_replica_count < spec.min_replica_count):
            raise ConfigError(f"'idleReplicaCount': got {spec.idle_replica_count!r}, expected >= 0 and < "
                              f"minReplicaCount ({spec.min_replica_count}) in ActivationSpec; "
                              f"use idleReplicaCount 0 with minReplicaCount >= 1")
        self.spec = spec
        self.last_active_s = last_active_s

    def step(self, now_s: float, is_active: bool, is_error: bool, current_replicas: int) -> ActivationDecision:
        """Decide one poll.

        Args:
            now_s: time of the poll in seconds.
            is_active: some trigger is active (or in fallback).
            is_error: some trigger errored this poll.
            current_replicas: the scale target's current replicas.
        """
        if is_active:
            replicas, reason = self._active(now_s, is_error, current_replicas)
        else:
            replicas, reason = self._inactive(now_s, is_error, current_replicas)
        return ActivationDecision(now_s, current_replicas, replicas, is_active, is_error, reason,
                                  self.last_active_s)

    def _active(self, now_s: float, is_error: bool, cur: int) -> tuple[int, str]:
        s = self.spec
        if cur == 0 or (s.idle_replica_count is not None and cur < s.min_replica_count):
            self.last_active_s = now_s
            target = s.min_replica_count if s.min_replica_count > 0 else 1
            return target, "ScaledFromZero" if cur == 0 else "ScaledFromIdle"
        if is_error:
            return cur, "ActiveWithError"
        self.last_active_s = now_s
        return cur, "Active"

    def _inactive(self, now_s: float, is_error: bool, cur: int) -> tuple[int, str]:
        s = self.spec
        if is_error and s.fallback_replicas is not None and s.fallback_replicas != 0:
            return cur, "FallbackPending"
        if is_error and s.fallback_replicas is None:
            return cur, "TriggerError"
        idle = s.idle_replica_count
        if (idle is not None and cur > idle) or (cur > 0 and s.min_replica_count == 0):
            if not self._cooled_down(now_s):
                return cur, "CoolingDown"
            target = idle if idle is not None else s.min_replica_count
            return target, "ScaledToIdle" if idle is not None else "ScaledToMin"
        if idle is None and cur < s.min_replica_count:
            return s.min_replica_count, "ScaledUpToMin"
        return cur, "Idle"

    def _cooled_down(self, now_s: float) -> bool:
        """``lastActive + cooldown < now`` (strict), or ``created + initialCooldown < now`` if never active.

        Quirk: cooldownPeriod only governs the drop to idle/min (usually 0); N -> 1 is HPA
        behaviour; test id 2.2-cooldown-only-to-zero.
        """
        if self.last_active_s is None:
            return self.spec.created_at_s + self.spec.initial_cooldown_period_s < now_s
        return self.last_active_s + self.spec.cooldown_period_s < now_s
