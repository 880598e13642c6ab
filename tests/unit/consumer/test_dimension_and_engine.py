"""The committed dimension table and the Arrow engine's enrichment."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pytest_lagscale.contract.errors import ConfigError
from spark_consumer.dimension import DIMENSION_SCHEMA, load_dimension
from spark_consumer.engine import ENRICHED_SCHEMA, Engine, make_engine
from spark_consumer.options import DEFAULT_DIMENSION
from spark_consumer.records import decode_messages

from .fakes import FakeMessage, event_values


@pytest.fixture(scope="module")
def dimension() -> pa.Table:
    return load_dimension(DEFAULT_DIMENSION)


def test_committed_dimension_has_one_row_per_bucket(dimension: pa.Table) -> None:
    assert dimension.schema == DIMENSION_SCHEMA
    assert dimension.num_rows == 10_000
    assert dimension.column("bucket").to_pylist() == list(range(10_000))
    assert set(dimension.column("segment").to_pylist()) == {
        "consumer", "smb", "mid_market", "enterprise", "public_sector", "partner"}


def test_dimension_with_gaps_is_rejected(tmp_path) -> None:
    bad = tmp_path / "dim.csv"
    bad.write_text("bucket,segment,region\n0,a,x\n2,b,y\n")
    with pytest.raises(ConfigError) as info:
        load_dimension(bad)
    assert info.value.problems == [
        f"--dimension: {str(bad)!r} has 2 rows whose buckets are not exactly 0..n-1; give "
        "every bucket from 0 to n-1 exactly once"]


def test_arrow_engine_joins_buckets_and_computes_lag_in_input_order(dimension) -> None:
    engine = make_engine("arrow", dimension).start()
    assert isinstance(engine, Engine) and engine.name == "arrow"
    ids = np.array([10_003, 3, 9_999, 20_000], dtype=np.uint64)
    values = event_values(4, ts_ns=1_000_000_000, entity_ids=ids)
    msgs = [FakeMessage(p, o, v) for (p, o), v in zip([(0, 1), (1, 1), (0, 2), (2, 0)], values)]
    records = decode_messages(msgs, processed_at_ns=1_250_000_000).records
    out = engine.enrich(records)
    assert out.schema == ENRICHED_SCHEMA
    assert out.column("row").to_pylist() == [0, 1, 2, 3]
    assert out.column("bucket").to_pylist() == [3, 3, 9_999, 0]
    segments = dimension.column("segment").to_pylist()
    assert out.column("segment").to_pylist() == [segments[3], segments[3], segments[9_999],
                                                 segments[0]]
    assert out.column("event_lag_ms").to_pylist() == [250.0] * 4
    engine.stop()


def test_unknown_engine_is_rejected(dimension) -> None:
    with pytest.raises(ValueError, match="--engine: 'flink' is not one of spark, arrow"):
        make_engine("flink", dimension)
