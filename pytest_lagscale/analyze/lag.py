"""Lag measurements on the timeline: peak, build-up rate, drain time and drain monotonicity.

Every function takes the timeline table of :mod:`pytest_lagscale.analyze.tables` (one row per
1 s step; ``t_s`` seconds, ``total_lag`` records, replica counts as int64, rates in records/s).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

DRAIN_WINDOW_S = 10.0


@dataclass(frozen=True)
class PeakLag:
    """The largest total lag: ``records`` at ``t_s`` (seconds since run start)."""

    records: int
    t_s: float


@dataclass(frozen=True)
class Drain:
    """How the backlog drained after the spike.

    Attributes:
        drain_time_s: spike end -> first step with total lag <= 1 x lagThreshold; None if never.
        drained_at_s: ``t_s`` of that step, or None.
        monotone: True when every 10 s mean of total lag at full parallelism (between spike
            end and drained) is strictly below the previous one; vacuously True for < 2 windows.
        window_means: those 10 s means, records, in time order.
        first_violation_s: start (``t_s``) of the first window not below its predecessor.
    """

    drain_time_s: float | None
    drained_at_s: float | None
    monotone: bool
    window_means: tuple[float, ...]
    first_violation_s: float | None = None


def peak_lag(timeline: pd.DataFrame) -> PeakLag:
    """The first step with the largest ``total_lag``; raises ValueError on an empty table."""
    if not len(timeline):
        raise ValueError("timeline: is empty; record at least one step")
    index = int(np.argmax(timeline["total_lag"].to_numpy()))
    return PeakLag(int(timeline["total_lag"].iloc[index]), float(timeline["t_s"].iloc[index]))


def scale_out_effective_s(timeline: pd.DataFrame, spike_start_s: float) -> float | None:
    """``t_s`` of the first step after ``spike_start_s`` with more ready replicas than at it."""
    after = timeline[timeline["t_s"] >= spike_start_s]
    if not len(after):
        return None
    more = after[after["ready_replicas"] > after["ready_replicas"].iloc[0]]
    return float(more["t_s"].iloc[0]) if len(more) else None


def lag_build_up_rate(timeline: pd.DataFrame, spike_start_s: float,
                      spike_end_s: float | None = None) -> float | None:
    """Records/s the lag grew during the spike before the first scale-out took effect.

    The window runs from the step at ``spike_start_s`` to the first step with more ready
    replicas (or the spike end, or the last step, whichever comes first); the rate is
    (lag at window end - lag at window start) / window length.

    Returns:
        Records per second, or None when the window is shorter than 1 s.
    """
    end_s = scale_out_effective_s(timeline, spike_start_s)
    candidates = [s for s in (end_s, spike_end_s, float(timeline["t_s"].iloc[-1]))
                  if s is not None]
    end_s = min(candidates)
    window = timeline[(timeline["t_s"] >= spike_start_s) & (timeline["t_s"] <= end_s)]
    if len(window) < 2 or window["t_s"].iloc[-1] - window["t_s"].iloc[0] < 1.0:
        return None
    lag = window["total_lag"].to_numpy(dtype=float)
    seconds = window["t_s"].iloc[-1] - window["t_s"].iloc[0]
    return float((lag[-1] - lag[0]) / seconds)


def _window_means(rows: pd.DataFrame) -> tuple[list[float], list[float]]:
    if not len(rows):
        return [], []
    t0 = rows["t_s"].iloc[0]
    bins = ((rows["t_s"] - t0) // DRAIN_WINDOW_S).astype(int)
    grouped = rows.groupby(bins, sort=True)
    starts = (t0 + grouped["t_s"].first().index * DRAIN_WINDOW_S).tolist()
    return grouped["total_lag"].mean().astype(float).tolist(), starts


def drain(timeline: pd.DataFrame, spike_end_s: float, lag_threshold_records: int,
          full_replicas: int) -> Drain:
    """Drain time and monotonicity after the spike.

    Args:
        timeline: the timeline table.
        spike_end_s: spike end, seconds since run start.
        lag_threshold_records: KEDA lagThreshold (records); drained means total lag <= 1x it.
        full_replicas: ready replicas that count as full parallelism, usually
            ``min(maxReplicaCount, partitions)``.

    Returns:
        A :class:`Drain`. Windows are 10 s bins of the steps in ``[spike_end_s, drained]`` (to
        the end of the timeline when never drained) with ``ready_replicas >= full_replicas``.
    """
    after = timeline[timeline["t_s"] >= spike_end_s]
    done = after[after["total_lag"] <= lag_threshold_records]
    drained_at = float(done["t_s"].iloc[0]) if len(done) else None
    span = after if drained_at is None else after[after["t_s"] <= drained_at]
    means, starts = _window_means(span[span["ready_replicas"] >= full_replicas])
    violation = next((starts[i] for i in range(1, len(means)) if means[i] >= means[i - 1]),
                     None)
    return Drain(
        drain_time_s=None if drained_at is None else drained_at - spike_end_s,
        drained_at_s=drained_at,
        monotone=violation is None,
        window_means=tuple(means),
        first_violation_s=violation,
    )
