"""The events the load generator sends: one fixed binary layout, seeded keys and payloads.

The record format (280-byte values, 8-byte big-endian keys, ``EVENT_DTYPE``, the encoders and
decoders) is the contract's, :mod:`pytest_lagscale.contract.wire`, re-exported here.

Determinism: for one seed, the sequence of ``entity_id``, ``payload`` and ``seq`` values is fixed,
whatever the batch sizes it is drawn in. ``ts`` is the only non-deterministic field: the producer
stamps each chunk with ``time.time_ns()`` just before handing it to the client (records of one
chunk, at most 8192 sent in one 5 ms pacing tick, share a ``ts``).

Keys: ``entity_id`` = rank - 1 of a bounded Zipf law over ``entities`` ranks (default 5,000,000,
exponent 1.1): P(rank k) = k^-s / H(N, s). Entity 0 is the hottest. Sampling is inverse-CDF with
``numpy.searchsorted`` over precomputed cumulative weights, fed by
``Generator(PCG64(SeedSequence(seed).spawn(2)[0])).random``. Payloads are raw 64-bit outputs of
``PCG64(SeedSequence(seed).spawn(2)[1])`` viewed as bytes (little-endian hosts).
"""

from __future__ import annotations

import functools

import numpy as np

from ..contract.wire import (EVENT_DTYPE, EVENT_SIZE_BYTES, EVENT_STRUCT_FORMAT, KEY_SIZE_BYTES,
                             KEY_STRUCT_FORMAT, PAYLOAD_SIZE_BYTES, Event, decode_event,
                             decode_events, encode_event, encode_events, encode_keys)

__all__ = ["DEFAULT_BLOCK_RECORDS", "DEFAULT_ENTITIES", "DEFAULT_ZIPF_S", "EVENT_DTYPE",
           "EVENT_SIZE_BYTES", "EVENT_STRUCT_FORMAT", "KEY_SIZE_BYTES", "KEY_STRUCT_FORMAT",
           "PAYLOAD_SIZE_BYTES", "Event", "EventSource", "decode_event", "decode_events",
           "encode_event", "encode_events", "encode_keys", "zipf_cdf", "zipf_probabilities",
           "zipf_ranks"]

DEFAULT_ENTITIES = 5_000_000
DEFAULT_ZIPF_S = 1.1
DEFAULT_BLOCK_RECORDS = 8_192


@functools.lru_cache(maxsize=4)
def zipf_cdf(entities: int, exponent: float) -> np.ndarray:
    """Cumulative probabilities of a bounded Zipf law over ranks 1..``entities``.

    Args:
        entities: number of ranks N (>= 1).
        exponent: s >= 0 (0 is uniform).

    Returns:
        A read-only float64 array of length N; element k-1 = P(rank <= k); the last is 1.0.
    """
    weights = np.arange(1, entities + 1, dtype=np.float64) ** -float(exponent)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    cdf.flags.writeable = False
    return cdf


def zipf_probabilities(ranks: np.ndarray, entities: int, exponent: float) -> np.ndarray:
    """Theoretical P(rank = k) for each k in ``ranks`` (1-based) of the bounded Zipf law."""
    norm = float(np.sum(np.arange(1, entities + 1, dtype=np.float64) ** -float(exponent)))
    return np.asarray(ranks, dtype=np.float64) ** -float(exponent) / norm


class EventSource:
    """A deterministic stream of events for one seed (``ts`` left 0 for the sender to stamp).

    Args:
        seed: non-negative integer seed; equal seeds give equal streams.
        entities: number of distinct entity ids (Zipf ranks).
        zipf_s: Zipf exponent s.
        block_records: events generated per vectorised block (memory vs call overhead only;
            the stream does not depend on it).
    """

    def __init__(
        self,
        seed: int,
        *,
        entities: int = DEFAULT_ENTITIES,
        zipf_s: float = DEFAULT_ZIPF_S,
        block_records: int = DEFAULT_BLOCK_RECORDS,
    ):
        key_seq, payload_seq = np.random.SeedSequence(seed).spawn(2)
        self._keys = np.random.Generator(np.random.PCG64(key_seq))
        self._payloads = np.random.PCG64(payload_seq)
        self._cdf = zipf_cdf(entities, zipf_s)
        self._block_records = block_records
        self._block = np.empty(0, dtype=EVENT_DTYPE)
        self._pos = 0
        self._next_seq = 0

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next event will carry (= events handed out so far)."""
        return self._next_seq - (len(self._block) - self._pos)

    def chunk(self, max_n: int) -> np.ndarray:
        """The next 1..``max_n`` events as a writable view into the current block.

        The view never crosses a block boundary, so it may hold fewer than ``max_n`` events;
        it stays valid (and may be stamped with ``ts``) until the source moves past it.
        """
        if self._pos == len(self._block):
            self._block = self._generate(self._block_records)
            self._pos = 0
        k = min(max_n, len(self._block) - self._pos)
        view = self._block[self._pos : self._pos + k]
        self._pos += k
        return view

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` events as a new ``EVENT_DTYPE`` array (``ts`` = 0)."""
        parts, got = [], 0
        while got < n:
            parts.append(self.chunk(n - got).copy())
            got += len(parts[-1])
        return np.concatenate(parts) if parts else np.empty(0, dtype=EVENT_DTYPE)

    def _generate(self, n: int) -> np.ndarray:
        block = np.zeros(n, dtype=EVENT_DTYPE)
        block["entity_id"] = zipf_ranks(self._cdf, self._keys.random(n))
        raw = self._payloads.random_raw(n * PAYLOAD_SIZE_BYTES // 8)
        as_bytes = block.view(np.uint8).reshape(n, EVENT_SIZE_BYTES)
        as_bytes[:, 8 : 8 + PAYLOAD_SIZE_BYTES] = raw.view(np.uint8).reshape(n, -1)
        block["seq"] = np.arange(self._next_seq, self._next_seq + n, dtype=np.uint64)
        self._next_seq += n
        return block


_HEAD_RANKS = 8_192  # 64 KiB of the CDF: stays in cache and takes ~80 % of the draws


def zipf_ranks(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """0-based ranks for uniforms ``u`` in [0, 1) by inverse CDF.

    Equals ``minimum(searchsorted(cdf, u, side="right"), len(cdf) - 1)`` as uint64, computed
    faster: draws landing in the cached head of the CDF are searched there, the rest are sorted
    first so that the search over the full CDF walks memory in order.
    """
    ranks = np.searchsorted(cdf[:_HEAD_RANKS], u, side="right")
    if len(cdf) > _HEAD_RANKS:
        tail = np.flatnonzero(ranks == _HEAD_RANKS)
        tail_u = u[tail]
        order = np.argsort(tail_u)
        found = np.empty(len(tail), dtype=ranks.dtype)
        found[order] = np.searchsorted(cdf, tail_u[order], side="right")
        ranks[tail] = found
    return np.minimum(ranks, len(cdf) - 1).astype(np.uint64)
