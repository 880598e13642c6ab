"""Every DESIGN.md measurement of one recorded run, in one call: :func:`measure`.

``measure`` reads the timeline and event tables of :mod:`pytest_lagscale.analyze.tables` (and,
when given, the store's record times of :mod:`.store_rate`) and returns a :class:`Measurements`;
:meth:`Measurements.flat` gives the metric values by the names of :data:`METRICS`, which also
gives each metric's unit and direction for the benchmark JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from . import skew
from .cost import (Baseline, baseline_at_min, ideal_drain_time_s, oracle_replica_seconds,
                   ratio, replica_seconds)
from .lag import Drain, PeakLag, drain, lag_build_up_rate, peak_lag
from .reaction import Reaction, reaction_time
from .scale_out import ScaleOut, scale_out
from .steps import ScaleStep, direction_reversals, scale_steps
from .store_rate import StoreTimes
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
    "mean_dip": ("fraction", LOWER),
    "max_recovery_s": ("s", LOWER),
    "rebalance_cost_records": ("records", LOWER),
    "rate_window_s": ("s", LOWER),
    "scale_steps": ("count", LOWER),
    "direction_reversals": ("count", LOWER),
    "baseline_at_min_fraction": ("fraction", HIGHER),
    "replica_seconds": ("replica-seconds", LOWER),
    "oracle_replica_seconds": ("replica-seconds", LOWER),
    "replica_seconds_ratio": ("ratio", LOWER),
    "ideal_drain_time_s": ("s", LOWER),
    "drain_time_ratio": ("ratio", LOWER),
    "even_spread_oracle_replica_seconds": ("replica-seconds", LOWER),
    "even_spread_replica_seconds_ratio": ("ratio", LOWER),
    "even_spread_ideal_drain_time_s": ("s", LOWER),
    "even_spread_drain_time_ratio": ("ratio", LOWER),
    "hottest_partition_share": ("fraction", LOWER),
    "oracle_capped_s": ("s", LOWER),
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
        partition_counts: records acknowledged per partition, index = partition (the
            producer manifest's ``Manifest.counts()`` in partition order); None: the oracle and
            ideal drain assume uniform shares (:mod:`.skew`).
    """

    lag_threshold_records: int
    min_replicas: int
    max_replicas: int
    partitions: int
    capacity_per_s: float | None = None
    spike_start_s: float | None = None
    spike_end_s: float | None = None
    baseline_start_s: float = 0.0
    partition_counts: tuple[int, ...] | None = None

    @property
    def full_replicas(self) -> int:
        """Replicas that can own a partition: min(max_replicas, partitions)."""
        return min(self.max_replicas, self.partitions)


@dataclass(frozen=True)
class Measurements:
    """All measurements of one run (units as in :data:`METRICS`); ``scale_out`` decomposes
    every replica of the spike's scale-out (:mod:`.scale_out`).

    ``oracle_replica_seconds`` and ``ideal_drain_time_s`` honour skew and whole-partition
    assignment (:mod:`.skew`); the ``even_spread_*`` fields are the figures that assume the input
    spreads evenly over the replicas (:mod:`.cost`). ``ideal`` details the ideal drain,
    ``shares`` are the partitions' input shares (``shares_source``: ``"manifest"`` or
    ``"uniform"``), ``oracle_capped_s`` the seconds the oracle sat at full replicas without
    keeping up, ``rate_window_s`` / ``batch_interval_s`` the store's rate window and
    micro-batch interval (None without a store).
    """

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
    even_spread_oracle_replica_seconds: float | None = None
    even_spread_ideal_drain_time_s: float | None = None
    ideal: skew.IdealDrain | None = None
    oracle_capped_s: float | None = None
    shares: tuple[float, ...] = ()
    shares_source: str = "uniform"
    rate_window_s: float | None = None
    batch_interval_s: float | None = None

    def detail(self) -> dict[str, Any]:
        """The benchmark JSON's ``steps`` (every :class:`ScaleStep` field, one mapping per
        step) and ``skew`` (shares and their source, the ideal drain's bounds, the oracle's
        capped seconds, the rate window and batch interval) sections."""
        return {"steps": [step.to_dict() for step in self.steps],
                "skew": {"shares": list(self.shares), "shares_source": self.shares_source,
                         "ideal_drain": self.ideal.to_dict() if self.ideal else None,
                         "oracle_capped_s": self.oracle_capped_s,
                         "rate_window_s": self.rate_window_s,
                         "batch_interval_s": self.batch_interval_s}}

    def _step_metrics(self) -> dict[str, float | None]:
        dips = [s.dip for s in self.steps if s.dip is not None]
        recoveries = [s.recovery_s for s in self.steps if s.recovery_s is not None]
        costs = [s.rebalance_cost_records for s in self.steps
                 if s.rebalance_cost_records is not None]
        return {"max_dip": max(dips) if dips else None,
                "mean_dip": sum(dips) / len(dips) if dips else None,
                "max_recovery_s": max(recoveries) if recoveries else None,
                "rebalance_cost_records": sum(costs) if costs else None,
                "rate_window_s": self.rate_window_s,
                "scale_steps": float(len(self.steps)),
                "direction_reversals": float(direction_reversals(list(self.steps)))}

    def _cost_metrics(self, drain_s: float | None) -> dict[str, float | None]:
        return {
            "replica_seconds": self.replica_seconds,
            "oracle_replica_seconds": self.oracle_replica_seconds,
            "replica_seconds_ratio": ratio(self.replica_seconds, self.oracle_replica_seconds),
            "ideal_drain_time_s": self.ideal_drain_time_s,
            "drain_time_ratio": ratio(drain_s, self.ideal_drain_time_s),
            "even_spread_oracle_replica_seconds": self.even_spread_oracle_replica_seconds,
            "even_spread_replica_seconds_ratio": ratio(self.replica_seconds,
                                                       self.even_spread_oracle_replica_seconds),
            "even_spread_ideal_drain_time_s": self.even_spread_ideal_drain_time_s,
            "even_spread_drain_time_ratio": ratio(drain_s, self.even_spread_ideal_drain_time_s),
            "hottest_partition_share": max(self.shares) if self.shares else None,
            "oracle_capped_s": self.oracle_capped_s,
        }

    def flat(self) -> dict[str, float | None]:
        """Metric name (a key of :data:`METRICS`) -> value (None when not measurable)."""
        r, d, burst = self.reaction, self.drain, self.scale_out
        drain_s = d.drain_time_s if d else None
        values = {
            "reaction_time_s": r.total_s, "detection_s": r.detection_s,
            "actuation_s": r.actuation_s, "cold_start_s": r.cold_start_s, "join_s": r.join_s,
            "first_fetch_s": r.first_fetch_s,
            "peak_lag_records": float(self.peak.records),
            "lag_build_up_rate_per_s": self.build_up_rate_per_s,
            "drain_time_s": drain_s,
            "drain_monotone": None if d is None else float(d.monotone),
            **self._step_metrics(),
            "baseline_at_min_fraction": self.baseline.fraction if self.baseline else None,
            **self._cost_metrics(drain_s),
            "cold_start_median_s": burst.cold_start_median_s if burst else None,
            "burst_load_average_max": burst.load_average_max if burst else None,
        }
        return {name: values[name] for name in METRICS}


@dataclass(frozen=True)
class _DrainInputs:
    """The drain's starting point: backlog at the spike end (records), its time (s) and the
    mean produce rate during the drain (records/s)."""

    backlog_records: float
    at_s: float
    input_rate_per_s: float


def _drain_inputs(timeline: pd.DataFrame, end_s: float | None,
                  drained: Drain | None) -> _DrainInputs | None:
    if end_s is None or drained is None:
        return None
    after = timeline[timeline["t_s"] >= end_s]
    if not len(after):
        return None
    if drained.drained_at_s is not None:
        after = after[after["t_s"] <= drained.drained_at_s]
    return _DrainInputs(float(after["total_lag"].iloc[0]), float(after["t_s"].iloc[0]),
                        float(after["produce_rate_per_s"].mean()))


def _costs(timeline: pd.DataFrame, spec: RunSpec, start: _DrainInputs | None,
           store: StoreTimes | None) -> dict[str, Any]:
    """The oracle and ideal-drain fields of :class:`Measurements` (skewed and even spread)."""
    shares = skew.partition_shares(spec.partition_counts, spec.partitions)
    out: dict[str, Any] = {
        "shares": shares,
        "shares_source": "manifest" if spec.partition_counts and sum(spec.partition_counts)
        else "uniform"}
    capacity = spec.capacity_per_s
    if not capacity:
        return {**out, "oracle_replica_seconds": None, "ideal_drain_time_s": None}
    oracle, capped = skew.oracle_replica_seconds(timeline, shares, capacity, spec.min_replicas,
                                                 spec.full_replicas)
    out.update(oracle_replica_seconds=oracle, oracle_capped_s=capped,
               even_spread_oracle_replica_seconds=oracle_replica_seconds(
                   timeline, capacity, spec.min_replicas, spec.full_replicas),
               ideal_drain_time_s=None)
    if start is None:
        return out
    backlogs = (store.backlog_at(start.at_s, spec.partitions) if store is not None
                and store.span_s is not None and len(store.produced) else None)
    ideal = skew.ideal_drain(start.backlog_records, backlogs, shares, capacity,
                             spec.full_replicas, start.input_rate_per_s)
    out.update(ideal=ideal, ideal_drain_time_s=ideal.time_s,
               even_spread_ideal_drain_time_s=ideal_drain_time_s(
                   start.backlog_records, spec.full_replicas, capacity,
                   start.input_rate_per_s))
    return out


def measure(timeline: pd.DataFrame, events: pd.DataFrame, spec: RunSpec,
            store: StoreTimes | None = None) -> Measurements:
    """Compute every measurement of one run.

    Args:
        timeline: the timeline table (one row per 1 s step).
        events: the event table (one row per event).
        spec: thresholds, replica bounds, the spike window and the partitions' input counts.
        store: the store's record times (:func:`.store_rate.read_store_times`); None: every
            step's dip is None with the reason ``"no store"`` and the ideal drain estimates
            per-partition backlogs as total x share.

    Raises:
        ConfigError: the timeline lacks a documented column.
        ValueError: the timeline is empty, or ``spec.partition_counts`` does not have one
            count per partition.
    """
    timeline = check_timeline(timeline)
    start_s, end_s = spike_window(events)
    start_s = spec.spike_start_s if spec.spike_start_s is not None else start_s
    end_s = spec.spike_end_s if spec.spike_end_s is not None else end_s
    drained = (drain(timeline, end_s, spec.lag_threshold_records, spec.full_replicas)
               if end_s is not None else None)
    return Measurements(
        reaction=reaction_time(events, start_s),
        peak=peak_lag(timeline),
        build_up_rate_per_s=(lag_build_up_rate(timeline, start_s, end_s)
                             if start_s is not None else None),
        drain=drained,
        steps=tuple(scale_steps(timeline, events=events, store=store)),
        baseline=(baseline_at_min(timeline, spec.min_replicas, start_s, spec.baseline_start_s)
                  if start_s is not None else None),
        replica_seconds=replica_seconds(timeline),
        scale_out=scale_out(events, timeline, start_s),
        rate_window_s=store.rate_window_s if store is not None else None,
        batch_interval_s=store.batch_interval_s if store is not None else None,
        **_costs(timeline, spec, _drain_inputs(timeline, end_s, drained), store),
    )
