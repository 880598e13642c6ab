"""The event layout, encode/decode, and the seeded key/payload stream (pure, no broker)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pytest_lagscale.load.events import (EVENT_DTYPE, EVENT_SIZE_BYTES, EVENT_STRUCT_FORMAT,
                                         Event, EventSource, decode_event, decode_events,
                                         encode_event, encode_events, encode_keys, zipf_cdf,
                                         zipf_probabilities, zipf_ranks)


def test_layout_is_280_little_endian_bytes_with_documented_offsets() -> None:
    assert EVENT_SIZE_BYTES == 280 == struct.calcsize(EVENT_STRUCT_FORMAT) == EVENT_DTYPE.itemsize
    offsets = {name: EVENT_DTYPE.fields[name][1] for name in EVENT_DTYPE.names}
    assert offsets == {"entity_id": 0, "payload": 8, "ts": 264, "seq": 272}
    raw = encode_event(Event(0x0102030405060708, bytes(range(256)), -2, 9))
    assert raw[:8] == bytes([8, 7, 6, 5, 4, 3, 2, 1])  # little-endian entity_id
    assert raw[8:264] == bytes(range(256))
    assert raw[264:272] == b"\xfe" + b"\xff" * 7 and raw[272:] == b"\x09" + b"\x00" * 7


def test_struct_and_numpy_decoders_agree_and_round_trip() -> None:
    events = EventSource(3, entities=1000).take(50)
    events["ts"] = np.arange(50, dtype=np.int64) * 1_000_000_007
    raw = encode_events(events)
    decoded = decode_events(raw)
    assert np.array_equal(decoded, events)
    values = [raw[i : i + EVENT_SIZE_BYTES] for i in range(0, len(raw), EVENT_SIZE_BYTES)]
    assert np.array_equal(decode_events(values), events)
    one = decode_event(values[7])
    assert (one.entity_id, one.ts, one.seq) == (events["entity_id"][7], events["ts"][7], 7)
    assert one.payload == events["payload"][7].tobytes()
    assert encode_event(one) == values[7]


def test_decode_rejects_lengths_that_are_not_whole_events() -> None:
    with pytest.raises(ValueError, match=r"^values: 281 bytes is not a multiple of 280 "
                                         r"\(EVENT_DTYPE\)$"):
        decode_events(b"\0" * 281)
    with pytest.raises(ValueError, match=r"^values\[1\]: 279 bytes; every value must be 280 "
                                         r"bytes \(EVENT_DTYPE\)$"):
        decode_events([b"\0" * 280, b"\0" * 279])


def test_keys_are_eight_byte_big_endian_entity_ids() -> None:
    keys = encode_keys(np.array([1, 256, 2**64 - 1], dtype=np.uint64))
    assert keys == b"\0" * 7 + b"\1" + b"\0" * 6 + b"\1\0" + b"\xff" * 8
    assert struct.unpack(">3Q", keys) == (1, 256, 2**64 - 1)


def test_same_seed_gives_same_keys_payloads_and_seq_whatever_the_chunking() -> None:
    a = EventSource(42, entities=10_000, block_records=1000).take(5000)
    src = EventSource(42, entities=10_000, block_records=777)
    parts = [src.take(n) for n in (1, 2, 997, 3000, 1000)]
    b = np.concatenate(parts)
    assert np.array_equal(a, b)
    assert np.array_equal(a["seq"], np.arange(5000))
    assert (a["ts"] == 0).all()
    c = EventSource(43, entities=10_000).take(5000)
    assert not np.array_equal(a["entity_id"], c["entity_id"])
    assert not np.array_equal(a["payload"], c["payload"])


def test_chunks_are_views_that_never_cross_a_block() -> None:
    src = EventSource(1, entities=100, block_records=10)
    sizes = [len(src.chunk(4)) for _ in range(5)]
    assert sizes == [4, 4, 2, 4, 4] and src.next_seq == 18


def test_zipf_ranks_equal_plain_searchsorted() -> None:
    cdf = zipf_cdf(5_000_000, 1.1)
    u = np.random.default_rng(5).random(100_000)
    expected = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)
    assert np.array_equal(zipf_ranks(cdf, u), expected)


def test_zipf_skew_matches_theory_within_two_percent() -> None:
    """1M draws over 5M entities, s = 1.1 (the EventSource's sampler on a fresh generator):
    P(top-1) ~ 0.118, P(top-10) ~ 0.317; the 2 % relative tolerance is > 6 standard errors."""
    ids = zipf_ranks(zipf_cdf(5_000_000, 1.1), np.random.default_rng(2024).random(1_000_000))
    theory = zipf_probabilities(np.arange(1, 11), 5_000_000, 1.1)
    counts = np.bincount(ids[ids < 10].astype(np.int64), minlength=10) / len(ids)
    assert counts[0] == pytest.approx(theory[0], rel=0.02)
    assert counts.sum() == pytest.approx(theory.sum(), rel=0.02)
    assert theory[0] == pytest.approx(0.118, abs=0.001)
    assert ids.max() < 5_000_000 and len(np.unique(ids)) > 100_000  # a long tail is drawn


def test_encode_events_rejects_other_dtypes() -> None:
    with pytest.raises(ValueError, match=r"^events: dtype .*; expected EVENT_DTYPE$"):
        encode_events(np.zeros(3, dtype=np.uint64))
