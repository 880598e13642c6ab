"""The simulated downstream write and one batch through decode, enrich, store."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pytest_lagscale.contract.clock import FakeClock
from spark_consumer import capacity_records_per_s
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.metrics import ReplicaMetrics
from spark_consumer.options import DEFAULT_DIMENSION
from spark_consumer.pipeline import BatchProcessor, WriteSimulator
from spark_consumer.store import STORE_SCHEMA, ParquetStore, read_store

from .fakes import FakeMessage, messages, wall_ns_from


@pytest.mark.parametrize("n, process_ms, inflight, expected_s", [
    pytest.param(100, 5.0, 10, 0.05, id="ceil-100-over-10-times-5ms"),
    pytest.param(101, 5.0, 10, 0.055, id="partial-wave-costs-a-full-wave"),
    pytest.param(7, 0.5, 1, 0.0035, id="short-waves-grouped-per-sleep"),
    pytest.param(5000, 0.0, 10, 0.0, id="zero-ms-no-sleep"),
])
def test_batch_sleeps_ceil_n_over_inflight_times_process_ms(n, process_ms, inflight,
                                                            expected_s) -> None:
    clock = FakeClock()
    sim = WriteSimulator(process_ms, inflight, clock, wall_ns_from(clock))
    written = sim.run(n, lambda: False, lambda first, k: None)
    assert len(written) == n
    assert clock.now() == pytest.approx(expected_s)
    assert sim.duration_s(n) == pytest.approx(expected_s)


def test_stop_request_finishes_the_waves_in_flight_and_no_more() -> None:
    clock = FakeClock()
    sim = WriteSimulator(10.0, 4, clock, wall_ns_from(clock))
    progress: list[tuple[int, int]] = []
    written = sim.run(20, lambda: clock.now() >= 0.02, lambda f, k: progress.append((f, k)))
    assert progress == [(0, 4), (4, 4)]  # two waves of 4 records, 10 ms each
    assert len(written) == 8 and clock.now() == pytest.approx(0.02)
    assert written[0] < written[4]  # each wave is stamped when it finished


def test_capacity_formula() -> None:
    assert capacity_records_per_s(5.0, 10) == 2000.0
    assert capacity_records_per_s(0.0, 10) == float("inf")


def _processor(tmp_path, clock, metrics, stop_after_s=None):
    engine = make_engine("arrow", load_dimension(DEFAULT_DIMENSION))
    store = ParquetStore(tmp_path / "store", "r-1", incarnation="1")
    sim = WriteSimulator(5.0, 2, clock, wall_ns_from(clock))
    firsts: list[bool] = []
    proc = BatchProcessor(engine, store, sim, metrics, clock, lambda: firsts.append(True),
                          wall_ns_from(clock))
    return proc, firsts


def test_batch_writes_one_file_and_returns_next_offsets(tmp_path) -> None:
    clock, metrics = FakeClock(), ReplicaMetrics(FakeClock())
    proc, firsts = _processor(tmp_path, clock, metrics)
    out = proc.process(messages([(0, 10), (1, 4), (0, 11), (2, 0), (1, 5)]), lambda: False)
    assert out.offsets == {0: 12, 1: 6, 2: 1}
    assert (out.records_done, out.messages_done, out.stopped_early) == (5, 5, False)
    files = list((tmp_path / "store" / "r-1").glob("*.parquet"))
    assert [f.name for f in files] == ["1-000001.parquet"]
    table = pq.read_table(files[0])
    assert table.schema == STORE_SCHEMA
    assert {"partition", "offset", "seq", "entity_id", "replica_id",
            "processed_at_ns"} <= set(table.column_names)  # what the reconciliation reads
    assert table.column("offset").to_pylist() == [10, 4, 11, 0, 5]
    assert set(table.column("replica_id").to_pylist()) == {"r-1"}
    assert firsts == [True]
    assert metrics.records_processed._value.get() == 5


def test_stopped_batch_writes_and_commits_only_the_finished_prefix(tmp_path) -> None:
    clock, metrics = FakeClock(), ReplicaMetrics(FakeClock())
    proc, _ = _processor(tmp_path, clock, metrics)
    msgs = messages([(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)])
    out = proc.process(msgs, lambda: clock.now() >= 0.005)  # after one wave of 2 records
    assert (out.records_done, out.messages_done, out.stopped_early) == (2, 2, True)
    assert out.offsets == {0: 1, 1: 1}
    assert read_store(tmp_path / "store").num_rows == 2


def test_batch_of_only_malformed_messages_commits_them_and_writes_nothing(tmp_path) -> None:
    clock, metrics = FakeClock(), ReplicaMetrics(FakeClock())
    proc, _ = _processor(tmp_path, clock, metrics)
    out = proc.process([FakeMessage(3, 9, b"bad")], lambda: False)
    assert out.offsets == {3: 10} and out.records_done == 0
    assert read_store(tmp_path / "store").num_rows == 0
    assert metrics.records_malformed._value.get() == 1
