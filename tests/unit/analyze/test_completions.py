"""Records completed per replica, from the store (experiment 4's per-replica records/s)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pytest_lagscale.analyze.completions import (completions_from_rows, group_rate,
                                                 read_completions, replica_rates,
                                                 run_completions)
from pytest_lagscale.contract.errors import ConfigError

from . import synth

ORIGIN_WALL_S = 1_795_000_000.0


def _completions(spec: dict[str, tuple[float, float, int]]) -> pd.DataFrame:
    """``{replica: (start_s, end_s, records per 0.1 s bin)}`` -> completion bins."""
    rows = [(round(t, 6), rid, n) for rid, (a, b, n) in spec.items()
            for t in np.arange(a, b - 1e-9, 0.1)]
    return pd.DataFrame(rows, columns=["t_s", "replica_id", "records"])


def _rows(replica: str, run_s: list[float]) -> pd.DataFrame:
    ns = [int(round((ORIGIN_WALL_S + t) * 1e9)) for t in run_s]
    return pd.DataFrame({"replica_id": replica, "written_at_ns": np.array(ns, dtype=np.int64)})


def test_completions_from_rows_bins_by_write_time() -> None:
    rows = pd.concat([_rows("r1", [0.01, 0.05, 0.12, 5.0]), _rows("r2", [-1.0, 0.09])])
    table = completions_from_rows(rows, ORIGIN_WALL_S)
    assert list(table.itertuples(index=False, name=None)) == [
        (-1.0, "r2", 1), (0.0, "r1", 2), (0.0, "r2", 1), (0.1, "r1", 1), (5.0, "r1", 1)]


def test_read_completions_reads_each_replica_directory(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    for replica, times in (("r1", [0.01, 0.02]), ("r1", [0.3]), ("r2", [0.15])):
        folder = tmp_path / "store" / replica
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pandas(_rows(replica, times), preserve_index=False)
        pq.write_table(table, folder / f"1-{len(list(folder.iterdir())):06d}.parquet")
    torn = tmp_path / "store" / "r2" / ".1-000009.parquet.tmp"  # being written: skipped
    torn.write_bytes(b"not parquet")
    (tmp_path / "store" / "r3").mkdir()  # a surplus replica that wrote nothing
    table = read_completions(tmp_path / "store", ORIGIN_WALL_S)
    assert list(table.itertuples(index=False, name=None)) == [
        (0.0, "r1", 2), (0.1, "r2", 1), (0.3, "r1", 1)]
    assert read_completions(tmp_path / "missing", ORIGIN_WALL_S).empty


def test_group_rate_counts_bins_in_the_window() -> None:
    bins = _completions({"r1": (0.0, 20.0, 40), "r2": (10.0, 20.0, 20)})
    assert group_rate(bins, 0.0, 10.0) == pytest.approx(400.0)
    assert group_rate(bins, 10.0, 20.0) == pytest.approx(600.0)
    assert group_rate(bins, 10.0, 20.0, replicas=["r2"]) == pytest.approx(200.0)
    assert group_rate(bins, 5.0, 5.0) is None


def test_replica_rates_fill_gaps_with_zero() -> None:
    bins = _completions({"r1": (0.0, 1.0, 10), "r2": (3.0, 4.0, 5)})
    rates = replica_rates(bins, bin_s=1.0)
    assert list(rates.index) == [0.0, 1.0, 2.0, 3.0]
    assert list(rates["r1"]) == [100.0, 0.0, 0.0, 0.0]
    assert list(rates["r2"]) == [0.0, 0.0, 0.0, 50.0]
    assert replica_rates(bins.iloc[0:0]).empty


def test_run_completions_uses_the_event_clocks(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    folder = tmp_path / "store" / "r1"
    folder.mkdir(parents=True)
    # The run started at monotonic 1000 s = wall ORIGIN_WALL_S; one record at run second 2.05.
    pq.write_table(pa.Table.from_pandas(_rows("r1", [2.05]), preserve_index=False),
                   folder / "1-000001.parquet")
    log = synth.events((0.0, "runner", "load_start", {}))
    with pytest.raises(ConfigError):
        run_completions(tmp_path, log)
    records = [{"event": "x", "wall_ns": int((ORIGIN_WALL_S + 5.0 + d) * 1e9),
                "monotonic_s": 1005.0} for d in (0.0, 0.001, 0.5)]  # median offset wins
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    table = run_completions(tmp_path, log)
    assert list(table.itertuples(index=False, name=None)) == [(2.0, "r1", 1)]
