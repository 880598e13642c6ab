"""The open-model pacing loop: send every record at its scheduled time, whatever the consumers do.

Every ``tick_s`` (default 5 ms) the loop wakes, computes from the :class:`Schedule` how many
records are due by now, stamps them with the wall-clock time and hands them to a :class:`Sink`
in chunks. A record's send time comes from the schedule, never from when earlier sends
completed: a slow sink makes records late (reported as send delay and a lower achieved rate),
it does not lower the offered load. Time comes from a :class:`~pytest_lagscale.contract.clock.Clock`,
so tests drive the loop with a ``FakeClock``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import numpy as np

from ..contract.clock import Clock
from .events import EventSource
from .report import StepResult
from .schedule import Schedule

_MIN_SLEEP_S = 1e-6


@runtime_checkable
class Sink(Protocol):
    """Where paced events go (the Kafka producer in runs, a list in tests)."""

    def send(self, events: np.ndarray) -> None:
        """Hand over ``events`` (``EVENT_DTYPE``, ``ts`` stamped); must not keep the array."""

    def poll(self) -> None:
        """Serve pending callbacks without blocking."""


@dataclass(frozen=True)
class PacingOptions:
    """Tuning of the pacing loop.

    Attributes:
        tick_s: seconds between wake-ups while the loop is on schedule.
        max_chunk_records: most events per ``Sink.send`` call.
        delay_tolerance_s: a step with a larger send delay (seconds) did not keep up.
        rate_tolerance: a step achieving less than (1 - this) x its requested rate did not
            keep up (fraction).
        progress_every_s: seconds between ``progress`` callbacks.
    """

    tick_s: float = 0.005
    max_chunk_records: int = 8192
    delay_tolerance_s: float = 1.0
    rate_tolerance: float = 0.05
    progress_every_s: float = 10.0


@dataclass(frozen=True)
class PacingResult:
    """Outcome of :func:`run_open_model`.

    Attributes:
        steps: one result per schedule step.
        sent_records: records handed to the sink.
        elapsed_s: seconds from the start to the end of the loop.
        max_send_delay_s: largest send delay, seconds.
        started_wall_ns: wall-clock time of the start, ns since the epoch.
        interrupted: the loop stopped early (``should_stop`` returned True).
    """

    steps: tuple[StepResult, ...]
    sent_records: int
    elapsed_s: float
    max_send_delay_s: float
    started_wall_ns: int
    interrupted: bool = False

    @property
    def kept_up(self) -> bool:
        """True when every step kept up."""
        return all(s.kept_up for s in self.steps)


class _StepStats:
    __slots__ = ("sent", "last_send_s", "max_delay_s")

    def __init__(self) -> None:
        self.sent = 0
        self.last_send_s = -math.inf
        self.max_delay_s = 0.0


def run_open_model(
    schedule: Schedule,
    source: EventSource,
    sink: Sink,
    clock: Clock,
    *,
    options: PacingOptions = PacingOptions(),
    wall_ns: Callable[[], int] = time.time_ns,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Callable[[float, int], None] | None = None,
) -> PacingResult:
    """Send the schedule's records to ``sink`` at their scheduled times (open model).

    Args:
        schedule: the rate schedule; record i is due ``schedule.send_time(i)`` seconds after
            the start.
        source: the events, taken in order.
        sink: receives the events, stamped with ``ts`` = ``wall_ns()`` at hand-over.
        clock: monotonic time; the run starts at its current ``now()``.
        options: pacing tuning and the kept-up tolerances.
        wall_ns: wall-clock source for ``ts``, ns since the epoch.
        should_stop: polled every tick; True ends the run early (``interrupted``).
        progress: called as ``progress(elapsed_s, sent_records)`` every
            ``options.progress_every_s`` seconds.

    Returns:
        Per-step requested vs achieved rates, send delays and the kept-up verdicts.
    """
    stats = [_StepStats() for _ in schedule.steps]
    started_wall_ns = wall_ns()
    t0, sent, last_tick, interrupted = clock.now(), 0, -math.inf, False
    next_progress = options.progress_every_s
    while True:
        now = clock.now() - t0
        due = schedule.due_count(now)
        if due > sent:
            last_tick = now
            sent = _send_due(schedule, source, sink, clock, t0, sent, due, stats, options,
                             wall_ns)
            now = clock.now() - t0
        sink.poll()
        if sent >= schedule.total_records and now >= schedule.end_s:
            break
        if should_stop():
            interrupted = True
            break
        if progress is not None and now >= next_progress:
            progress(now, sent)
            next_progress += options.progress_every_s
        next_s = schedule.send_time(sent) if sent < schedule.total_records else schedule.end_s
        wake = max(next_s, last_tick + options.tick_s)
        if wake > now:  # at least 1 us, so that float rounding cannot stall a fake clock
            clock.sleep(max(wake - now, _MIN_SLEEP_S))
    steps = tuple(_step_result(schedule, j, st, options) for j, st in enumerate(stats))
    return PacingResult(steps, sent, clock.now() - t0, max(s.max_send_delay_s for s in steps),
                        started_wall_ns, interrupted)


def _send_due(schedule: Schedule, source: EventSource, sink: Sink, clock: Clock, t0: float,
              sent: int, due: int, stats: list[_StepStats], options: PacingOptions,
              wall_ns: Callable[[], int]) -> int:
    """Send records ``sent .. due - 1`` in chunks that never span two steps; returns ``due``."""
    while sent < due:
        j = schedule.step_of_record(sent)
        stop = min(due, schedule.records_in_step(j).stop)
        events = source.chunk(min(stop - sent, options.max_chunk_records))
        t_send = clock.now() - t0
        events["ts"] = wall_ns()
        sink.send(events)
        t_done = clock.now() - t0  # the chunk's last record has been handed over now
        # delay grows or shrinks linearly across a chunk: its extremes are the two ends
        delay = max(t_send - schedule.send_time(sent),
                    t_done - schedule.send_time(sent + len(events) - 1))
        st = stats[j]
        st.sent += len(events)
        st.last_send_s = t_done
        st.max_delay_s = max(st.max_delay_s, delay)
        sent += len(events)
    return sent


def _step_result(schedule: Schedule, j: int, st: _StepStats,
                 options: PacingOptions) -> StepResult:
    step = schedule.steps[j]
    requested = len(schedule.records_in_step(j))
    duration = max(step.end_s, st.last_send_s) - step.start_s
    achieved = st.sent / duration
    kept_up = (st.sent == requested
               and achieved >= (1 - options.rate_tolerance) * requested / step.duration_s
               and st.max_delay_s <= options.delay_tolerance_s)
    return StepResult(step.label, step.start_s, step.end_s, step.rate_per_s, requested, st.sent,
                      duration, achieved, st.max_delay_s, kept_up)
