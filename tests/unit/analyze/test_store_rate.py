"""The store's record times: batch interval, rate window, windowed rate, backlog, reading."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pytest_lagscale.analyze.store_rate import (batch_interval_s, read_store_times,
                                                store_times, wall_offset_s)
from pytest_lagscale.contract.errors import ConfigError

from . import synth


@pytest.mark.parametrize("every_s, interval, window", [
    pytest.param(0.1, 0.1, 2.0, id="fast-batches-window-floor-2s"),
    pytest.param(1.0, 1.0, 2.0, id="1s-trigger"),
    pytest.param(1.5, 1.5, 3.0, id="slow-batches-two-intervals"),
])
def test_window_is_two_batch_intervals_at_least_2s(every_s: float, interval: float,
                                                   window: float) -> None:
    store = synth.store(synth.batches("r1", 0.0, 30.0, every_s, 10, spread_s=0.0))
    assert store.batch_interval_s == pytest.approx(interval)
    assert store.rate_window_s == window


def test_batch_interval_is_median_gap_per_replica_pooled() -> None:
    # r1 every 1 s, r2 every 3 s, interleaved: pooled gaps are 1 s (x9) and 3 s (x2)
    table = pd.DataFrame({"replica_id": ["r1"] * 10 + ["r2"] * 3,
                          "processed_at_ns": [int(t * 1e9) for t in [*range(10), 0.5, 3.5, 6.5]]})
    assert batch_interval_s(table) == 1.0
    assert batch_interval_s(table.iloc[[0, 10]]) is None


def test_batchy_rate_is_steady_over_two_intervals() -> None:
    # 1000 records written at one instant every 1 s: 0 between batches, steady over 2 s
    store = synth.store(synth.batches("r1", 0.0, 30.0, 1.0, 1000, spread_s=0.0))
    times, rate = store.windowed_rate(5.0, 25.0)
    assert times[0] == 5.0 and len(times) == 200
    assert set(rate) == {1000.0}


def test_windowed_rate_counts_records_in_the_window_before_t() -> None:
    store = synth.store(synth.batches("r1", 10.0, 20.0, 0.1, 50))  # 500/s from 10 s
    times, rate = store.windowed_rate(9.0, 13.0)
    by_time = dict(zip(np.round(times, 1), rate))
    assert (by_time[10.0], by_time[11.0], by_time[12.0], by_time[12.9]) == (0, 250, 500, 500)


def test_backlog_at_counts_produced_not_yet_written_per_partition() -> None:
    # partition 1: 10 records produced at 4.5 s and written at 5.0..5.9 s
    store = synth.store(synth.batches("r1", 5.0, 6.0, 1.0, 10, partition=1),
                        synth.batches("r1", 2.0, 3.0, 1.0, 4, partition=0))
    assert list(store.backlog_at(5.0, 3)) == [0.0, 10.0, 0.0]
    assert list(store.backlog_at(5.5, 3)) == [0.0, 5.0, 0.0]
    assert list(store.backlog_at(7.0, 3)) == [0.0, 0.0, 0.0]


def test_store_times_names_missing_columns() -> None:
    with pytest.raises(ConfigError) as info:
        store_times(pd.DataFrame({"replica_id": [], "partition": []}))
    assert str(info.value) == (
        "store rows: columns ['ts_ns', 'processed_at_ns', 'written_at_ns'] are missing; "
        "expected ['replica_id', 'partition', 'ts_ns', 'processed_at_ns', 'written_at_ns'] "
        "(spark_consumer/store.py STORE_SCHEMA)")


def test_wall_offset_is_median_of_wall_minus_monotonic() -> None:
    records = [{"wall_ns": int(1e18) + int(i * 1e9), "monotonic_s": 100.0 + i + d}
               for i, d in enumerate([0.0, 0.001, -0.5])]
    assert wall_offset_s(records) == pytest.approx(1e9 - 100.0)
    with pytest.raises(ConfigError):
        wall_offset_s([{"event": "x", "monotonic_s": 1.0}])


def test_read_store_times_maps_wall_ns_to_run_seconds(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    wall0, origin = 1_800_000_000.0, 50.0  # wall s at monotonic 0; run starts at monotonic 50
    rows = synth.batches("r1", 0.0, 4.0, 1.0, 10)
    for column in ("ts_ns", "processed_at_ns", "written_at_ns"):
        rows[column] = rows[column] + int((wall0 + origin) * 1e9)
    (tmp_path / "r1").mkdir()
    pq.write_table(pa.Table.from_pandas(rows.iloc[:20]), tmp_path / "r1" / "a-000001.parquet")
    pq.write_table(pa.Table.from_pandas(rows.iloc[20:]), tmp_path / "r1" / "a-000002.parquet")
    records = [{"wall_ns": int((wall0 + 7.0) * 1e9), "monotonic_s": 7.0}]
    store = read_store_times(tmp_path, records, origin)
    assert store is not None and store.span_s == pytest.approx((0.0, 4.0))
    assert store.batch_interval_s == 1.0 and int(store.completed["records"].sum()) == 40
    assert read_store_times(tmp_path / "missing", records, origin) is None


def test_completions_sum_partitions_per_replica_per_bin_as_the_completions_module_does() -> None:
    from pytest_lagscale.analyze.completions import completions_from_rows
    from pytest_lagscale.analyze.store_rate import empty_completions

    rows = pd.concat([synth.batches("r1", 0.0, 3.0, 1.0, 10, partition=0),
                      synth.batches("r1", 0.0, 3.0, 1.0, 5, partition=1),
                      synth.batches("r2", 1.0, 2.0, 0.5, 4, partition=2)], ignore_index=True)
    rows["written_at_ns"] += 30_000_000  # off the bin edges, where float flooring may differ
    table = store_times(rows).completions()
    expected = completions_from_rows(rows, 0.0)
    assert list(table.columns) == ["t_s", "replica_id", "records"]
    assert int(table["records"].sum()) == len(rows) == 53
    merged = table.merge(expected, on=["t_s", "replica_id"], how="outer", suffixes=("", "_x"))
    assert (merged["records"] == merged["records_x"]).all(), merged
    assert store_times(rows.iloc[:0]).completions().equals(empty_completions())
