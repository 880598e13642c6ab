"""The consume-rate dip of one rebalance, its recovery and its cost (DESIGN.md "Measurements").

With ``a`` the step's anchor (:mod:`.rebalance`) and ``r(t)`` the group's windowed rate
(:meth:`.store_rate.StoreTimes.windowed_rate`, records/s, on a 0.1 s grid, window W):

* **rate before** = median of ``r`` over ``[a - 10, a)``.
* **saturated** = the timeline's ``total_lag`` stayed >= rate before x W on every row of
  ``[a - 10, a + 10]``: at every moment at least one window's worth of records was waiting, so a
  fall of the windowed rate is not the group running out of work. This is the group's backlog,
  not each partition's: a partition with no backlog of its own inside a saturated group can
  still lower the rate.
* **dip** = max(0, 1 - min(``r`` over ``[a, a + 10)``) / rate before), a fraction; None with a
  reason when there is no rate before (``"no rate before"``) or the group was not saturated
  (``"not saturated"``). The rate window smooths: a pause of p seconds reads as a dip of
  about min(p / W, 1).
* **recovery** = seconds from ``a`` to the first grid time after the lowest ``r`` of
  ``[a, a + 10)`` at which ``r`` is back to >= 95 % of the rate before; 0.0 when that lowest
  rate is not below 95 %; None when it never came back before the store's last record. It
  includes up to one window of smoothing.
* **rebalance cost** = integral over ``[a, a + 10)`` of max(0, rate before - ``r``), records:
  the work the rebalance cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .store_rate import BIN_S, StoreTimes

STEP_WINDOW_S = 10.0
RECOVERED_FRACTION = 0.95


@dataclass(frozen=True)
class Dip:
    """The dip of one rebalance (see the module docstring).

    Attributes:
        dip: fraction 0..1, or None (then ``reason`` says why).
        reason: ``"no rate before"`` or ``"not saturated"`` when ``dip`` is None, else None.
        recovery_s: seconds from the anchor; None when not measured or never recovered.
        cost_records: records; None when ``dip`` is None.
        rate_before_per_s: the median rate before, records/s (also when not saturated).
    """

    dip: float | None
    reason: str | None
    recovery_s: float | None = None
    cost_records: float | None = None
    rate_before_per_s: float | None = None


def saturated(timeline: pd.DataFrame, anchor_s: float, work_records: float) -> bool:
    """True when ``total_lag`` >= ``work_records`` on every timeline row of
    ``[anchor_s - 10, anchor_s + 10]`` (and there is at least one such row)."""
    times = timeline["t_s"].to_numpy(dtype=float)
    rows = (times >= anchor_s - STEP_WINDOW_S) & (times <= anchor_s + STEP_WINDOW_S)
    lag = timeline["total_lag"].to_numpy(dtype=float)[rows]
    return bool(len(lag)) and bool(lag.min() >= work_records)


def _recovery_s(times: np.ndarray, rate: np.ndarray, anchor_s: float, target: float,
                after: np.ndarray) -> float | None:
    lowest = np.flatnonzero(after)[np.argmin(rate[after])]
    if rate[lowest] >= target:
        return 0.0
    back = np.flatnonzero((np.arange(len(rate)) > lowest) & (rate >= target))
    return round(float(times[back[0]] - anchor_s), 6) if len(back) else None


def rebalance_dip(store: StoreTimes, timeline: pd.DataFrame, anchor_s: float) -> Dip:
    """Dip, recovery and cost of the rebalance that starts at ``anchor_s`` (run seconds).

    Args:
        store: the store's record times.
        timeline: the timeline table (``t_s``, ``total_lag``; one row per 1 s step).
        anchor_s: the rebalance's start, seconds since run start.
    """
    span = store.span_s
    if span is None:
        return Dip(None, "no rate before")
    times, rate = store.windowed_rate(anchor_s - STEP_WINDOW_S, span[1] + BIN_S)
    before = rate[times < anchor_s]
    median = float(np.median(before)) if len(before) else 0.0
    if median <= 0:
        return Dip(None, "no rate before", rate_before_per_s=median if len(before) else None)
    if not saturated(timeline, anchor_s, median * store.rate_window_s):
        return Dip(None, "not saturated", rate_before_per_s=median)
    after = (times >= anchor_s) & (times < anchor_s + STEP_WINDOW_S)
    if not after.any():
        return Dip(None, "no rate after", rate_before_per_s=median)
    dip = max(0.0, 1.0 - float(rate[after].min()) / median)
    target = RECOVERED_FRACTION * median
    cost = float(np.sum(np.maximum(median - rate[after], 0.0)) * BIN_S)
    return Dip(dip, None, _recovery_s(times, rate, anchor_s, target, after), cost, median)
