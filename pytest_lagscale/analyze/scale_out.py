"""Where each new replica's time went in a scale-out, and how loaded the machine was meanwhile.

:mod:`.reaction` follows one replica. When the autoscaler scales 1 -> 8 on a 2-core machine,
seven JVMs start at once and their cold starts stretch with the load; :func:`scale_out`
decomposes every replica started at or after the spike start (a :class:`ReplicaStart` each;
replicas that existed before the spike are left out, as in :mod:`.reaction`):

* ``started_s``: spike start -> the replica's ``replica_started`` (seconds);
* actuation: the scale decision that asked for it -> ``replica_started``; that decision is the
  last ``decision`` with ``desired_replicas > current_replicas`` at or before its start;
* cold start: ``replica_started`` -> ready, "ready" as in :mod:`.reaction` (the earlier of the
  replica's ``engine_ready`` and the platform's ``replica_ready``);
* engine startup: the replica's own ``engine_ready.startup_s`` field (its engine start alone);
* join: ready -> its first ``assigned`` with at least one partition;
* first fetch: that ``assigned`` -> its ``first_record``.

**The burst** is the scale-out answering the spike: the replicas started from the first
scale-out decision at or after the spike start until the first scale-down decision after it
(``desired_replicas < current_replicas``; none: until the end). Its window runs from that first
scale-out decision to the last burst replica's ``first_record`` (a burst replica that never
processed counts with its last known stage: assigned, ready or started). Over the window's
1 s timeline buckets (``window start - 1 < t_s <= window end``) the summary gives the max and mean
``load_average_1m`` and the mean ``cpu_busy_fraction`` (NaN buckets skipped; None without the
columns, see :mod:`pytest_lagscale.observe.recorder`), and the median and max cold start of the
burst replicas that became ready.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

# the one "ready" and "assigned" rule of the analysis
from .reaction import _replica_times, _times_events
from .tables import events_named, first_event_time

#: Timeline columns of the machine's load (recorded by the recorder; optional here).
LOAD_COLUMN, BUSY_COLUMN = "load_average_1m", "cpu_busy_fraction"


@dataclass(frozen=True)
class ReplicaStart:
    """One replica started after the spike start; seconds, None when an event is missing.

    Attributes:
        replica_id: the replica.
        started_s: spike start -> ``replica_started``.
        actuation_s: its scale decision -> ``replica_started``.
        cold_start_s: ``replica_started`` -> ready.
        engine_startup_s: ``engine_ready.startup_s`` as the replica measured it.
        join_s: ready -> first ``assigned`` with partitions.
        first_fetch_s: that ``assigned`` -> ``first_record``.
        first_record_s: spike start -> its ``first_record``.
        in_burst: started inside the burst (see the module docstring).
    """

    replica_id: str
    started_s: float
    actuation_s: float | None
    cold_start_s: float | None
    engine_startup_s: float | None
    join_s: float | None
    first_fetch_s: float | None
    first_record_s: float | None
    in_burst: bool


@dataclass(frozen=True)
class ScaleOut:
    """Every replica started after the spike start and the burst summary.

    Attributes:
        spike_start_s: the spike start, seconds since run start (None: no spike).
        replicas: one :class:`ReplicaStart` per new replica, by start time.
        burst_replicas: replicas started in the burst.
        burst_start_s, burst_end_s: the burst window, seconds since the spike start.
        load_average_max, load_average_mean: ``load_average_1m`` over the window (tasks).
        cpu_busy_mean: mean ``cpu_busy_fraction`` over the window (0..1).
        cold_start_median_s, cold_start_max_s: over the burst replicas that became ready.
        reason: None when there was a burst; otherwise one line starting with ``NoSpikeStart``,
            ``NoScaleOutDecision`` or ``NoNewReplica``.
    """

    spike_start_s: float | None
    replicas: tuple[ReplicaStart, ...] = ()
    burst_replicas: int = 0
    burst_start_s: float | None = None
    burst_end_s: float | None = None
    load_average_max: float | None = None
    load_average_mean: float | None = None
    cpu_busy_mean: float | None = None
    cold_start_median_s: float | None = None
    cold_start_max_s: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every attribute, ``replicas`` as a list of dicts."""
        out = asdict(self)
        out["replicas"] = [asdict(r) for r in self.replicas]
        return out


def _diff(end: float | None, start: float | None) -> float | None:
    return None if end is None or start is None else end - start


def _decisions(events: pd.DataFrame) -> list[tuple[float, int]]:
    """``(t_s, sign)`` per ``decision``: +1 desired above current, -1 below, 0 equal."""
    out = []
    for row in events_named(events, "decision").itertuples():
        desired, current = row.fields.get("desired_replicas"), row.fields.get("current_replicas")
        if desired is not None and current is not None:
            out.append((float(row.t_s), (desired > current) - (desired < current)))
    return out


def _new_replicas(events: pd.DataFrame, spike_s: float) -> list[str]:
    started = events_named(events, "replica_started")
    before = set(started.loc[started["t_s"] < spike_s, "replica_id"])
    new = started[(started["t_s"] >= spike_s) & ~started["replica_id"].isin(before)]
    return list(dict.fromkeys(str(rid) for rid in new["replica_id"]))


def _engine_startup(events: pd.DataFrame, replica_id: str) -> float | None:
    rows = events_named(events, "engine_ready")
    rows = rows[rows["replica_id"] == replica_id]
    value = rows["fields"].iloc[0].get("startup_s") if len(rows) else None
    return None if value is None else float(value)


def _burst_bounds(decisions: list[tuple[float, int]],
                  spike_s: float) -> tuple[float | None, float]:
    """``(first scale-out decision at or after the spike, first scale-down after it or inf)``."""
    first_up = next((t for t, sign in decisions if t >= spike_s and sign > 0), None)
    if first_up is None:
        return None, float("inf")
    first_down = next((t for t, sign in decisions if t > first_up and sign < 0), float("inf"))
    return first_up, first_down


def _replica_start(events: pd.DataFrame, replica_id: str, spike_s: float,
                   decisions: list[tuple[float, int]],
                   bounds: tuple[float | None, float]) -> tuple[ReplicaStart, float]:
    """The replica's decomposition and its last known stage time (run seconds)."""
    times = _replica_times(events, replica_id)
    started = times["replica_started"]
    asked = [t for t, sign in decisions if sign > 0 and t <= started]
    first_up, first_down = bounds
    last_known = next(times[s] for s in ("first_record", "assigned", "replica_ready",
                                         "replica_started") if times[s] is not None)
    return ReplicaStart(
        replica_id=replica_id, started_s=started - spike_s,
        actuation_s=_diff(started, asked[-1] if asked else None),
        cold_start_s=_diff(times["replica_ready"], started),
        engine_startup_s=_engine_startup(events, replica_id),
        join_s=_diff(times["assigned"], times["replica_ready"]),
        first_fetch_s=_diff(times["first_record"], times["assigned"]),
        first_record_s=_diff(times["first_record"], spike_s),
        in_burst=first_up is not None and first_up <= started < first_down,
    ), last_known


def _column_stats(timeline: pd.DataFrame | None, column: str, start_s: float,
                  end_s: float) -> tuple[float | None, float | None]:
    """``(max, mean)`` of ``column`` over buckets ``start_s - 1 < t_s <= end_s``; NaN skipped."""
    if timeline is None or column not in timeline.columns:
        return None, None
    window = timeline[(timeline["t_s"] > start_s - 1) & (timeline["t_s"] <= end_s)]
    values = window[column].astype("float64").dropna()
    if not len(values):
        return None, None
    return float(values.max()), float(values.mean())


def _summary(replicas: list[ReplicaStart], ends: list[float], first_up: float,
             spike_s: float, timeline: pd.DataFrame | None) -> dict[str, Any]:
    """The burst fields of :class:`ScaleOut` (window relative to the spike start)."""
    colds = [r.cold_start_s for r in replicas if r.cold_start_s is not None]
    end = max(ends)
    out: dict[str, Any] = {
        "burst_replicas": len(replicas), "burst_start_s": first_up - spike_s,
        "burst_end_s": end - spike_s,
        "cold_start_median_s": statistics.median(colds) if colds else None,
        "cold_start_max_s": max(colds) if colds else None}
    out["load_average_max"], out["load_average_mean"] = _column_stats(timeline, LOAD_COLUMN,
                                                                      first_up, end)
    out["cpu_busy_mean"] = _column_stats(timeline, BUSY_COLUMN, first_up, end)[1]
    return out


def scale_out(events: pd.DataFrame, timeline: pd.DataFrame | None = None,
              spike_start_s: float | None = None) -> ScaleOut:
    """Decompose every replica started after the spike start and summarise the burst.

    Args:
        events: the event table (see :mod:`.tables`): ``spike_start``, ``decision`` (fields
            ``desired_replicas``, ``current_replicas``), ``replica_started``,
            ``replica_ready``/``engine_ready`` (field ``startup_s``), ``assigned`` (field
            ``partitions``), ``first_record``.
        timeline: the timeline table; its optional ``load_average_1m`` and
            ``cpu_busy_fraction`` columns give the load figures (None: no load figures).
        spike_start_s: spike start in run seconds; default: the first ``spike_start`` event.

    Returns:
        A :class:`ScaleOut`; missing events give None fields and a ``reason``. Never raises.
    """
    spike_s = (spike_start_s if spike_start_s is not None
               else first_event_time(events, "spike_start"))
    if spike_s is None:
        return ScaleOut(None, reason="NoSpikeStart: no 'spike_start' event; the producer must "
                                     "log the spike")
    decisions = _decisions(events)
    bounds = _burst_bounds(decisions, spike_s)
    stages = _times_events(events)  # every row _replica_start reads
    pairs = [_replica_start(stages, rid, spike_s, decisions, bounds)
             for rid in _new_replicas(events, spike_s)]
    replicas = tuple(r for r, _ in pairs)
    if bounds[0] is None:
        return ScaleOut(spike_s, replicas, reason=(
            "NoScaleOutDecision: no 'decision' with desired_replicas > current_replicas after "
            f"the spike start at {spike_s:.1f} s"))
    burst = [(r, end) for r, end in pairs if r.in_burst]
    if not burst:
        return ScaleOut(spike_s, replicas, burst_start_s=bounds[0] - spike_s, reason=(
            f"NoNewReplica: no replica started after the scale-out decision at "
            f"{bounds[0]:.1f} s"))
    summary = _summary([r for r, _ in burst], [end for _, end in burst], bounds[0], spike_s,
                       timeline)
    return ScaleOut(spike_s, replicas, **summary)
