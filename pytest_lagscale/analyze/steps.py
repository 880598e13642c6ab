"""Scale steps of the timeline, with the consume-rate dip, recovery and direction reversals.

Definitions (DESIGN.md "Measurements"): a scale step is one change of replica count; its dip is
1 - (min 1 s group consume rate in the 10 s after the step) / (median rate in the 10 s before);
its recovery is the seconds until the rate is back to >= 95 % of that median; a direction
reversal (flip) is a step whose direction differs from the previous step's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

STEP_WINDOW_S = 10.0
RECOVERED_FRACTION = 0.95


@dataclass(frozen=True)
class ScaleStep:
    """One change of replica count.

    Attributes:
        t_s: first step (seconds since run start) with the new count; the rows before it
            (``[t_s - 10, t_s)``) are "before", the rows in ``[t_s, t_s + 10)`` are "after".
        replicas_before, replicas_after: the counts.
        direction: ``"up"`` or ``"down"``.
        reversal: True when ``direction`` differs from the previous step's.
        dip: 1 - min(after rate) / median(before rate), a fraction (negative when the rate
            only rose); None when there is no before/after data or the median is 0.
        recovery_s: seconds from ``t_s`` to the first step, at or after the first rate below
            95 % of the median, with rate >= 95 % of it; 0.0 when the rate never fell below
            it in the after window; None when it never recovered or ``dip`` is None.
    """

    t_s: float
    replicas_before: int
    replicas_after: int
    direction: str
    reversal: bool
    dip: float | None
    recovery_s: float | None


def _dip_and_recovery(timeline: pd.DataFrame, t_s: float) -> tuple[float | None, float | None]:
    times = timeline["t_s"].to_numpy()
    rates = timeline["consume_rate_per_s"].to_numpy(dtype=float)
    before = rates[(times >= t_s - STEP_WINDOW_S) & (times < t_s)]
    after_mask = (times >= t_s) & (times < t_s + STEP_WINDOW_S)
    if not len(before) or not after_mask.any():
        return None, None
    median = float(np.median(before))
    if median <= 0:
        return None, None
    dip = 1.0 - float(rates[after_mask].min()) / median
    target = RECOVERED_FRACTION * median
    below = np.flatnonzero(after_mask & (rates < target))
    if not len(below):
        return dip, 0.0
    later = np.flatnonzero((np.arange(len(rates)) > below[0]) & (rates >= target))
    return dip, (float(times[later[0]] - t_s) if len(later) else None)


def scale_steps(timeline: pd.DataFrame, column: str = "current_replicas") -> list[ScaleStep]:
    """Every change of ``column`` (default the Deployment's replica count), in time order.

    Args:
        timeline: the timeline table (one row per 1 s step).
        column: the replica-count column to follow (``current_replicas``, ``ready_replicas``
            or ``desired_replicas``).

    Returns:
        One :class:`ScaleStep` per row whose count differs from the previous row's.
    """
    counts = timeline[column].to_numpy()
    steps: list[ScaleStep] = []
    for index in np.flatnonzero(np.diff(counts)) + 1:
        before, after = int(counts[index - 1]), int(counts[index])
        direction = "up" if after > before else "down"
        t_s = float(timeline["t_s"].iloc[index])
        dip, recovery = _dip_and_recovery(timeline, t_s)
        reversal = bool(steps) and steps[-1].direction != direction
        steps.append(ScaleStep(t_s, before, after, direction, reversal, dip, recovery))
    return steps


def direction_reversals(steps: list[ScaleStep]) -> int:
    """Number of direction reversals (flips) among ``steps``."""
    return sum(step.reversal for step in steps)
