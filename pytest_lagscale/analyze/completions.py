"""Records completed per replica, from the store: the per-replica side of experiment 4.

The store (``spark_consumer/store.py``) is one Parquet file per batch per replica, under
``<store>/<replica_id>/``, one row per record. A record counts at its ``written_at_ns`` (the end
of its write, the last step of processing) rather than the batch's ``processed_at_ns``: a
saturated Spark batch holds up to 2,000 records stamped with one instant whose writes take
~5 s, so batch times would make a steady replica look like a train of spikes.

**Completions table** (``pandas.DataFrame``), one row per replica per non-empty bin of
:data:`COMPLETION_BIN_S` (0.1 s), sorted by ``t_s``:

==============  =======  =====================================================
column          dtype    meaning
==============  =======  =====================================================
``t_s``         float64  bin start, seconds since run start
``replica_id``  object   the replica that wrote the records
``records``     int64    records whose write completed in the bin
==============  =======  =====================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from ..contract.errors import ConfigError

#: Seconds per bin of :func:`read_completions`.
COMPLETION_BIN_S = 0.1
COMPLETION_COLUMNS = ("t_s", "replica_id", "records")


def completions_from_rows(rows: pd.DataFrame, origin_wall_s: float,
                          bin_s: float = COMPLETION_BIN_S) -> pd.DataFrame:
    """Records completed per replica per bin, from per-record store rows.

    Args:
        rows: one row per stored record with ``replica_id`` and ``written_at_ns`` (ns since
            the epoch).
        origin_wall_s: the run's start as wall-clock seconds since the epoch.
        bin_s: bin width, seconds.

    Returns:
        Columns ``t_s`` float64 (bin start, seconds since run start), ``replica_id`` object,
        ``records`` int64; one row per replica per non-empty bin, sorted by ``t_s``.
    """
    parts = [_binned(str(replica), group["written_at_ns"].to_numpy(), origin_wall_s, bin_s)
             for replica, group in rows.groupby("replica_id")]
    return _completions(pd.concat(parts, ignore_index=True) if parts else
                        pd.DataFrame(columns=list(COMPLETION_COLUMNS)))


def _binned(replica_id: str, written_at_ns: np.ndarray, origin_wall_s: float,
            bin_s: float) -> pd.DataFrame:
    """One replica's completion times (ns since the epoch) as bins of run seconds."""
    origin_ns = int(round(origin_wall_s * 1e9))
    run_s = (written_at_ns.astype(np.int64) - origin_ns) / 1e9
    bins, counts = np.unique(np.floor(run_s / bin_s + 1e-9), return_counts=True)
    return pd.DataFrame({"t_s": np.round(bins * bin_s, 6), "replica_id": replica_id,
                         "records": counts})


def read_completions(store_dir: str | Path, origin_wall_s: float,
                     bin_s: float = COMPLETION_BIN_S) -> pd.DataFrame:
    """Read the store into :func:`completions_from_rows` bins, one replica directory at a time
    and only the ``written_at_ns`` column (the directory is the replica id; dot-prefixed files
    being written are skipped).

    Args:
        store_dir: the replicas' Parquet store (``RunDir.store``); missing or empty gives an
            empty table.
        origin_wall_s: the run's start, wall-clock seconds since the epoch.
        bin_s: bin width, seconds.
    """
    import pyarrow.dataset as ds

    root = Path(store_dir)
    parts = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        dataset = ds.dataset(directory, format="parquet")
        if not dataset.files:  # a replica that processed nothing has an empty directory
            continue
        table = dataset.to_table(columns=["written_at_ns"])
        if table.num_rows:
            parts.append(_binned(directory.name, table.column("written_at_ns").to_numpy(),
                                 origin_wall_s, bin_s))
    return _completions(pd.concat(parts, ignore_index=True) if parts else
                        pd.DataFrame(columns=list(COMPLETION_COLUMNS)))


def run_completions(run_dir: str | Path, events: pd.DataFrame,
                    bin_s: float = COMPLETION_BIN_S) -> pd.DataFrame:
    """:func:`read_completions` of a finished run directory, in the event table's seconds.

    The run start's wall time is the event table's origin (``monotonic_s - t_s``) plus the
    median ``wall_ns / 1e9 - monotonic_s`` of the merged event log (``events.jsonl``), whose
    records read both clocks together.

    Raises:
        ConfigError: the event table is empty or no record of ``events.jsonl`` has both
            clocks.
    """
    from ..contract.eventlog import read_events
    from ..contract.rundir import RunDir

    layout = RunDir(Path(run_dir))
    offsets = [r["wall_ns"] / 1e9 - float(r["monotonic_s"]) for r in
               (read_events(layout.events_jsonl) if layout.events_jsonl.is_file() else ())
               if r.get("wall_ns") and r.get("monotonic_s") is not None]
    if not offsets or not len(events):
        raise ConfigError(f"{layout.events_jsonl}: no event record with both 'wall_ns' and "
                          "'monotonic_s' (or an empty event table); analyse a finished run")
    origin_s = float((events["monotonic_s"] - events["t_s"]).iloc[0])
    return read_completions(layout.store, origin_s + float(np.median(offsets)), bin_s)


def _completions(table: pd.DataFrame) -> pd.DataFrame:
    out = table[list(COMPLETION_COLUMNS)].astype({"t_s": "float64", "records": "int64"})
    out["replica_id"] = out["replica_id"].astype(object)
    return out.sort_values(["t_s", "replica_id"], kind="stable").reset_index(drop=True)


def group_rate(completions: pd.DataFrame, start_s: float, end_s: float,
               replicas: Iterable[str] | None = None) -> float | None:
    """Records/s completed in ``[start_s, end_s)`` by the group (or by ``replicas`` only).

    Args:
        completions: :func:`read_completions` bins (a bin counts when its start lies in the
            window).
        start_s, end_s: the window, seconds since run start.
        replicas: restrict to these replica ids; None = all.

    Returns:
        The rate, records/s; None when the window is empty (``end_s <= start_s``).
    """
    if end_s <= start_s:
        return None
    rows = completions[(completions["t_s"] >= start_s - 1e-9) & (completions["t_s"] < end_s - 1e-9)]
    if replicas is not None:
        rows = rows[rows["replica_id"].isin(list(replicas))]
    return float(rows["records"].sum()) / (end_s - start_s)


def replica_rates(completions: pd.DataFrame, bin_s: float = 1.0) -> pd.DataFrame:
    """Records/s per replica per ``bin_s`` bin, for plotting.

    Returns:
        Index ``t_s`` (bin start, every bin from the first to the last, float64), one column
        per replica id (sorted), values records/s (0.0 where a replica completed nothing).
    """
    if not len(completions):
        return pd.DataFrame(index=pd.Index([], name="t_s", dtype="float64"))
    bins = np.floor(completions["t_s"].to_numpy() / bin_s + 1e-9) * bin_s
    table = (completions.assign(t_s=np.round(bins, 6))
             .pivot_table(index="t_s", columns="replica_id", values="records", aggfunc="sum",
                          fill_value=0))
    grid = np.round(np.arange(table.index.min(), table.index.max() + bin_s / 2, bin_s), 6)
    table = table.reindex(grid, fill_value=0).sort_index(axis=1) / bin_s
    table.index.name = "t_s"
    table.columns.name = None
    return table.astype("float64")
