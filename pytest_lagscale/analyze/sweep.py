"""Experiment 8's recommendation: the lagThreshold to use for a drain SLO, from a sweep.

Pure functions of the sweep's figures (one :class:`SweepPoint` per lagThreshold run). The
recommendation is the largest lagThreshold whose run met the drain SLO, checked against

* the rule of thumb of "KEDA Kafka Lag Scaling: Advanced Patterns": lagThreshold = per-replica
  rate x SLO x 0.75 (a replica clears its share of the threshold backlog within 3/4 of the
  SLO), with the per-replica rate measured (:func:`measured_rate_per_replica`, records/s);
* the HPA tolerance dead zone: KEDA caps the lag metric at P x lagThreshold, so a group of N
  replicas sees the ratio P / N; when that is within the HPA tolerance (10 %) the HPA does not
  scale and the group stops short of P (KEDA issues report 22 of 24 replicas: 24/22 = 1.09).
  Sources: kubernetes pkg/controller/podautoscaler/replica_calculator.go (tolerance),
  kedacore/keda pkg/scalers/kafka_scaler.go (lag cap at partitions x lagThreshold).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

#: The rule of thumb's safety factor (Advanced Patterns: rate x SLO x 0.75).
RULE_OF_THUMB_FACTOR = 0.75
#: ``--horizontal-pod-autoscaler-tolerance`` default.
HPA_TOLERANCE = 0.1


@dataclass(frozen=True)
class SweepPoint:
    """One lagThreshold run of the sweep.

    Attributes:
        lag_threshold: the run's lagThreshold, records per replica.
        drain_time_s: spike end -> total lag <= the sweep's drain target, seconds; None when
            the run never drained.
        max_replicas: the largest replica count of the run.
        lag_reached_cap: total lag reached P x lagThreshold while the group was below P (the
            HPA saw KEDA's capped metric, the dead zone's precondition).
        replica_seconds_ratio: replica-seconds over the skew-aware oracle's; None unknown.
    """

    lag_threshold: int
    drain_time_s: float | None
    max_replicas: int
    lag_reached_cap: bool = False
    replica_seconds_ratio: float | None = None

    def meets(self, drain_slo_s: float) -> bool:
        """True when the run drained within ``drain_slo_s`` seconds."""
        return self.drain_time_s is not None and self.drain_time_s <= drain_slo_s


@dataclass(frozen=True)
class Recommendation:
    """The recommended lagThreshold and its evidence (``experiment.sweep.recommendation``).

    Attributes:
        lag_threshold: the largest swept value meeting the SLO, records; None when none did.
        drain_slo_s: the SLO, seconds.
        rule_of_thumb: ``rate_per_replica_per_s``, ``factor``, ``lag_threshold`` (rate x SLO
            x factor, records), ``largest_swept_within`` (the largest swept value <= it) and
            ``agrees`` (the measurement picks that same value).
        dead_zone: see :func:`dead_zone_check`.
        evidence: one sentence with the numbers.
    """

    lag_threshold: int | None
    drain_slo_s: float
    rule_of_thumb: dict[str, Any]
    dead_zone: dict[str, Any]
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (JSON-able)."""
        return asdict(self)


def rule_of_thumb(rate_per_replica_per_s: float, drain_slo_s: float,
                  factor: float = RULE_OF_THUMB_FACTOR) -> int:
    """lagThreshold = rate x SLO x factor, records (floored).

    Raises:
        ValueError: a rate or SLO that is not > 0, or a factor outside (0, 1].
    """
    if not rate_per_replica_per_s > 0:
        raise ValueError(f"rate_per_replica_per_s: got {rate_per_replica_per_s!r}, expected "
                         "records/s > 0")
    if not drain_slo_s > 0:
        raise ValueError(f"drain_slo_s: got {drain_slo_s!r}, expected seconds > 0")
    if not 0 < factor <= 1:
        raise ValueError(f"factor: got {factor!r}, expected a number in (0, 1]")
    return math.floor(rate_per_replica_per_s * drain_slo_s * factor)


def dead_zone(partitions: int, tolerance: float = HPA_TOLERANCE) -> tuple[int, ...]:
    """Replica counts N < P at which the HPA stops short of P: P / N <= 1 + tolerance.

    >>> dead_zone(24), dead_zone(8)
    ((22, 23), ())

    Raises:
        ValueError: partitions < 1 or a tolerance outside [0, 1).
    """
    if partitions < 1:
        raise ValueError(f"partitions: got {partitions!r}, expected an integer >= 1")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance: got {tolerance!r}, expected a number in [0, 1)")
    return tuple(n for n in range(1, partitions) if partitions / n <= 1 + tolerance)


def dead_zone_check(points: Sequence[SweepPoint], partitions: int, max_replicas: int,
                    tolerance: float = HPA_TOLERANCE) -> dict[str, Any]:
    """Whether the sweep's runs could and did stop in the dead zone.

    A run hit it when its lag reached the cap and its largest replica count is a dead-zone
    count (below P and below maxReplicaCount).

    Returns:
        ``partitions``, ``tolerance``, ``ratio_p_over_p_minus_1`` (P / (P - 1)),
        ``stuck_counts`` (:func:`dead_zone`), ``possible``, ``hit_by`` (lagThresholds that
        hit it) and ``why`` (one sentence).
    """
    stuck = dead_zone(partitions, tolerance)
    ratio = partitions / (partitions - 1) if partitions > 1 else None
    hit = [p.lag_threshold for p in points if p.lag_reached_cap and p.max_replicas in stuck
           and p.max_replicas < max_replicas]
    limit = f"1 + {tolerance:g}"
    if not stuck:
        why = (f"not possible at P = {partitions}: P/(P-1) = {ratio:.3f} > {limit}, so a group "
               "one short of P still sees a ratio outside the tolerance and scales to P"
               if ratio else f"not possible at P = {partitions}")
    elif hit:
        why = (f"hit: lagThreshold {', '.join(map(str, hit))} stopped at a count in "
               f"{list(stuck)} with the lag capped at P x lagThreshold")
    else:
        why = (f"possible at P = {partitions} (counts {list(stuck)}: P/N <= {limit}) but no "
               "run stopped there")
    return {"partitions": partitions, "tolerance": tolerance,
            "ratio_p_over_p_minus_1": ratio, "stuck_counts": list(stuck),
            "possible": bool(stuck), "hit_by": hit, "why": why}


def measured_rate_per_replica(timeline: pd.DataFrame, min_lag_records: float) -> float | None:
    """Median records/s per ready replica while the group was saturated.

    Args:
        timeline: the timeline table (``total_lag``, ``ready_replicas``,
            ``consume_rate_per_s``; one row per 1 s step).
        min_lag_records: rows with at least this much lag count as saturated.

    Returns:
        The median of consume_rate / ready_replicas over saturated rows with a positive rate,
        records/s; None without such rows.
    """
    rows = timeline[(timeline["total_lag"] >= min_lag_records)
                    & (timeline["ready_replicas"] > 0) & (timeline["consume_rate_per_s"] > 0)]
    if not len(rows):
        return None
    return float((rows["consume_rate_per_s"] / rows["ready_replicas"]).median())


def recommend(points: Sequence[SweepPoint], drain_slo_s: float,
              rate_per_replica_per_s: float, partitions: int, max_replicas: int,
              tolerance: float = HPA_TOLERANCE) -> Recommendation:
    """The largest lagThreshold that met ``drain_slo_s``, checked (see the module).

    Raises:
        ValueError: no points, or an invalid rate/SLO/partitions/tolerance.
    """
    if not points:
        raise ValueError("points: got none, expected one SweepPoint per swept lagThreshold")
    ordered = sorted(points, key=lambda p: p.lag_threshold)
    passing = [p for p in ordered if p.meets(drain_slo_s)]
    chosen = passing[-1].lag_threshold if passing else None
    rot = rule_of_thumb(rate_per_replica_per_s, drain_slo_s)
    within = [p.lag_threshold for p in ordered if p.lag_threshold <= rot]
    rule = {"rate_per_replica_per_s": rate_per_replica_per_s,
            "factor": RULE_OF_THUMB_FACTOR, "lag_threshold": rot,
            "largest_swept_within": within[-1] if within else None,
            "agrees": chosen is not None and within != [] and within[-1] == chosen}
    zone = dead_zone_check(ordered, partitions, max_replicas, tolerance)
    runs = "; ".join(f"{p.lag_threshold}: " + (f"drained in {p.drain_time_s:.0f} s"
                                              if p.drain_time_s is not None else "never drained")
                     for p in ordered)
    head = (f"lagThreshold {chosen} is the largest swept value draining within "
            f"{drain_slo_s:g} s" if chosen is not None else
            f"no swept value drained within {drain_slo_s:g} s")
    evidence = (f"{head} ({runs}); rule of thumb {rate_per_replica_per_s:.0f}/s x "
                f"{drain_slo_s:g} s x {RULE_OF_THUMB_FACTOR} = {rot} "
                f"({'agrees' if rule['agrees'] else 'differs'}); dead zone {zone['why']}")
    return Recommendation(chosen, drain_slo_s, rule, zone, evidence)
