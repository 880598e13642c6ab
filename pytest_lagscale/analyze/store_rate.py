"""The group's consume rate from the replicas' store: exact per-record times, a sliding window.

The store (``spark_consumer/store.py``, one Parquet row per processed record) carries three
times per record, all ns since the Unix epoch: ``ts_ns`` (the producer's send time),
``processed_at_ns`` (the micro-batch's enrichment time, one value per batch) and
``written_at_ns`` (the end of that record's write, the last step of processing). The rate counts
records by ``written_at_ns``: on Spark replicas a saturated batch is 2,000 records whose
``processed_at_ns`` is one instant while their writes take ~5 s (measured in the spike-ci run:
batches 5.1-6.4 s apart under backlog, 1.0 s apart at baseline), so counting by batch time would
need a window of 10 s or more to read a steady group as steady. ``processed_at_ns`` still
gives the micro-batch interval, which sets the window: **rate window** = max(2 x batch
interval, 2 s), the batch interval being the median gap between consecutive distinct
``processed_at_ns`` of one replica, pooled over replicas.

Wall ns become run seconds through the event logs: every record has ``wall_ns`` and
``monotonic_s`` read together, so ``run_s = wall_ns / 1e9 - (median of wall_ns / 1e9 -
monotonic_s) - origin_s`` with the event table's origin (``t_s = monotonic_s - origin_s``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import numpy as np
import pandas as pd

from ..contract.errors import ConfigError

#: Seconds per time bin of the aggregated store tables (and grid step of the windowed rate).
BIN_S = 0.1
#: The rate window is at least this many batch intervals ...
WINDOW_BATCHES = 2
#: ... and at least this many seconds.
MIN_WINDOW_S = 2.0
#: Store rows read and aggregated at a time by :func:`read_store_times`.
READ_BATCH_ROWS = 1_000_000
_COLUMNS = ("replica_id", "partition", "ts_ns", "processed_at_ns", "written_at_ns")


@dataclass(frozen=True)
class StoreTimes:
    """The store's record times, aggregated into :data:`BIN_S` bins of run seconds.

    Attributes:
        completed: one row per replica per partition per bin of ``written_at_ns``: ``t_s``
            float64 (bin start, seconds since run start), ``replica_id`` object, ``partition``
            int64, ``records`` int64.
        produced: one row per partition per bin of ``ts_ns``: ``t_s``, ``partition``,
            ``records`` as above.
        batch_interval_s: median gap between consecutive distinct ``processed_at_ns`` of one
            replica, pooled over replicas, seconds; None when no replica has two batches.
    """

    completed: pd.DataFrame
    produced: pd.DataFrame
    batch_interval_s: float | None

    @property
    def rate_window_s(self) -> float:
        """max(2 x batch interval rounded to whole bins, 2 s), seconds."""
        batches = round(WINDOW_BATCHES * (self.batch_interval_s or 0.0) / BIN_S) * BIN_S
        return round(max(batches, MIN_WINDOW_S), 6)

    @cached_property
    def _cumulative(self) -> tuple[int, np.ndarray]:
        """(index of the first bin, records completed before each bin edge)."""
        if not len(self.completed):
            return 0, np.zeros(1)
        index = np.rint(self.completed["t_s"].to_numpy() / BIN_S).astype(np.int64)
        first = int(index.min())
        counts = np.bincount(index - first, weights=self.completed["records"].to_numpy())
        return first, np.concatenate([[0.0], np.cumsum(counts)])

    @property
    def span_s(self) -> tuple[float, float] | None:
        """(first bin start, last bin end) of the completions, run seconds; None if empty."""
        first, cumulative = self._cumulative
        return None if not len(self.completed) else (first * BIN_S,
                                                     (first + len(cumulative) - 1) * BIN_S)

    def completions(self) -> pd.DataFrame:
        """Records completed per replica per bin (summed over partitions): columns ``t_s``
        float64, ``replica_id`` object, ``records`` int64, sorted by ``t_s`` — the completions
        table of :mod:`.completions`, without reading the store again."""
        if not len(self.completed):
            return empty_completions()
        binned = self.completed.assign(t_s=self.completed["t_s"].round(6))
        table = binned.groupby(["t_s", "replica_id"], sort=True)["records"].sum().reset_index()
        table["records"] = table["records"].astype("int64")
        return table.sort_values(["t_s", "replica_id"], kind="stable").reset_index(drop=True)

    def completed_before(self, t_s: np.ndarray) -> np.ndarray:
        """Records whose write completed before each time of ``t_s`` (run seconds, rounded to
        whole bins), float64."""
        first, cumulative = self._cumulative
        edge = np.rint(np.asarray(t_s, dtype=float) / BIN_S).astype(np.int64) - first
        return cumulative[np.clip(edge, 0, len(cumulative) - 1)]

    def windowed_rate(self, start_s: float, end_s: float) -> tuple[np.ndarray, np.ndarray]:
        """The group rate over the sliding window on a :data:`BIN_S` grid.

        Args:
            start_s, end_s: the grid covers ``[start_s, end_s)``, run seconds.

        Returns:
            ``(t_s, rate_per_s)``: grid times and records completed in ``[t - window, t)``
            divided by :attr:`rate_window_s`, records/s.
        """
        grid = np.arange(np.ceil(round(start_s / BIN_S, 6)), np.ceil(round(end_s / BIN_S, 6)))
        times = grid * BIN_S
        window = self.rate_window_s
        rate = (self.completed_before(times) - self.completed_before(times - window)) / window
        return times, rate

    def backlog_at(self, t_s: float, partitions: int) -> np.ndarray:
        """Per partition, records produced before ``t_s`` whose write had not completed by then
        (``ts_ns`` before, ``written_at_ns`` at or after ``t_s``), records; index = partition.
        Records never stored (lost) are not counted."""
        out = np.zeros(partitions)
        for table, sign in ((self.produced, 1.0), (self.completed, -1.0)):
            rows = table[(table["t_s"] < t_s - BIN_S / 2) & (table["partition"] < partitions)]
            sums = rows.groupby("partition")["records"].sum()
            out[sums.index.to_numpy(dtype=int)] += sign * sums.to_numpy(dtype=float)
        return np.maximum(out, 0.0)


def wall_offset_s(records: Iterable[Mapping[str, Any]]) -> float:
    """Median of ``wall_ns / 1e9 - monotonic_s`` over event records, seconds: subtract it from a
    wall time (s) to get the host's monotonic time.

    Raises:
        ConfigError: no record has both ``wall_ns`` and ``monotonic_s``.
    """
    offsets = [r["wall_ns"] / 1e9 - float(r["monotonic_s"]) for r in records
               if r.get("wall_ns") and r.get("monotonic_s") is not None]
    if not offsets:
        raise ConfigError("event records: none has both 'wall_ns' and 'monotonic_s'; "
                          "write events with EventLog.emit")
    return float(np.median(offsets))


def _bins(run_s: np.ndarray) -> np.ndarray:
    return np.floor(np.round(run_s / BIN_S, 6)) * BIN_S


def _aggregate(rows: pd.DataFrame, shift_s: float) -> tuple[pd.DataFrame, pd.DataFrame,
                                                              pd.DataFrame]:
    """(completed, produced, batches) of per-record ``rows``; ``shift_s`` turns wall seconds
    into run seconds (run = wall - shift)."""
    done = pd.DataFrame({"t_s": _bins(rows["written_at_ns"].to_numpy() / 1e9 - shift_s),
                         "replica_id": rows["replica_id"].astype(object),
                         "partition": rows["partition"].astype(np.int64)})
    sent = pd.DataFrame({"t_s": _bins(rows["ts_ns"].to_numpy() / 1e9 - shift_s),
                         "partition": rows["partition"].astype(np.int64)})
    completed = done.groupby(["t_s", "replica_id", "partition"]).size().rename("records")
    produced = sent.groupby(["t_s", "partition"]).size().rename("records")
    batches = rows[["replica_id", "processed_at_ns"]].drop_duplicates()
    return completed.reset_index(), produced.reset_index(), batches


def batch_interval_s(batches: pd.DataFrame) -> float | None:
    """Median gap between consecutive distinct ``processed_at_ns`` of one replica, pooled over
    replicas, seconds; None without two batches on any replica.

    Args:
        batches: columns ``replica_id`` and ``processed_at_ns`` (ns), any order, duplicates
            allowed.
    """
    gaps = [np.diff(np.unique(group["processed_at_ns"].to_numpy())) / 1e9
            for _, group in batches.groupby("replica_id")]
    pooled = np.concatenate(gaps) if gaps else np.empty(0)
    return float(np.median(pooled)) if len(pooled) else None


def store_times(rows: pd.DataFrame, shift_s: float = 0.0) -> StoreTimes:
    """Aggregate per-record store rows.

    Args:
        rows: one row per stored record with the store's ``replica_id``, ``partition``,
            ``ts_ns``, ``processed_at_ns`` and ``written_at_ns`` columns.
        shift_s: seconds subtracted from the wall times (s) to give run seconds:
            ``wall_offset_s(records) + origin_s``; 0 when the times already count from the run
            start.

    Raises:
        ConfigError: a column is missing.
    """
    missing = [c for c in _COLUMNS if c not in rows.columns]
    if missing:
        raise ConfigError(f"store rows: columns {missing!r} are missing; expected "
                          f"{list(_COLUMNS)!r} (spark_consumer/store.py STORE_SCHEMA)")
    completed, produced, batches = _aggregate(rows, shift_s)
    return StoreTimes(completed, produced, batch_interval_s(batches))


def _merge(parts: list[pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    table = pd.concat(parts, ignore_index=True)
    return table.groupby(keys, as_index=False)["records"].sum()


def _chunks(batches: Iterable[Any]) -> Iterator[pd.DataFrame]:
    """Record batches (one or more per store file) joined into frames of at least
    :data:`READ_BATCH_ROWS` rows (the last may be smaller): aggregating per file costs more
    than reading it."""
    import pyarrow as pa

    pending: list[Any] = []
    rows = 0
    for batch in batches:
        pending.append(batch)
        rows += batch.num_rows
        if rows >= READ_BATCH_ROWS:
            yield pa.Table.from_batches(pending).to_pandas()
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending).to_pandas()


def empty_completions() -> pd.DataFrame:
    """A completions table without rows (the shape of :meth:`StoreTimes.completions`)."""
    return pd.DataFrame({"t_s": pd.Series(dtype="float64"),
                         "replica_id": pd.Series(dtype="object"),
                         "records": pd.Series(dtype="int64")})


def read_store_times(store_dir: str | Path, records: Iterable[Mapping[str, Any]],
                     origin_s: float) -> StoreTimes | None:
    """Read the store (only the five time and key columns, :data:`READ_BATCH_ROWS` rows at a
    time) into a :class:`StoreTimes`.

    Args:
        store_dir: the replicas' Parquet store (``RunDir.store``).
        records: the run's event records (merged JSONL event logs, with ``wall_ns`` and
            ``monotonic_s``).
        origin_s: monotonic seconds of the run start (the event table's origin).

    Returns:
        The aggregated times; None when the store has no file.

    Raises:
        ConfigError: no event record has both ``wall_ns`` and ``monotonic_s``.
    """
    import pyarrow.dataset as ds

    from .reconcile import store_files

    files = store_files(store_dir)
    if not files:
        return None
    shift_s = wall_offset_s(records) + origin_s
    done, sent, batches = [], [], []
    dataset = ds.dataset([str(f) for f in files], format="parquet")
    for chunk in _chunks(dataset.to_batches(columns=list(_COLUMNS))):
        parts = _aggregate(chunk, shift_s)
        done.append(parts[0])
        sent.append(parts[1])
        batches.append(parts[2])
    return StoreTimes(_merge(done, ["t_s", "replica_id", "partition"]),
                      _merge(sent, ["t_s", "partition"]),
                      batch_interval_s(pd.concat(batches, ignore_index=True)))
