"""The producer of a twin run: the profile's schedule and the seeded generator's exact keys.

Record ``i`` of a run is sent at ``Schedule.send_time(i)`` (the open model of
:mod:`pytest_lagscale.load.schedule`) with the key of the ``i``-th event of
:class:`pytest_lagscale.load.events.EventSource` for the profile's seed: ``entity_id`` = the
Zipf rank drawn by ``zipf_ranks(zipf_cdf(entities, zipf_s), u)`` from the key generator
``Generator(PCG64(SeedSequence(seed).spawn(2)[0])).random`` (the same stream, whatever the
block size). The producer partitions by key with librdkafka's ``murmur2_random``: Java's
``Utils.murmur2`` of the 8 big-endian key bytes, made positive (``& 0x7fffffff``), modulo P.
So the twin's per-partition input is the real run's, record for record (checked against a real
run's producer manifest in tests/unit/twin/test_load.py). Above :data:`EXACT_RECORDS_LIMIT`
records (far past any real run here) each partition gets its expected share instead: the
same murmur2 mapping of every entity, weighted by the entity's Zipf probability.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..load.events import zipf_cdf, zipf_ranks
from ..load.profiles import Profile
from ..load.schedule import Schedule

_M = np.uint64(0x5BD1E995)
_MASK32 = np.uint64(0xFFFFFFFF)
_SEED = 0x9747B28C
#: Above this many records a run's per-partition input is each partition's expected share
#: (:func:`expected_cumulative`) instead of record-exact keys: 20M keys take ~3 s and 160 MB,
#: the scale benchmark's 1.75 billion would take minutes and 14 GB.
EXACT_RECORDS_LIMIT = 20_000_000


def _mul32(a: np.ndarray, b: np.uint64) -> np.ndarray:
    return (a * b) & _MASK32


def _bswap32(x: np.ndarray) -> np.ndarray:
    return (((x & np.uint64(0xFF)) << np.uint64(24)) | ((x & np.uint64(0xFF00)) << np.uint64(8))
            | ((x >> np.uint64(8)) & np.uint64(0xFF00)) | ((x >> np.uint64(24)) & np.uint64(0xFF)))


def murmur2_keys(entity_ids: np.ndarray) -> np.ndarray:
    """Java ``Utils.murmur2`` of each 8-byte big-endian key (``entity_id`` as ``>u8``).

    Args:
        entity_ids: unsigned 64-bit entity ids, any shape.

    Returns:
        uint64 array of the 32-bit hashes (unsigned), same shape.
    """
    ids = np.asarray(entity_ids, dtype=np.uint64)
    h = np.full(ids.shape, (_SEED ^ 8) & 0xFFFFFFFF, dtype=np.uint64)
    # the key's bytes b0..b7 are big-endian; murmur2 reads 4-byte little-endian words
    for word in (_bswap32(ids >> np.uint64(32)), _bswap32(ids & _MASK32)):
        k = _mul32(word, _M)
        k ^= k >> np.uint64(24)
        k = _mul32(k, _M)
        h = _mul32(h, _M) ^ k
    h ^= h >> np.uint64(13)
    h = _mul32(h, _M)
    h ^= h >> np.uint64(15)
    return h


def partitions_of(entity_ids: np.ndarray, partitions: int) -> np.ndarray:
    """The partition librdkafka's ``murmur2_random`` gives each key: ``(murmur2 & 0x7fffffff)
    % partitions`` (int32 array)."""
    h = murmur2_keys(entity_ids) & np.uint64(0x7FFFFFFF)
    return (h % np.uint64(partitions)).astype(np.int32)


def record_entities(profile: Profile, records: int) -> np.ndarray:
    """``entity_id`` of the first ``records`` events of the profile's seeded generator (uint64)."""
    key_seq = np.random.SeedSequence(profile.seed).spawn(2)[0]
    u = np.random.Generator(np.random.PCG64(key_seq)).random(records)
    return zipf_ranks(zipf_cdf(profile.entities, profile.zipf_s), u)


@dataclass(frozen=True)
class Production:
    """Records produced per partition over the run, on the twin's tick grid.

    Attributes:
        tick_s: the grid step, seconds.
        cumulative: int64 array, shape (ticks + 1, partitions): records produced into each
            partition by ``k * tick_s`` seconds (row k).
        total_records: records of the whole schedule.
        end_s: the schedule's end, seconds.
    """

    tick_s: float
    cumulative: np.ndarray
    total_records: int
    end_s: float

    def at(self, tick: int) -> np.ndarray:
        """Records produced per partition by tick ``tick`` (the last row after the end)."""
        return self.cumulative[min(tick, len(self.cumulative) - 1)]

    def counts(self) -> tuple[int, ...]:
        """Records produced per partition over the whole run (the manifest's counts)."""
        return tuple(int(c) for c in self.cumulative[-1])


def production(profile: Profile, tick_s: float) -> Production:
    """Every partition's produced records at each tick of ``tick_s`` seconds.

    Args:
        profile: the run's profile (schedule, seed, entities, Zipf exponent, partitions).
        tick_s: the twin's step, seconds (> 0).

    Returns:
        A :class:`Production` covering ``[0, profile end]``.
    """
    schedule = Schedule(profile.schedule())
    total = schedule.total_records
    ticks = int(np.ceil(schedule.end_s / tick_s)) + 1
    due = np.array([schedule.due_count(k * tick_s) for k in range(ticks + 1)], dtype=np.int64)
    if total > EXACT_RECORDS_LIMIT:
        cumulative = expected_cumulative(profile, due)
        return Production(tick_s, cumulative, int(cumulative[-1].sum()), float(schedule.end_s))
    parts = partitions_of(record_entities(profile, total), profile.partitions)
    cumulative = np.empty((ticks + 1, profile.partitions), dtype=np.int64)
    for p in range(profile.partitions):
        cumulative[:, p] = np.searchsorted(np.flatnonzero(parts == p), due, side="left")
    return Production(tick_s, cumulative, int(total), float(schedule.end_s))


def partition_shares(profile: Profile) -> np.ndarray:
    """Each partition's expected share of the seeded generator's records: the Zipf probability
    of every entity summed over the entities murmur2 maps to it (float64, shape (P,), sums
    to 1)."""
    cdf = zipf_cdf(profile.entities, profile.zipf_s)
    pmf = np.diff(cdf, prepend=0.0)
    owners = partitions_of(np.arange(profile.entities, dtype=np.uint64), profile.partitions)
    return np.bincount(owners, weights=pmf, minlength=profile.partitions)


def expected_cumulative(profile: Profile, due: np.ndarray) -> np.ndarray:
    """Records produced per partition by each of ``due`` (records due, non-decreasing), from
    :func:`partition_shares`: partition p holds ``floor(due x share[p])``, so no column
    decreases and each row falls short of its ``due`` by the dropped fractions, fewer than P
    records (int64, shape (len(due), P)). The twin's produced count is this table's, so
    produced == processed still holds exactly inside the twin."""
    shares = partition_shares(profile)
    return np.floor(due[:, None].astype(np.float64) * shares[None, :]).astype(np.int64)


__all__ = ["EXACT_RECORDS_LIMIT", "Production", "expected_cumulative", "murmur2_keys",
           "partition_shares", "partitions_of", "production", "record_entities"]
