"""The pure controller step: KEDA's polling loop and the HPA's sync, built from the committed YAML.

:class:`pytest_lagscale.control.policy.KedaHpaPolicy` wraps it as a scaling policy and owns
the schedule; called directly, the caller runs it on its own schedule::

    controller = ScalingController.from_scaled_object(load_scaled_object("k8s/scaledobject.yaml"))
    # every controller.polling_interval_s (first call immediately):
    poll = controller.poll(now_s, Observation(current_replicas=n, offsets=read_offsets()))
    if poll.replicas_after != poll.replicas_before: set_replicas(poll.replicas_after)
    # every controller.sync_period_s:
    sync = controller.sync(now_s, Observation(current_replicas=n, offsets=read_offsets()))
    if sync.replicas_after != sync.replicas_before: set_replicas(sync.replicas_after)

Both return frozen dataclasses holding everything the event log needs
(``policy.base.step_record``, equal to ``dataclasses.asdict``, makes the record). Nothing here
reads a clock, does I/O or logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from pytest_lagscale.config.behavior import Behavior
from pytest_lagscale.config.harness import HarnessSettings
from pytest_lagscale.config.hpa import HpaConfig
from pytest_lagscale.config.scaledobject import FallbackConfig, ScaledObjectConfig
from pytest_lagscale.config.trigger_metadata.cpu import CpuTriggerMetadata
from pytest_lagscale.config.triggers import TriggerConfig
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, HpaDecision, combine_proposals
from pytest_lagscale.control.keda import (
    ActivationLoop,
    ActivationSpec,
    Fallback,
    MetricTarget,
    Trigger,
    TriggerError,
)
from pytest_lagscale.control.keda.registry import TRIGGERS
from pytest_lagscale.control.observation import Observation, Offsets
from pytest_lagscale.control.pods_metric import HPA_METRICS

__all__ = ["ControllerSpec", "Observation", "Offsets", "PollDecision", "ScalingController", "SyncDecision",
           "TriggerEvaluation"]


@dataclass(frozen=True)
class TriggerEvaluation:
    """One trigger in one step.

    Attributes:
        index: position in ``spec.triggers``.
        type: ``kafka``, ``cpu`` or ``external``.
        metric_name: e.g. ``s0-kafka-events``.
        target: the metric target (type and value).
        metric_value: value given to the HPA (fallback value included), None on error or cpu poll.
        active: metric active, or fallback active.
        error: the trigger's error message, None when it succeeded or fell back.
        fallback_active: the fallback value replaced a failed read.
        failures: consecutive failures of this metric after the step.
        total_lag: total lag in offsets after caps (kafka; None on error).
        total_lag_with_persistent: total lag including persistent lag (kafka; None on error).
        partition_lag: partition -> lag including persistent lag, in offsets (kafka).
        proposal: the HPA's proposal for this metric (sync only; None if invalid or poll).
        cached: the value is the last poll's (useCachedMetrics).
    """

    index: int
    type: str
    metric_name: str
    target: MetricTarget
    metric_value: float | None
    active: bool
    error: str | None = None
    fallback_active: bool = False
    failures: int = 0
    total_lag: int | None = None
    total_lag_with_persistent: int | None = None
    partition_lag: dict[int, int] = field(default_factory=dict)
    proposal: int | None = None
    cached: bool = False


@dataclass(frozen=True)
class PollDecision:
    """KEDA's polling-loop step (event ``keda_poll``).

    Attributes:
        now_s: time of the poll in seconds.
        triggers: one evaluation per trigger.
        is_active: the ScaledObject is active.
        is_error: some trigger errored.
        replicas_before: replicas observed.
        replicas_after: replicas KEDA sets (= before when it leaves them to the HPA).
        reason: the activation reason (ScaledFromZero, Active, CoolingDown, ScaledToMin, ...).
        last_active_s: lastActiveTime after the poll.
        event: the event-log name.
        sets_desired_replicas: class constant, False: KEDA's poll is not the HPA's desired count.
    """

    sets_desired_replicas: ClassVar[bool] = False

    now_s: float
    triggers: tuple[TriggerEvaluation, ...]
    is_active: bool
    is_error: bool
    replicas_before: int
    replicas_after: int
    reason: str
    last_active_s: float | None
    event: str = "keda_poll"


@dataclass(frozen=True)
class SyncDecision:
    """The HPA's sync step (event ``hpa_sync``).

    Attributes:
        now_s: time of the sync in seconds.
        triggers: one evaluation per trigger (empty when the HPA skipped metrics).
        proposal: combined metric proposal (None: metrics failed or skipped).
        hpa: the HPA decision (recommendation, reason, message, stabilization reason).
        replicas_before: replicas observed.
        replicas_after: replicas the HPA sets.
        reason: ``hpa.reason``.
        stabilized: ``hpa.stabilized``.
        limited: ``hpa.limited``.
        event: the event-log name.
        sets_desired_replicas: class constant, True: the HPA's desired count.
    """

    sets_desired_replicas: ClassVar[bool] = True

    now_s: float
    triggers: tuple[TriggerEvaluation, ...]
    proposal: int | None
    hpa: HpaDecision
    replicas_before: int
    replicas_after: int
    reason: str
    stabilized: bool
    limited: bool
    event: str = "hpa_sync"


@dataclass(frozen=True)
class ControllerSpec:
    """Everything the controller is built from (one ScaledObject, or one plain HPA).

    Attributes:
        triggers: the triggers, in ``spec.triggers`` order.
        hpa_min_replicas: HPA ``minReplicas``.
        hpa_max_replicas: HPA ``maxReplicas``.
        behavior: HPA behavior, None = legacy path.
        harness: sync period, tolerance, downscale stabilization.
        activation: KEDA activation fields, None for a plain HPA (no polling loop).
        fallback: KEDA fallback, None when unset.
        polling_interval_s: KEDA pollingInterval in seconds (None for a plain HPA).
    """

    triggers: tuple[TriggerConfig, ...]
    hpa_min_replicas: int
    hpa_max_replicas: int
    behavior: Behavior | None = None
    harness: HarnessSettings = field(default_factory=HarnessSettings)
    activation: ActivationSpec | None = None
    fallback: FallbackConfig | None = None
    polling_interval_s: float | None = None


class _Slot:
    """One trigger (built by its registry entry, or a plain HPA's Pods metric) with its fallback
    state and last poll evaluation."""

    def __init__(self, config: TriggerConfig, fallback: FallbackConfig | None):
        self.config = config
        build = TRIGGERS.get(config.type) or HPA_METRICS[config.type]
        self.trigger: Trigger = build.from_config(config)
        self.fallback = (Fallback(fallback.failure_threshold, fallback.replicas, fallback.behavior)
                         if fallback and not self.trigger.resource_metric else None)
        self.last_poll: TriggerEvaluation | None = None


class ScalingController:
    """KEDA + HPA decisions for one scaled Deployment, clock-injected.

    Args:
        spec: see :class:`ControllerSpec`; usually built by :meth:`from_scaled_object` or
            :meth:`from_hpa`.

    Source: kedacore/keda pkg/scaling/scale_handler.go checkScalers/getScaledObjectState and
    GetScaledObjectMetrics v2.20.2; kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go
    reconcileAutoscaler v1.28.0; docs/semantics.md §2.2, §2.4, §3.2
    """

    def __init__(self, spec: ControllerSpec):
        self.spec = spec
        self._slots = [_Slot(t, spec.fallback) for t in spec.triggers]
        self.hpa = HorizontalPodAutoscaler(spec.hpa_min_replicas, spec.hpa_max_replicas, spec.behavior,
                                           spec.harness.hpa_tolerance, spec.harness.hpa_downscale_stabilization_s)
        self.activation = ActivationLoop(spec.activation) if spec.activation else None

    @classmethod
    def from_scaled_object(cls, config: ScaledObjectConfig, *, created_at_s: float = 0.0) -> ScalingController:
        """Build from a loaded ScaledObject (``created_at_s``: its creation time on the runner's clock)."""
        activation = ActivationSpec(config.min_replica_count, config.idle_replica_count,
                                    float(config.cooldown_period_s), float(config.initial_cooldown_period_s),
                                    created_at_s, config.fallback.replicas if config.fallback else None)
        return cls(ControllerSpec(config.triggers, config.hpa_min_replicas, config.hpa_max_replicas,
                                  config.behavior, config.harness, activation, config.fallback,
                                  float(config.polling_interval_s)))

    @classmethod
    def from_hpa(cls, config: HpaConfig) -> ScalingController:
        """Build a plain HPA: cpu utilization (experiment 1) or a Pods metric (the consumers'
        own lag); :meth:`poll` does nothing for it."""
        if config.pods_metric is not None:
            trigger = TriggerConfig(index=0, type="pods", metric_type="AverageValue", settings=config.pods_metric)
        else:
            assert config.target_utilization_percent is not None
            trigger = TriggerConfig(index=0, type="cpu", metric_type="Utilization",
                                    settings=CpuTriggerMetadata(config.target_utilization_percent),
                                    resource_metric=True)
        return cls(ControllerSpec((trigger,), config.min_replicas, config.max_replicas, config.behavior,
                                  config.harness))

    from_cpu_hpa = from_hpa

    @property
    def polling_interval_s(self) -> float | None:
        """Seconds between :meth:`poll` calls (None: no KEDA polling loop)."""
        return self.spec.polling_interval_s

    @property
    def sync_period_s(self) -> float:
        """Seconds between :meth:`sync` calls (``lagscale.dev/hpa-sync-period-seconds``)."""
        return self.spec.harness.hpa_sync_period_s

    @property
    def triggers(self) -> tuple[Trigger, ...]:
        """The triggers, in ``spec.triggers`` order."""
        return tuple(slot.trigger for slot in self._slots)

    def poll(self, now_s: float, observation: Observation) -> PollDecision:
        """KEDA's polling-loop step: evaluate every trigger, then the activation rule (§2.2).

        Args:
            now_s: time of the poll in seconds (runner's monotonic clock).
            observation: replicas and offsets read just before.
        """
        cur = observation.current_replicas
        evaluations = tuple(self._evaluate(slot, observation, now_s, for_poll=True) for slot in self._slots)
        for slot, evaluation in zip(self._slots, evaluations):
            slot.last_poll = evaluation
        is_error = any(e.error is not None for e in evaluations)
        only_resource = all(s.trigger.resource_metric for s in self._slots)
        is_active = any(e.active for e in evaluations) or (only_resource and not is_error)
        if self.activation is None:
            return PollDecision(now_s, evaluations, is_active, is_error, cur, cur, "NoPollingLoop", None)
        step = self.activation.step(now_s, is_active, is_error, cur)
        return PollDecision(now_s, evaluations, is_active, is_error, cur, step.replicas, step.reason,
                            step.last_active_s)

    def sync(self, now_s: float, observation: Observation) -> SyncDecision:
        """One HPA reconcile (§3.2): metrics (unless a shortcut applies), max rule, normalization.

        Args:
            now_s: time of the sync in seconds (runner's monotonic clock).
            observation: replicas, offsets and cpu pods read just before.
        """
        cur = observation.current_replicas
        evaluations: tuple[TriggerEvaluation, ...] = ()
        proposal = None
        if self.hpa.needs_metrics(cur):
            evaluations = tuple(self._sync_metric(slot, observation, now_s) for slot in self._slots)
            proposal = combine_proposals([e.proposal for e in evaluations], cur)
        decision = self.hpa.decide_with_reason(now_s, cur, proposal)
        return SyncDecision(now_s, evaluations, proposal, decision, cur, decision.replicas, decision.reason,
                            decision.stabilized, decision.limited)

    def _sync_metric(self, slot: _Slot, obs: Observation, now_s: float) -> TriggerEvaluation:
        """The metric as the HPA reads it (live, or the last poll's with useCachedMetrics) and its proposal."""
        if slot.config.use_cached_metrics and slot.last_poll is not None:
            evaluation = replace(slot.last_poll, cached=True)
        else:
            evaluation = self._evaluate(slot, obs, now_s, for_poll=False)
        proposal = slot.trigger.proposal(evaluation.metric_value, obs, self.spec.harness.hpa_tolerance)
        return replace(evaluation, proposal=proposal)

    def _evaluate(self, slot: _Slot, obs: Observation, now_s: float, *, for_poll: bool) -> TriggerEvaluation:
        """One trigger read; a Resource metric reports no value to KEDA's polling loop (§2.3)."""
        trigger = slot.trigger
        try:
            result = trigger.evaluate(obs, now_s)
        except TriggerError as exc:
            result, error = None, str(exc)
        # After evaluate: an external trigger learns its metric name and target from its scaler.
        base = dict(index=slot.config.index, type=slot.config.type, metric_name=trigger.metric_name,
                    target=trigger.metric_target)
        if result is None:
            return self._failed(slot, base, error, obs)
        if slot.fallback is not None:
            slot.fallback.on_success()
        value = None if for_poll and trigger.resource_metric else result.metric_value
        return TriggerEvaluation(**base, metric_value=value, active=result.active,
                                 total_lag=result.total_lag, total_lag_with_persistent=result.total_lag_with_persistent,
                                 partition_lag=dict(result.partition_lag_with_persistent))

    @staticmethod
    def _failed(slot: _Slot, base: dict, message: str, obs: Observation) -> TriggerEvaluation:
        """A failed read: the fallback's stand-in value past failureThreshold, else an error (§2.5)."""
        if slot.fallback is None:
            return TriggerEvaluation(**base, metric_value=None, active=False, error=message)
        outcome = slot.fallback.on_failure(slot.trigger.metric_target, obs.current_replicas, obs.ready)
        return TriggerEvaluation(**base, metric_value=outcome.metric_value, active=outcome.active,
                                 error=None if outcome.active else message, fallback_active=outcome.active,
                                 failures=outcome.failures)
