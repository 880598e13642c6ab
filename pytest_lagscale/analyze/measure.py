"""Every DESIGN.md measurement of one recorded run, in one call: :func:`measure`.

``measure`` reads the timeline and event tables of :mod:`pytest_lagscale.analyze.tables` and
returns a :class:`Measurements`; :meth:`Measurements.flat` gives the metric values by the names of
:data:`METRICS`, which also gives each metric's unit and direction for the benchmark JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .cost import (Baseline, baseline_at_min, ideal_drain_time_s, oracle_replica_seconds,
                   ratio, replica_seconds)
from .lag import Drain, PeakLag, drain, lag_build_up_rate, peak_lag
from .reaction import Reaction, reaction_time
from .scale_out import ScaleOut, scale_out
from .steps import ScaleStep, direction_reversals, scale_steps
from .tables import check_timeline, spike_window

LOWER, HIGHER = "lower_is_better", "higher_is_better"

#: metric name -> (unit, direction)
METRICS: dict[str, tuple[str, str]] = {
    "reaction_time_s": ("s", LOWER),
    "detection_s": ("s", LOWER),
    "actuation_s": ("s", LOWER),
    "cold_start_s": ("s", LOWER),
    "join_s": ("s", LOWER),
    "first_fetch_s": ("s", LOWER),
    "peak_lag_records": ("records", LOWER),
    "lag_build_up_rate_per_s": ("records/s", LOWER),
    "drain_time_s": ("s", LOWER),
    "drain_monotone": ("bool", HIGHER),
    "max_dip": ("fraction", LOWER),
    "max_recovery_s": ("s", LOWER),
    "scale_steps": ("count", LOWER),
    "direction_reversals": ("count", LOWER),
    "baseline_at_min_fraction": ("fraction", HIGHER),
    "replica_seconds": ("replica-seconds", LOWER),
    "oracle_replica_seconds": ("replica-seconds", LOWER),
    "replica_seconds_ratio": ("ratio", LOWER),
    "ideal_drain_time_s": ("s", LOWER),
    "drain_time_ratio": ("ratio", LOWER),
    "cold_start_median_s": ("s", LOWER),
    "burst_load_average_max": ("tasks", LOWER),
}


@dataclass(frozen=True)
class RunSpec:
    """What the analysis must know about the run besides its tables.

    Attributes:
        lag_threshold_records: KEDA lagThreshold, records.
        min_replicas, max_replicas: minReplicaCount and maxReplicaCount.
        partitions: partitions of the topic; full parallelism = min(max_replicas, partitions).
        capacity_per_s: one replica's throughput, records/s; None skips the oracle and ideal.
        spike_start_s, spike_end_s: the spike, seconds since run start; None: from the events.
        baseline_start_s: first second counted as baseline (skips the warm-up).
    """

    lag_threshold_records: int
    min_replicas: int
    max_replicas: int
    partitions: int
    capacity_per_s: float | None = None
    spike_start_s: float | None = None
    spike_end_s: float | None = None
    baseline_start_s: float = 0.0

    @property
    def full_replicas(self) -> int:
        """Replicas that can own a partition: min(max_replicas, partitions)."""
        return min(self.max_replicas, self.partitions)


@dataclass(frozen=True)
class Measurements:
    """All measurements of one run (units as in :data:`METRICS`); ``scale_out`` decomposes
    every replica of the spike's scale-out (:mod:`.scale_out`)."""

    reaction: Reaction
    peak: PeakLag
    build_up_rate_per_s: float | None
    drain: Drain | None
    steps: tuple[ScaleStep, ...]
    baseline: Baseline | None
    replica_seconds: float
    oracle_replica_seconds: float | None
    ideal_drain_time_s: float | None
    scale_out: ScaleOut | None = None

    def flat(self) -> dict[str, float | None]:
        """Metric name (a key of :data:`METRICS`) -> value (None when not measurable)."""
        r, d, burst = self.reaction, self.drain, self.scale_out
        dips = [s.dip for s in self.steps if s.dip is not None]
        recoveries = [s.recovery_s for s in self.steps if s.recovery_s is not None]
        drain_s = d.drain_time_s if d else None
        return {
            "reaction_time_s": r.total_s, "detection_s": r.detection_s,
            "actuation_s": r.actuation_s, "cold_start_s": r.cold_start_s, "join_s": r.join_s,
            "first_fetch_s": r.first_fetch_s,
            "peak_lag_records": float(self.peak.records),
            "lag_build_up_rate_per_s": self.build_up_rate_per_s,
            "drain_time_s": drain_s,
            "drain_monotone": None if d is None else float(d.monotone),
            "max_dip": max(dips) if dips else None,
            "max_recovery_s": max(recoveries) if recoveries else None,
            "scale_steps": float(len(self.steps)),
            "direction_reversals": float(direction_reversals(list(self.steps))),
            "baseline_at_min_fraction": self.baseline.fraction if self.baseline else None,
            "replica_seconds": self.replica_seconds,
            "oracle_replica_seconds": self.oracle_replica_seconds,
            "replica_seconds_ratio": ratio(self.replica_seconds, self.oracle_replica_seconds),
            "ideal_drain_time_s": self.ideal_drain_time_s,
            "drain_time_ratio": ratio(drain_s, self.ideal_drain_time_s),
            "cold_start_median_s": burst.cold_start_median_s if burst else None,
            "burst_load_average_max": burst.load_average_max if burst else None,
        }


def _ideal_drain(timeline: pd.DataFrame, spec: RunSpec, end_s: float | None,
                 drained: Drain | None) -> float | None:
    if spec.capacity_per_s is None or end_s is None or drained is None:
        return None
    after = timeline[timeline["t_s"] >= end_s]
    if not len(after):
        return None
    if drained.drained_at_s is not None:
        after = after[after["t_s"] <= drained.drained_at_s]
    return ideal_drain_time_s(float(after["total_lag"].iloc[0]), spec.full_replicas,
                              spec.capacity_per_s, float(after["produce_rate_per_s"].mean()))


def measure(timeline: pd.DataFrame, events: pd.DataFrame, spec: RunSpec) -> Measurements:
    """Compute every measurement of one run.

    Args:
        timeline: the timeline table (one row per 1 s step).
        events: the event table (one row per event).
        spec: thresholds, replica bounds and the spike window.

    Raises:
        ConfigError: the timeline lacks a documented column.
        ValueError: the timeline is empty.
    """
    timeline = check_timeline(timeline)
    start_s, end_s = spike_window(events)
    start_s = spec.spike_start_s if spec.spike_start_s is not None else start_s
    end_s = spec.spike_end_s if spec.spike_end_s is not None else end_s
    drained = (drain(timeline, end_s, spec.lag_threshold_records, spec.full_replicas)
               if end_s is not None else None)
    oracle = (oracle_replica_seconds(timeline, spec.capacity_per_s, spec.min_replicas,
                                     spec.full_replicas) if spec.capacity_per_s else None)
    return Measurements(
        reaction=reaction_time(events, start_s),
        peak=peak_lag(timeline),
        build_up_rate_per_s=(lag_build_up_rate(timeline, start_s, end_s)
                             if start_s is not None else None),
        drain=drained,
        steps=tuple(scale_steps(timeline)),
        baseline=(baseline_at_min(timeline, spec.min_replicas, start_s, spec.baseline_start_s)
                  if start_s is not None else None),
        replica_seconds=replica_seconds(timeline),
        oracle_replica_seconds=oracle,
        ideal_drain_time_s=_ideal_drain(timeline, spec, end_s, drained),
        scale_out=scale_out(events, timeline, start_s),
    )
