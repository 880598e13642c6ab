"""Synthetic timeline and event tables with known answers, for the analysis and report tests."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from pytest_lagscale.analyze import events_from_records
from pytest_lagscale.analyze.store_rate import StoreTimes, store_times

DEFAULTS: dict[str, Any] = {
    "total_lag": 0, "desired_replicas": 1, "current_replicas": 1, "ready_replicas": 1,
    "consume_rate_per_s": 100.0, "produce_rate_per_s": 100.0,
}


def timeline(seconds: int, **columns: Any) -> pd.DataFrame:
    """A timeline of ``seconds`` 1 s steps (``t_s`` = 0, 1, ...); each column is a scalar, a
    sequence of length ``seconds``, or a ``{t_s: value}`` dict of changes (held until the next)."""
    data: dict[str, Any] = {"t_s": [float(t) for t in range(seconds)]}
    for name, default in DEFAULTS.items():
        data[name] = _column(columns.pop(name, default), seconds)
    assert not columns, f"unknown columns {sorted(columns)}"
    return pd.DataFrame(data)


def _column(spec: Any, seconds: int) -> list[Any]:
    if isinstance(spec, dict):
        out, value = [], None
        for t in range(seconds):
            value = spec.get(t, value)
            out.append(value)
        return out
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        assert len(spec) == seconds, (len(spec), seconds)
        return list(spec)
    return [spec] * seconds


def events(*rows: tuple[float, str, str, dict[str, Any]]) -> pd.DataFrame:
    """An event table from ``(t_s, source, event, fields)`` tuples (origin 1000 s monotonic)."""
    records = [{"event": name, "source": source, "wall_time": "2026-08-01T00:00:00+00:00",
                "wall_ns": 0, "monotonic_s": 1000.0 + t, **fields}
               for t, source, name, fields in rows]
    return events_from_records(records, origin_s=1000.0)


def scale_out_run() -> tuple[pd.DataFrame, pd.DataFrame]:
    """120 s: spike 20..60 s (produce 300/s), replicas 1 -> 3 (current at 30 s, ready at 35 s).

    Lag grows 200 records/s from 20 s to 35 s (to 3000), holds until the spike end at 60 s,
    then drains 100 records/s (1000 at 80 s, 0 at 90 s). New replica r2 processes first, at 39 s.
    """
    lag = []
    for t in range(120):
        if t < 20:
            lag.append(0)
        elif t <= 35:
            lag.append(200 * (t - 20))
        elif t <= 60:
            lag.append(3000)
        else:
            lag.append(max(0, 3000 - 100 * (t - 60)))
    table = timeline(
        120, total_lag=lag,
        desired_replicas={0: 1, 25: 3}, current_replicas={0: 1, 30: 3},
        ready_replicas={0: 1, 35: 3},
        produce_rate_per_s={0: 100.0, 20: 300.0, 60: 100.0},
        consume_rate_per_s={0: 100.0, 35: 300.0, 60: 200.0, 90: 100.0},
    )
    log = events(
        (0.0, "platform", "replica_started", {"replica_id": "r0"}),
        (2.0, "platform", "replica_ready", {"replica_id": "r0"}),
        (20.0, "producer", "spike_start", {}),
        (25.0, "controller", "decision", {"desired_replicas": 3, "current_replicas": 1}),
        (30.0, "platform", "replica_started", {"replica_id": "r1"}),
        (30.5, "platform", "replica_started", {"replica_id": "r2"}),
        (35.0, "platform", "replica_ready", {"replica_id": "r1"}),
        (35.5, "platform", "replica_ready", {"replica_id": "r2"}),
        (38.0, "r1", "assigned", {"partitions": [0, 1]}),
        (38.0, "r2", "assigned", {"partitions": [2, 3]}),
        (39.0, "r2", "first_record", {}),
        (39.5, "r1", "first_record", {}),
        (60.0, "producer", "spike_end", {}),
    )
    return table, log


def batches(replica: str, start_s: float, end_s: float, every_s: float, records: int, *,
            partition: int = 0, spread_s: float | None = None,
            skip: tuple[float, float] | None = None) -> pd.DataFrame:
    """Store rows (run seconds as ns) of one replica starting a batch of ``records`` every
    ``every_s`` in ``[start_s, end_s)``; a batch's writes complete evenly over ``spread_s``
    after its start (default ``every_s``; 0: all at the batch start). Batches starting inside
    ``skip`` = ``[from_s, to_s)`` are left out. Records were produced 0.5 s before their batch.
    """
    spread = every_s if spread_s is None else spread_s
    rows = []
    for k in range(round((end_s - start_s) / every_s)):
        at = start_s + k * every_s
        if skip is not None and skip[0] - 1e-9 <= at < skip[1] - 1e-9:
            continue
        written = at + np.arange(records) * (spread / records)
        rows.append(pd.DataFrame({
            "replica_id": replica, "partition": partition,
            "ts_ns": np.int64(round((at - 0.5) * 1e9)),
            "processed_at_ns": np.int64(round(at * 1e9)),
            "written_at_ns": np.rint(written * 1e9).astype(np.int64)}))
    return pd.concat(rows, ignore_index=True)


def store(*tables: pd.DataFrame) -> StoreTimes:
    """:class:`StoreTimes` of :func:`batches` tables (times already in run seconds)."""
    return store_times(pd.concat(tables, ignore_index=True))
