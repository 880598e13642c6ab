"""The lag-per-slot halving policy of the recipe "Kafka Lag Autoscaler": replicas up to
ceil(lag / lagPerSlot) on high lag, halved on low lag, at most one operation per cooldown.

Rules, in the recipe's order (:func:`recipe_proposal`): lag > lagPerSlot scales up to
min(ceil(lag / lagPerSlot), maxParallelism) if that is above current; lag < scaleDownLag halves
current (not below minParallelism); otherwise hold. An operation less than cooldownSeconds after
the previous one is not made (``CoolingDown``). Lag (:func:`total_lag_records`) is read as
KEDA's kafka trigger with ``offsetResetPolicy: earliest`` reads it, no cap. One evaluation every
``pollingInterval`` seconds (:meth:`~LagPerSlotPolicy.due`). The full rules, the lag reading and
what it does not do (no clamp into [minParallelism, maxParallelism]: test ids
quirk-above-max-holds-until-low-lag, quirk-below-min-holds-in-band): docs/policies.md, "The
lag-per-slot halving policy".

Source: the recipe "Kafka Lag Autoscaler" (Cohestra docs, autoscaling/kafka-lag,
``KafkaLagAutoscaler.evaluate`` and its constants MIN_PARALLELISM 2, MAX_PARALLELISM 64,
LAG_PER_SLOT 50,000, SCALE_DOWN_LAG 10,000; COOLDOWN 300 s between operations).

Example:
    >>> from pytest_lagscale.config._objects import ObjectMeta
    >>> from pytest_lagscale.config.lag_per_slot import LagPerSlotConfig
    >>> policy = LagPerSlotPolicy.from_config(LagPerSlotConfig("p.yaml", ObjectMeta("c")))
    >>> d = policy.decide(Observation(2, {0: (0, 120_000), 1: (-1, 60_000)}), 0.0)
    >>> d.desired_replicas, d.reason, d.steps[0].message
    (4, 'ScaleUp', 'total lag 180,000 > lagPerSlot 50,000: ceil(lag / lagPerSlot) = 4 > current 2')
    >>> policy.due(10.0), policy.due(30.0)
    (False, True)
    >>> policy.decide(Observation(4, {0: (0, 0)}), 30.0).reason
    'CoolingDown'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pytest_lagscale.config.lag_per_slot import LagPerSlotConfig
from pytest_lagscale.control.observation import Observation, Offsets
from pytest_lagscale.control.policy.base import Decision

#: Committed offset of a partition the group never committed (as the lag source reports it).
NO_COMMITTED_OFFSET = -1


@dataclass(frozen=True)
class Proposal:
    """What the recipe's rules ask for, before the cooldown.

    Attributes:
        replicas: the replica count asked for (= current: hold).
        target: the rule's target (rule 1: the capped ceil; rule 2: the floored half), None in
            the band.
        reason: CamelCase: ``ScaleUp``, ``ScaleUpCappedAtMax``, ``ScaleDownHalved``,
            ``ScaleDownToMin`` (changes); ``NoScaleUpAtTarget``, ``AtMinParallelism``,
            ``LagWithinBand`` (holds).
        message: one line with the numbers that decided.
    """

    replicas: int
    target: int | None
    reason: str
    message: str


@dataclass(frozen=True)
class LagPerSlotStep:
    """One evaluation (event ``lag_per_slot``), a :class:`~.base.PolicyStep`.

    Attributes:
        now_s: time of the evaluation in seconds.
        total_lag_records: the group's total lag in records (None: lag could not be read).
        target_replicas: the recipe's target (see :class:`Proposal`), None in the band or
            without lag.
        replicas_before: replicas observed (``spec.replicas``).
        replicas_after: replicas the step sets (= before: hold).
        reason: :class:`Proposal` reasons, or ``CoolingDown``, ``LagUnavailable``.
        message: one line with the numbers that decided.
        cooldown_until_s: when the cooldown of the last operation ends, seconds (None: no
            operation yet).
        event: the event-log name.
        sets_desired_replicas: class constant, True: every evaluation sets the desired count.
    """

    sets_desired_replicas: ClassVar[bool] = True

    now_s: float
    total_lag_records: int | None
    target_replicas: int | None
    replicas_before: int
    replicas_after: int
    reason: str
    message: str
    cooldown_until_s: float | None
    event: str = "lag_per_slot"


def total_lag_records(offsets: Offsets) -> int:
    """Total lag in records of ``{partition: (committed, log_end)}`` (see the module docstring).

    Per partition: ``log_end - committed``; ``log_end`` when nothing is committed (-1); 0 when
    ``log_end`` is None.

    Source: kedacore/keda pkg/scalers/kafka_scaler.go getLagForPartition (offsetResetPolicy
    earliest, excludePersistentLag false) v2.20.2; docs/semantics.md §1.3
    """
    total = 0
    for committed, log_end in offsets.values():
        if log_end is None:
            continue
        total += log_end if committed == NO_COMMITTED_OFFSET else log_end - committed
    return total


def observed_lag_records(observation: Observation) -> int | None:
    """The total lag in records the policy decides on: the offsets' total
    (:func:`total_lag_records`) when the runner read offsets, else the total-lag source's value
    rounded to a record (the recipe's sources: CloudWatch's SumOffsetLag, the Confluent Metrics
    API, a Prometheus sum); None when neither has a value (the read failed, or the source had no
    datapoint under ``empty: unknown``)."""
    if observation.offsets is not None:
        return total_lag_records(observation.offsets)
    reading = observation.total_lag
    if reading is None or reading.lag_records is None:
        return None
    return int(round(reading.lag_records))


def recipe_proposal(lag: int, current: int, config: LagPerSlotConfig) -> Proposal:
    """The recipe's rules 1-3 (module docstring) for ``lag`` records at ``current`` replicas.

    Args:
        lag: total lag in records.
        current: current replicas.
        config: minParallelism, maxParallelism, lagPerSlot, scaleDownLag.

    Source: the recipe "Kafka Lag Autoscaler", ``KafkaLagAutoscaler.evaluate``.
    """
    per_slot, down, low = config.lag_per_slot_records, config.scale_down_lag_records, config.min_parallelism
    if lag > per_slot:
        wanted = math.ceil(lag / per_slot)
        target = min(wanted, config.max_parallelism)
        head = f"total lag {lag:,} > lagPerSlot {per_slot:,}: ceil(lag / lagPerSlot) = {wanted}"
        capped = f", capped at maxParallelism {target}" if target < wanted else ""
        if target > current:
            return Proposal(target, target, "ScaleUpCappedAtMax" if capped else "ScaleUp",
                            f"{head}{capped} > current {current}")
        held = Proposal(current, target, "NoScaleUpAtTarget",
                        f"{head}{capped} <= current {current}: no scale-up")
    else:
        held = Proposal(current, None, "LagWithinBand",
                        f"scaleDownLag {down:,} <= total lag {lag:,} <= lagPerSlot {per_slot:,}: "
                        f"hold at {current}")
    if lag < down:
        if current <= low:
            return Proposal(current, None, "AtMinParallelism",
                            f"total lag {lag:,} < scaleDownLag {down:,} but current {current} <= "
                            f"minParallelism {low}: hold")
        half = current // 2
        target = max(half, low)
        head = f"total lag {lag:,} < scaleDownLag {down:,}: current {current} // 2 = {half}"
        if half < low:
            return Proposal(target, target, "ScaleDownToMin", f"{head}, floored at minParallelism {low}")
        return Proposal(target, target, "ScaleDownHalved", head)
    return held


class LagPerSlotPolicy:
    """The recipe's policy as a :class:`~.base.ScalingPolicy` (module docstring).

    Args:
        config: the validated manifest (the recipe's constants, pollingInterval).

    Attributes:
        config: as given.
        name: ``lag-per-slot``.
        metrics_name: ``metadata.name``.
        min_replicas, max_replicas: minParallelism, maxParallelism.
        needs_lag, needs_cpu: True, False.
        first_decision_within_s: 0: the first decide evaluates (and sets the desired count).
        last_operation_s: time of the last change of replicas, seconds (None: none yet).

    Source: the recipe "Kafka Lag Autoscaler" (its evaluate loop, COOLDOWN between operations).
    """

    name: ClassVar[str] = "lag-per-slot"
    needs_lag: ClassVar[bool] = True
    #: The recipe reads one total: any lag source will do (``observation.total_lag``).
    reads_total_lag: ClassVar[bool] = True
    needs_cpu: ClassVar[bool] = False
    first_decision_within_s: ClassVar[float] = 0.0

    def __init__(self, config: LagPerSlotConfig):
        self.config = config
        self.metrics_name = config.name
        self.min_replicas, self.max_replicas = config.min_parallelism, config.max_parallelism
        self.last_operation_s: float | None = None
        self._next_eval_s: float | None = None

    @classmethod
    def from_config(cls, config: LagPerSlotConfig, *, created_at_s: float = 0.0) -> LagPerSlotPolicy:
        """The policy of a manifest (``created_at_s`` is unused: the recipe has no initial
        cooldown)."""
        return cls(config)

    # -- facts -------------------------------------------------------------------------------
    @property
    def source(self) -> str:
        """The manifest file (informational)."""
        return self.config.source

    @property
    def manifest_name(self) -> str:
        """The manifest file's stem (``lag-per-slot-ci``), or :attr:`metrics_name` without one."""
        return Path(self.source).stem if self.source else self.metrics_name

    @property
    def lag_threshold_records(self) -> int:
        """lagPerSlot: like KEDA's lagThreshold, the per-replica lag target (records) that
        ``ceil(lag / target)`` divides by; the run's drain and SLO hold lag to it."""
        return self.config.lag_per_slot_records

    @property
    def polling_interval_s(self) -> float:
        """Seconds between two evaluations (pollingInterval)."""
        return float(self.config.polling_interval_s)

    @property
    def cooldown_s(self) -> float:
        """Seconds between two operations (cooldownSeconds, the recipe's COOLDOWN)."""
        return float(self.config.cooldown_s)

    # -- schedule and step -----------------------------------------------------------------------
    def due(self, now_s: float) -> bool:
        """An evaluation is due at ``now_s`` (always before the first decide)."""
        return self._next_eval_s is None or now_s >= self._next_eval_s

    def decide(self, observation: Observation, now_s: float) -> Decision:
        """Evaluate if due (else a ``NotDue`` decision with no steps).

        Args:
            observation: ``current_replicas`` and ``offsets``, or ``total_lag`` when the
                run's lag source has no offsets per partition (neither: lag read failed, hold).
            now_s: time in seconds on the runner's monotonic clock.
        """
        if not self.due(now_s):
            return Decision(now_s, None)
        self._next_eval_s = now_s + self.polling_interval_s
        step = self.evaluate(observation, now_s)
        if step.replicas_after != step.replicas_before:
            self.last_operation_s = now_s
        return Decision.from_steps(now_s, (step,))

    def evaluate(self, observation: Observation, now_s: float) -> LagPerSlotStep:
        """The rules and the cooldown on ``observation`` at ``now_s`` (reads state only)."""
        current = observation.current_replicas
        until = None if self.last_operation_s is None else self.last_operation_s + self.cooldown_s
        lag = observed_lag_records(observation)
        if lag is None:
            return LagPerSlotStep(now_s, None, None, current, current, "LagUnavailable",
                                  f"consumer lag could not be read: hold at {current}", until)
        proposal = recipe_proposal(lag, current, self.config)
        if proposal.replicas != current and until is not None and now_s < until:
            return LagPerSlotStep(
                now_s, lag, proposal.target, current, current, "CoolingDown",
                f"{proposal.reason} to {proposal.replicas} blocked: {until - now_s:.1f} s left of "
                f"cooldownSeconds {self.config.cooldown_s} after the operation at "
                f"{self.last_operation_s:.1f} s", until)
        return LagPerSlotStep(now_s, lag, proposal.target, current, proposal.replicas,
                              proposal.reason, proposal.message,
                              now_s + self.cooldown_s if proposal.replicas != current else until)


__all__ = ["LagPerSlotPolicy", "LagPerSlotStep", "Proposal", "observed_lag_records", "recipe_proposal",
           "total_lag_records"]
