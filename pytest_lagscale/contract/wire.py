"""The record wire format (contract layer): the load generator writes it, the replica reads it.

Binary layout of one record value (little-endian, no padding, ``EVENT_SIZE_BYTES`` = 280 bytes;
``struct`` format ``EVENT_STRUCT_FORMAT`` = ``"<Q256sqQ"``; numpy ``EVENT_DTYPE``):

==========  ======  =========  ========================================================
offset (B)  size B  field      meaning
==========  ======  =========  ========================================================
0           8       entity_id  uint64: entity the event belongs to (the generator's bounded Zipf)
8           256     payload    256 opaque bytes from the seeded generator
264         8       ts         int64: wall-clock send time, ns since the Unix epoch (UTC)
272         8       seq        uint64: global sequence number, 0-based, in send order
==========  ======  =========  ========================================================

Record key: ``entity_id`` as 8 bytes **big-endian** unsigned (``struct`` ``">Q"``), the encoding of
Kafka's Java ``LongSerializer`` (a Java consumer reads it with ``LongDeserializer``).

Consumers decode a batch of values with ``decode_events(values)`` (one ``numpy.frombuffer`` over
the joined bytes, a structured array of ``EVENT_DTYPE``), or one value with ``decode_event``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Sequence

import numpy as np

EVENT_STRUCT_FORMAT = "<Q256sqQ"
PAYLOAD_SIZE_BYTES = 256
EVENT_SIZE_BYTES = struct.calcsize(EVENT_STRUCT_FORMAT)
KEY_STRUCT_FORMAT = ">Q"
KEY_SIZE_BYTES = 8
EVENT_DTYPE = np.dtype(
    [
        ("entity_id", "<u8"),
        ("payload", "u1", (PAYLOAD_SIZE_BYTES,)),
        ("ts", "<i8"),
        ("seq", "<u8"),
    ]
)
assert EVENT_DTYPE.itemsize == EVENT_SIZE_BYTES == 280


class Event(NamedTuple):
    """One decoded event (see the module docstring for units)."""

    entity_id: int
    payload: bytes
    ts: int
    seq: int


def encode_event(event: Event) -> bytes:
    """Encode one event into its 280-byte value.

    Raises:
        struct.error: a field is out of its type's range or the payload is not 256 bytes.
    """
    if len(event.payload) != PAYLOAD_SIZE_BYTES:
        raise struct.error(f"payload: {len(event.payload)} bytes; expected {PAYLOAD_SIZE_BYTES}")
    return struct.pack(EVENT_STRUCT_FORMAT, event.entity_id, event.payload, event.ts, event.seq)


def decode_event(value: bytes) -> Event:
    """Decode one 280-byte record value.

    Raises:
        struct.error: ``value`` is not exactly ``EVENT_SIZE_BYTES`` long.
    """
    return Event(*struct.unpack(EVENT_STRUCT_FORMAT, value))


def encode_events(events: np.ndarray) -> bytes:
    """Encode a structured array of ``EVENT_DTYPE`` into concatenated 280-byte values.

    Raises:
        ValueError: ``events`` does not have dtype ``EVENT_DTYPE``.
    """
    if events.dtype != EVENT_DTYPE:
        raise ValueError(f"events: dtype {events.dtype!r}; expected EVENT_DTYPE")
    return np.ascontiguousarray(events).tobytes()


def decode_events(values: bytes | bytearray | memoryview | Sequence[bytes]) -> np.ndarray:
    """Decode record values into a structured array, one row per event (vectorised).

    Args:
        values: concatenated values, or a sequence of single 280-byte values (joined first).

    Returns:
        A read-only array of dtype ``EVENT_DTYPE`` (columns entity_id u8, payload u1[256],
        ts i8 in ns since the epoch, seq u8), one row per event, in input order.

    Raises:
        ValueError: the total length is not a multiple of ``EVENT_SIZE_BYTES``, or one of the
            given values is not exactly ``EVENT_SIZE_BYTES`` long.
    """
    if not isinstance(values, (bytes, bytearray, memoryview)):
        bad = [i for i, v in enumerate(values) if len(v) != EVENT_SIZE_BYTES]
        if bad:
            raise ValueError(
                f"values[{bad[0]}]: {len(values[bad[0]])} bytes; every value must be "
                f"{EVENT_SIZE_BYTES} bytes (EVENT_DTYPE)"
            )
        values = b"".join(values)
    if len(values) % EVENT_SIZE_BYTES:
        raise ValueError(
            f"values: {len(values)} bytes is not a multiple of {EVENT_SIZE_BYTES} (EVENT_DTYPE)"
        )
    return np.frombuffer(values, dtype=EVENT_DTYPE)


def encode_keys(entity_ids: np.ndarray) -> bytes:
    """Concatenated 8-byte big-endian keys for ``entity_ids`` (uint64 array)."""
    return np.asarray(entity_ids, dtype=">u8").tobytes()
