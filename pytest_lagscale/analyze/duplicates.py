"""When a run's duplicates were written, and which fault's window holds them.

Reconciliation (:mod:`.reconcile`) counts the records stored more than once; this module dates
them: for every ``(partition, offset)`` stored ``n > 1`` times, the ``n - 1`` writes after the
first are the duplicates, each at its ``written_at_ns`` (converted to seconds from the load
start with the event logs' wall/monotonic offset, as :mod:`.store_rate` does).
:func:`by_window` then attributes them to fault windows: a fault's duplicates are written from
its start to :data:`ATTRIBUTION_SLACK_S` after its end (a session timeout, the rebalance and the
re-fetch of the last uncommitted batch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

#: Seconds after a fault's end whose duplicates are still the fault's.
ATTRIBUTION_SLACK_S = 60.0


def duplicate_times(store_dir: str | Path, records: Iterable[Mapping[str, Any]],
                    origin_s: float) -> list[float]:
    """Seconds from the load start of every duplicate write in the store, sorted.

    Args:
        store_dir: the replicas' Parquet store.
        records: the run's event records (``wall_ns`` and ``monotonic_s``).
        origin_s: monotonic seconds of the load start.

    Raises:
        ConfigError: no event record has both ``wall_ns`` and ``monotonic_s``.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from .reconcile import store_files
    from .store_rate import wall_offset_s

    files = store_files(store_dir)
    if not files:
        return []
    shift_s = wall_offset_s(records) + origin_s
    table = ds.dataset([str(f) for f in files], format="parquet").to_table(
        columns=["partition", "offset", "written_at_ns"])
    counts = table.group_by(["partition", "offset"]).aggregate([("written_at_ns", "count")])
    repeated = counts.filter(pc.greater(counts["written_at_ns_count"], 1))
    if not len(repeated):
        return []
    keys = set(zip(repeated["partition"].to_pylist(), repeated["offset"].to_pylist()))
    writes: dict[tuple[int, int], list[int]] = {}
    for p, o, w in zip(table["partition"].to_pylist(), table["offset"].to_pylist(),
                       table["written_at_ns"].to_pylist()):
        if (p, o) in keys:
            writes.setdefault((p, o), []).append(w)
    return sorted(w / 1e9 - shift_s for ws in writes.values() for w in sorted(ws)[1:])


def by_window(times: Sequence[float], windows: Sequence[tuple[str, float, float | None]],
              slack_s: float = ATTRIBUTION_SLACK_S) -> dict[str, int]:
    """``{window name: duplicates written in [start, end + slack_s]}`` plus ``outside``; a
    duplicate in two windows counts for the first. ``windows`` are ``(name, start_s, end_s)``
    (end None: open to the end of the run)."""
    out = {name: 0 for name, _, _ in windows}
    out["outside"] = 0
    for t in times:
        for name, start, end in windows:
            if start <= t and (end is None or t <= end + slack_s):
                out[name] += 1
                break
        else:
            out["outside"] += 1
    return out
