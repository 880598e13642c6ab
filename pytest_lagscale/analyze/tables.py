"""The two recorded tables every analysis reads: the timeline and the event table.

**Timeline** (``pandas.DataFrame``), one row per 1 s bucket ``[t_s, t_s + 1)``, by ``t_s``:

=====================  =======  ==========================================================
column                 dtype    meaning
=====================  =======  ==========================================================
``t_s``                float64  seconds since run start
``total_lag``          int64    records: sum over partitions of log-end minus committed
``desired_replicas``   int64    the autoscaler's desired replicas
``current_replicas``   int64    the Deployment's replica count (spec.replicas)
``ready_replicas``     int64    replicas passing readiness
``consume_rate_per_s`` float64  records processed per second by the whole group
``produce_rate_per_s`` float64  records produced per second into the topic
=====================  =======  ==========================================================

**Event table**, one row per event of the merged JSONL event logs, by ``monotonic_s``:

================  =======  =================================================================
column            dtype    meaning
================  =======  =================================================================
``t_s``           float64  seconds since run start (``monotonic_s - origin_s``)
``monotonic_s``   float64  the host's monotonic clock, seconds
``source``        object   writer: ``controller``, ``platform``, ``producer`` or a replica id
``event``         object   snake_case name (``spike_start``, ``decision``, ``first_record``...)
``replica_id``    object   the replica concerned, or ``None``
``fields``        object   dict of every other key of the record (``partitions``,
                           ``desired_replicas``, ``replicas_after``...)
================  =======  =================================================================
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from ..contract.errors import ConfigError

TIMELINE_COLUMNS: dict[str, str] = {
    "t_s": "float64",
    "total_lag": "int64",
    "desired_replicas": "int64",
    "current_replicas": "int64",
    "ready_replicas": "int64",
    "consume_rate_per_s": "float64",
    "produce_rate_per_s": "float64",
}
EVENT_COLUMNS: tuple[str, ...] = ("t_s", "monotonic_s", "source", "event", "replica_id", "fields")
_NON_REPLICA_SOURCES = frozenset({"controller", "platform", "producer", "recorder", "group"})
_HEADER_KEYS = frozenset({"event", "source", "wall_time", "wall_ns", "monotonic_s", "replica_id"})


def check_timeline(timeline: pd.DataFrame) -> pd.DataFrame:
    """Return ``timeline`` with the documented dtypes, sorted by ``t_s``.

    Args:
        timeline: a timeline table (see the module docstring); extra columns are kept.

    Raises:
        ConfigError: a documented column is missing (all missing columns in one message).
    """
    missing = [name for name in TIMELINE_COLUMNS if name not in timeline.columns]
    if missing:
        raise ConfigError(f"timeline: columns {missing!r} are missing; "
                          f"expected {list(TIMELINE_COLUMNS)!r}; record them in the recorder")
    out = timeline.astype(TIMELINE_COLUMNS)
    return out.sort_values("t_s", kind="stable").reset_index(drop=True)


def _replica_id(record: Mapping[str, Any]) -> str | None:
    if record.get("replica_id") is not None:
        return str(record["replica_id"])
    source = record.get("source")
    if source is not None and source not in _NON_REPLICA_SOURCES:
        return str(source)
    return None


def events_from_records(records: Iterable[Mapping[str, Any]],
                        origin_s: float | None = None) -> pd.DataFrame:
    """Build the event table from parsed JSONL event-log records.

    Args:
        records: dicts as written by :class:`pytest_lagscale.contract.eventlog.EventLog` (keys ``event``,
            ``source``, ``wall_time``, ``wall_ns``, ``monotonic_s`` plus event fields), from any
            number of logs, in any order.
        origin_s: monotonic seconds of run start; ``t_s = monotonic_s - origin_s``. Default: the
            smallest ``monotonic_s`` among the records.

    Returns:
        The event table (see the module docstring): one row per record, sorted by
        ``monotonic_s``. ``replica_id`` falls back to ``source`` when the source is a replica.

    Raises:
        ConfigError: a record lacks ``event`` or ``monotonic_s``.
    """
    rows = []
    for index, record in enumerate(records):
        if "event" not in record or "monotonic_s" not in record:
            raise ConfigError(f"event record {index}: {dict(record)!r} lacks 'event' or "
                              "'monotonic_s'; write events with EventLog.emit")
        rows.append({
            "monotonic_s": float(record["monotonic_s"]),
            "source": record.get("source"),
            "event": str(record["event"]),
            "replica_id": _replica_id(record),
            "fields": {k: v for k, v in record.items() if k not in _HEADER_KEYS},
        })
    table = pd.DataFrame(rows, columns=[c for c in EVENT_COLUMNS if c != "t_s"])
    table["monotonic_s"] = table["monotonic_s"].astype("float64")
    table = table.sort_values("monotonic_s", kind="stable").reset_index(drop=True)
    if origin_s is None:
        origin_s = float(table["monotonic_s"].min()) if len(table) else 0.0
    table.insert(0, "t_s", table["monotonic_s"] - origin_s)
    return table


def events_named(events: pd.DataFrame, name: str) -> pd.DataFrame:
    """Rows of the event table whose ``event`` is ``name``, in time order."""
    return events[events["event"] == name]


def first_event_time(events: pd.DataFrame, name: str) -> float | None:
    """``t_s`` (seconds) of the first event called ``name``, or None when there is none."""
    rows = events_named(events, name)
    return float(rows["t_s"].iloc[0]) if len(rows) else None


def spike_window(events: pd.DataFrame) -> tuple[float | None, float | None]:
    """``(start_s, end_s)`` of the first ``spike_start`` and the first ``spike_end`` after it."""
    start = first_event_time(events, "spike_start")
    ends = events_named(events, "spike_end")
    if start is not None:
        ends = ends[ends["t_s"] >= start]
    end = float(ends["t_s"].iloc[0]) if len(ends) else None
    return start, end


def burst_window(events: pd.DataFrame) -> tuple[float | None, float | None]:
    """``(first_start_s, last_end_s)`` of a bursty profile's bursts (its ``phase`` events
    labelled ``high-<i>``): the first burst's start and the start of the phase after the last
    burst (or ``load_end``); ``(None, None)`` without burst phases."""
    marks = events_named(events, "phase")
    marks = [(float(t), str((fields or {}).get("label", ""))) for t, fields
             in zip(marks["t_s"], marks["fields"])]
    highs = [i for i, (_, label) in enumerate(marks) if label.startswith("high-")]
    if not highs:
        return None, None
    if highs[-1] + 1 < len(marks):
        return marks[highs[0]][0], marks[highs[-1] + 1][0]
    return marks[highs[0]][0], first_event_time(events, "load_end")
