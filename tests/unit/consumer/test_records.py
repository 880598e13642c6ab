"""Decoding polled messages and computing the offsets to commit."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_lagscale.contract.wire import EVENT_SIZE_BYTES
from spark_consumer.records import RECORD_SCHEMA, decode, decode_messages, next_offsets

from .fakes import FakeMessage, event_values, messages


def test_decode_reads_the_load_generator_layout() -> None:
    values = event_values(3, first_seq=10, ts_ns=123, entity_ids=np.array([1, 2, 2**40]))
    cols = decode(values)
    assert cols["seq"].tolist() == [10, 11, 12]
    assert cols["entity_id"].tolist() == [1, 2, 2**40]
    assert cols["ts_ns"].tolist() == [123] * 3
    assert all(c.dtype == np.int64 for c in cols.values())


def test_decode_rejects_a_value_of_the_wrong_size() -> None:
    with pytest.raises(ValueError, match="280 bytes"):
        decode([b"x" * (EVENT_SIZE_BYTES - 1)])


def test_batch_keeps_poll_order_and_stamps_processing_time() -> None:
    batch = decode_messages(messages([(3, 7), (1, 0), (3, 8)], first_seq=5), processed_at_ns=99)
    assert batch.records.schema == RECORD_SCHEMA
    assert batch.records.column("row").to_pylist() == [0, 1, 2]
    assert batch.records.column("partition").to_pylist() == [3, 1, 3]
    assert batch.records.column("offset").to_pylist() == [7, 0, 8]
    assert batch.records.column("seq").to_pylist() == [5, 6, 7]
    assert batch.records.column("processed_at_ns").to_pylist() == [99] * 3
    assert batch.malformed == 0


def test_malformed_values_are_skipped_but_finish_with_their_neighbours() -> None:
    good = event_values(2)
    msgs = [FakeMessage(0, 0, b"short"), FakeMessage(0, 1, good[0]), FakeMessage(1, 5, None),
            FakeMessage(0, 2, good[1])]
    batch = decode_messages(msgs, processed_at_ns=0)
    assert batch.malformed == 2 and batch.records.num_rows == 2
    assert batch.message_index.tolist() == [1, 3]
    assert [batch.messages_done(k) for k in (0, 1, 2)] == [1, 3, 4]


@pytest.mark.parametrize("parts, offs, expected", [
    pytest.param([], [], {}, id="empty"),
    pytest.param([0, 0, 2], [5, 9, 0], {0: 10, 2: 1}, id="max-plus-one-per-partition"),
    pytest.param([4, 1, 4], [3, 2, 1], {1: 3, 4: 4}, id="out-of-order"),
])
def test_next_offsets(parts: list[int], offs: list[int], expected: dict[int, int]) -> None:
    got = next_offsets(np.array(parts, dtype=np.int32), np.array(offs, dtype=np.int64))
    assert got == expected
