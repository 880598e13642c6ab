"""Dating a run's duplicates and attributing them to fault windows (analyze/duplicates.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pytest_lagscale.analyze.duplicates import by_window, duplicate_times

WALL0_NS = 1_800_000_000_000_000_000  # wall time of monotonic 100.0 s
RECORDS = [{"wall_ns": WALL0_NS, "monotonic_s": 100.0}]


def _write(path, rows: list[tuple[int, int, float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "partition": pa.array([r[0] for r in rows], pa.int32()),
        "offset": pa.array([r[1] for r in rows], pa.int64()),
        "written_at_ns": pa.array([WALL0_NS + int(r[2] * 1e9) for r in rows], pa.int64())}),
        path)


def test_each_write_after_the_first_is_a_duplicate_dated_from_the_load_start(tmp_path) -> None:
    store = tmp_path / "store"
    _write(store / "replica-0001" / "a.parquet", [(0, 0, 1.0), (0, 1, 1.0), (1, 0, 2.0)])
    _write(store / "replica-0002" / "b.parquet", [(0, 1, 25.0), (1, 0, 31.0), (1, 0, 40.0)])
    # origin 100.0 s monotonic = the wall time WALL0: t_s = seconds after WALL0
    assert [round(t, 3) for t in duplicate_times(store, RECORDS, 100.0)] == [25.0, 31.0, 40.0]
    assert duplicate_times(tmp_path / "none", RECORDS, 100.0) == []


def test_duplicates_are_attributed_to_the_first_window_that_holds_them() -> None:
    times = [5.0, 95.0, 150.0, 171.0, 300.0]
    assert by_window(times, [("pause_broker", 90.0, 110.0), ("part_died", 160.0, None)],
                     slack_s=60.0) == {"pause_broker": 2, "part_died": 2, "outside": 1}
