"""From polled Kafka messages to an Arrow table of records, and back to offsets to commit.

The value layout is the contract's (:mod:`pytest_lagscale.contract.wire`: entity_id u64,
payload 256 B, ts i64 ns, seq u64; 280 bytes little-endian). ``decode`` is the one place that
knows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np
import pyarrow as pa

from pytest_lagscale.contract.wire import EVENT_SIZE_BYTES, decode_events

RECORD_SCHEMA = pa.schema(
    [
        ("row", pa.int32()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("entity_id", pa.int64()),
        ("ts_ns", pa.int64()),
        ("seq", pa.int64()),
        ("processed_at_ns", pa.int64()),
    ]
)


class Message(Protocol):
    """The part of ``confluent_kafka.Message`` a batch needs."""

    def partition(self) -> int | None: ...

    def offset(self) -> int | None: ...

    def value(self) -> bytes | None: ...


@dataclass(frozen=True)
class DecodedBatch:
    """One polled batch, decoded.

    Attributes:
        records: :data:`RECORD_SCHEMA` table, one row per well-formed message, in poll order;
            ``row`` numbers the rows 0..n-1.
        partitions: int32 partition of every message (well-formed or not), in poll order.
        offsets: int64 offset of every message, in poll order.
        message_index: int64, for each record row, its index among all messages.
        malformed: messages whose value is not ``EVENT_SIZE_BYTES`` long (skipped, committed).
    """

    records: pa.Table
    partitions: np.ndarray
    offsets: np.ndarray
    message_index: np.ndarray
    malformed: int

    def messages_done(self, records_done: int) -> int:
        """How many leading messages are finished when ``records_done`` records are written.

        Malformed messages count as finished as soon as every record before them is.
        """
        if records_done >= len(self.message_index):
            return len(self.partitions)
        return int(self.message_index[records_done])


def well_formed(value: bytes | None) -> bool:
    """True for a value :func:`decode` reads: exactly ``EVENT_SIZE_BYTES`` (280) bytes."""
    return value is not None and len(value) == EVENT_SIZE_BYTES


def decode(values: Sequence[bytes]) -> dict[str, np.ndarray]:
    """Decode 280-byte event values into columns.

    Returns:
        ``entity_id``, ``ts_ns`` and ``seq`` as int64 arrays (the u64 fields reinterpreted;
        the load generator keeps them below 2**63), one element per value, in order.

    Raises:
        ValueError: a value is not ``EVENT_SIZE_BYTES`` long.
    """
    events = decode_events(values)
    return {
        "entity_id": events["entity_id"].view(np.int64),
        "ts_ns": events["ts"].astype(np.int64, copy=False),
        "seq": events["seq"].view(np.int64),
    }


def decode_messages(messages: Sequence[Message], processed_at_ns: int) -> DecodedBatch:
    """Decode a polled batch (messages without errors) into records.

    Args:
        messages: the batch, in poll order.
        processed_at_ns: processing timestamp, ns since the Unix epoch, stamped on every row.
    """
    n = len(messages)
    partitions = np.empty(n, dtype=np.int32)
    offsets = np.empty(n, dtype=np.int64)
    values: list[bytes] = []
    index: list[int] = []
    for i, msg in enumerate(messages):
        partitions[i] = msg.partition()
        offsets[i] = msg.offset()
        value = msg.value()
        if well_formed(value):
            values.append(value)
            index.append(i)
    message_index = np.asarray(index, dtype=np.int64)
    cols = decode(values) if values else {
        k: np.empty(0, np.int64) for k in ("entity_id", "ts_ns", "seq")}
    k = len(values)
    records = pa.Table.from_arrays(
        [
            pa.array(np.arange(k, dtype=np.int32)),
            pa.array(partitions[message_index]),
            pa.array(offsets[message_index]),
            pa.array(cols["entity_id"]),
            pa.array(cols["ts_ns"]),
            pa.array(cols["seq"]),
            pa.array(np.full(k, processed_at_ns, dtype=np.int64)),
        ],
        schema=RECORD_SCHEMA,
    )
    return DecodedBatch(records, partitions, offsets, message_index, n - k)


def next_offsets(partitions: np.ndarray, offsets: np.ndarray) -> dict[int, int]:
    """Offsets to commit: for each partition present, its largest offset + 1.

    Args:
        partitions: int partition per message.
        offsets: int64 offset per message (same length).

    Returns:
        ``{partition: next offset}``; empty for empty input.
    """
    if len(partitions) == 0:
        return {}
    top = np.full(int(partitions.max()) + 1, -1, dtype=np.int64)
    np.maximum.at(top, partitions, offsets)
    present = np.flatnonzero(top >= 0)
    return {int(p): int(top[p]) + 1 for p in present}
