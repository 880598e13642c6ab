"""Cost of the scaling: replica-seconds, the oracle's replica-seconds, the ideal drain time,
and whether the group sat at minReplicaCount at baseline.

All functions read the timeline table of :mod:`pytest_lagscale.analyze.tables` (one row per
1 s step). A row's value holds from its ``t_s`` to the next row's (the last row holds 1 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

LAST_STEP_S = 1.0


@dataclass(frozen=True)
class Baseline:
    """Replica count at baseline (before the spike).

    Attributes:
        at_min: True when every baseline step had ``current_replicas == minReplicaCount``.
        fraction: share (0..1) of baseline steps at minReplicaCount; None with no steps.
    """

    at_min: bool
    fraction: float | None


def _durations_s(timeline: pd.DataFrame) -> np.ndarray:
    times = timeline["t_s"].to_numpy(dtype=float)
    return np.append(np.diff(times), LAST_STEP_S) if len(times) else times


def replica_seconds(timeline: pd.DataFrame, column: str = "ready_replicas") -> float:
    """Integral of ``column`` (default ready replicas) over time, replica-seconds."""
    return float(np.sum(timeline[column].to_numpy(dtype=float) * _durations_s(timeline)))


def oracle_replicas(rate_per_s: float, capacity_per_s: float, min_replicas: int,
                    max_replicas: int) -> int:
    """ceil(input rate / per-replica capacity) clipped to ``[min_replicas, max_replicas]``.

    Raises:
        ValueError: ``capacity_per_s`` is not positive.
    """
    if capacity_per_s <= 0:
        raise ValueError(f"capacity_per_s: {capacity_per_s!r} must be > 0 records/s; "
                         "measure one replica's throughput first")
    return int(min(max(math.ceil(rate_per_s / capacity_per_s), min_replicas), max_replicas))


def oracle_replica_seconds(timeline: pd.DataFrame, capacity_per_s: float, min_replicas: int,
                           max_replicas: int) -> float:
    """Replica-seconds a controller with perfect knowledge of the input rate would need.

    Per step, :func:`oracle_replicas` of ``produce_rate_per_s`` (records/s), integrated over
    time. It ignores backlog: it is a lower bound on what any controller needs.
    """
    rates = timeline["produce_rate_per_s"].to_numpy(dtype=float)
    replicas = [oracle_replicas(r, capacity_per_s, min_replicas, max_replicas) for r in rates]
    return float(np.sum(np.asarray(replicas, dtype=float) * _durations_s(timeline)))


def ideal_drain_time_s(backlog_records: float, max_replicas: int, capacity_per_s: float,
                       input_rate_per_s: float) -> float | None:
    """backlog / (max_replicas * capacity - input rate), seconds.

    Returns:
        Seconds; 0.0 for no backlog; None when the spare capacity is not positive (the backlog
        can never drain).
    """
    if backlog_records <= 0:
        return 0.0
    spare_per_s = max_replicas * capacity_per_s - input_rate_per_s
    return backlog_records / spare_per_s if spare_per_s > 0 else None


def baseline_at_min(timeline: pd.DataFrame, min_replicas: int, spike_start_s: float,
                    start_s: float = 0.0) -> Baseline:
    """Whether ``current_replicas == min_replicas`` in every step of ``[start_s, spike_start_s)``.

    ``start_s`` lets the caller skip the warm-up (seconds since run start).
    """
    rows = timeline[(timeline["t_s"] >= start_s) & (timeline["t_s"] < spike_start_s)]
    if not len(rows):
        return Baseline(at_min=False, fraction=None)
    fraction = float((rows["current_replicas"] == min_replicas).mean())
    return Baseline(at_min=fraction == 1.0, fraction=fraction)


def ratio(value: float | None, reference: float | None) -> float | None:
    """``value / reference``, or None when either is None or the reference is 0."""
    if value is None or reference is None or reference == 0:
        return None
    return value / reference
