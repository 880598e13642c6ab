"""A piecewise-constant rate schedule and the send time of every record in it.

The schedule is the open model's contract: record ``i`` (0-based, over the whole run) is due at
``send_time(i)``, the moment the integral of the rate since the start passes ``i``. Send times
depend only on the schedule, never on how fast earlier sends completed.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Sequence

_EPS = 1e-6  # records; absorbs float error in rate x duration products


@dataclass(frozen=True)
class Step:
    """One constant-rate interval of a schedule.

    Attributes:
        start_s: start, seconds since the run's start (inclusive).
        end_s: end, seconds since the run's start (exclusive); > ``start_s``.
        rate_per_s: records per second, >= 0.
        label: short name shown in reports (``baseline``, ``spike``, ``high-3``).
    """

    start_s: float
    end_s: float
    rate_per_s: float
    label: str

    @property
    def duration_s(self) -> float:
        """Length of the step in seconds."""
        return self.end_s - self.start_s


class Schedule:
    """Record counts and send times of a list of contiguous steps.

    Args:
        steps: contiguous steps, the first starting at 0 s, each ending where the next starts.

    Raises:
        ValueError: the steps are empty, not contiguous, or have a negative rate.
    """

    def __init__(self, steps: Sequence[Step]):
        if not steps:
            raise ValueError("steps: empty; a schedule needs at least one step")
        prev_end = 0.0
        for i, step in enumerate(steps):
            if step.start_s != prev_end or step.end_s <= step.start_s or step.rate_per_s < 0:
                raise ValueError(f"steps[{i}]: {step!r} does not continue at {prev_end} s")
            prev_end = step.end_s
        self.steps: tuple[Step, ...] = tuple(steps)
        self._starts = [s.start_s for s in steps]
        self._cum_start: list[float] = []
        cum = 0.0
        for s in steps:
            self._cum_start.append(cum)
            cum += s.rate_per_s * s.duration_s
        self._cum_end = self._cum_start[1:] + [cum]
        # first record index of each step, and one past the last record of the run
        self._first_record = [_ceil(c) for c in self._cum_start]
        self.total_records: int = _ceil(cum)
        self._record_ends = self._first_record[1:] + [self.total_records]

    @property
    def end_s(self) -> float:
        """End of the last step, seconds."""
        return self.steps[-1].end_s

    def records_in_step(self, index: int) -> range:
        """Indices of the records step ``index`` sends (``range``, possibly empty)."""
        return range(self._first_record[index], self._record_ends[index])

    def step_of_record(self, record: int) -> int:
        """Index of the step that sends record ``record`` (0 <= record < total_records)."""
        return bisect.bisect_right(self._first_record, record) - 1 if record >= 0 else 0

    def cumulative(self, t_s: float) -> float:
        """Integral of the rate from 0 to ``t_s`` seconds, in records (clamped to the run)."""
        if t_s <= 0:
            return 0.0
        j = max(0, bisect.bisect_right(self._starts, t_s) - 1)
        step = self.steps[j]
        return self._cum_start[j] + (min(t_s, step.end_s) - step.start_s) * step.rate_per_s

    def due_count(self, t_s: float) -> int:
        """Number of records whose send time is at or before ``t_s`` seconds."""
        n = min(self.total_records, _ceil(self.cumulative(t_s)))
        if n < self.total_records and self.send_time(n) <= t_s:
            n += 1  # t_s is exactly the send time of record n
        return n

    def send_time(self, record: int) -> float:
        """Send time of record ``record`` in seconds since the start.

        Raises:
            IndexError: ``record`` is outside 0 .. total_records - 1.
        """
        if not 0 <= record < self.total_records:
            raise IndexError(f"record: {record!r} outside 0..{self.total_records - 1}")
        j = bisect.bisect_right(self._first_record, record) - 1
        while self._record_ends[j] <= record:  # skip zero-record steps sharing the start
            j += 1
        step = self.steps[j]
        offset = (record - self._cum_start[j]) / step.rate_per_s
        return step.start_s + min(max(offset, 0.0), step.duration_s)


def _ceil(records: float) -> int:
    return max(0, math.ceil(records - _EPS))
