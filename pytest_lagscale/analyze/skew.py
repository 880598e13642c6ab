"""Ideal drain time and oracle replicas under skewed keys and whole-partition assignment.

Keys are Zipf(1.1) over 5M entities, so partitions do not carry equal shares of the input (in
the spike-demo run the hottest of 8 carried 22.2 %), and a partition is consumed by one group
member at a time, at most at one replica's capacity. Inputs:

* **shares**: each partition's fraction of the input, from the producer's manifest
  (``Manifest.counts()``: records acknowledged per partition over the whole run), so the input
  of partition p at time t is ``produce_rate(t) x share_p``. Without a manifest the shares are
  uniform (1 / P).
* **per-partition backlog** at the spike end: exact from the store when it is read
  (:meth:`.store_rate.StoreTimes.backlog_at`: produced before, written after), otherwise
  estimated as total backlog x share.

**Ideal drain time** = max of two lower bounds: the slowest partition, max over p of
``backlog_p / (capacity - input_p)`` (one replica serves a partition, at most at its capacity),
and the group, ``backlog / (full_replicas x capacity - input)``. None when either cannot drain
(spare capacity <= 0).

**Oracle replicas** at input rate R = the fewest replicas n in [min, full] such that the most
loaded member keeps up: ``R x L(n) <= capacity``, where L(n) is the largest member share when
the P partitions are spread as evenly as an assignor can (each member gets floor or ceil of
P / n partitions) and, within that, packed greedily hottest-first onto the least-loaded member
with a free slot (ties: the member with fewer free slots, so hot partitions share less).
Since L(n) >= 1 / n this also gives total capacity >= R. When even the full group cannot keep
up (the hottest partition alone exceeds one replica's capacity), the oracle is capped at the
full replicas and the seconds spent so are counted (``capped_s``).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class IdealDrain:
    """The skew-aware ideal drain (see the module docstring).

    Attributes:
        time_s: max of the two bounds, seconds; 0.0 without backlog; None when it cannot drain.
        partition_bound_s: the slowest partition's drain, seconds (None: cannot drain).
        group_bound_s: the whole group's drain, seconds (None: cannot drain).
        slowest_partition: the partition of ``partition_bound_s``.
        backlog_source: ``"store"`` or ``"total x share"``.
    """

    time_s: float | None
    partition_bound_s: float | None
    group_bound_s: float | None
    slowest_partition: int | None
    backlog_source: str

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (JSON-able)."""
        return asdict(self)


def partition_shares(counts: Sequence[int] | None, partitions: int) -> tuple[float, ...]:
    """Each partition's share of the input (sums to 1); uniform without counts or records.

    Args:
        counts: records per partition, index = partition (``Manifest.counts()`` in partition
            order); None: unknown.
        partitions: P.

    Raises:
        ValueError: ``counts`` has a length other than ``partitions`` or a negative count.
    """
    if counts is None or not sum(counts):
        return tuple([1.0 / partitions] * partitions)
    if len(counts) != partitions or min(counts) < 0:
        raise ValueError(f"counts: {list(counts)!r} must be {partitions} counts >= 0 records, "
                         "one per partition; pass Manifest.counts() in partition order")
    total = float(sum(counts))
    return tuple(c / total for c in counts)


def counts_by_partition(counts: Mapping[int, int], partitions: int) -> tuple[int, ...]:
    """``Manifest.counts()`` (``{partition: records}``) as a tuple indexed by partition
    (0 for a partition it lacks; partitions >= ``partitions`` are ignored)."""
    return tuple(int(counts.get(p, 0)) for p in range(partitions))


@lru_cache(maxsize=8192)  # a run scans n = 1..P for each rate: P up to 1,024 must fit
def max_member_share(shares: tuple[float, ...], members: int) -> float:
    """L(n): the largest member share of the packing described in the module docstring.

    Raises:
        ValueError: ``members`` < 1.
    """
    if members < 1:
        raise ValueError(f"members: {members!r} must be >= 1")
    members = min(members, len(shares))
    low, extra = divmod(len(shares), members)
    # members with a free slot, ordered by (load, free slots, index): the heap pops the member
    # the packing picks, ties broken by the lowest index (O(P log n) instead of O(P x n))
    heap = [(0.0, low + 1 if m < extra else low, m) for m in range(members)]
    heap = [entry for entry in heap if entry[1] > 0]
    heapq.heapify(heap)
    loads = [0.0] * members
    for share in sorted(shares, reverse=True):
        load, slots, m = heapq.heappop(heap)
        loads[m] = load + share
        if slots > 1:
            heapq.heappush(heap, (loads[m], slots - 1, m))
    return max(loads)


def oracle_replicas(rate_per_s: float, shares: tuple[float, ...], capacity_per_s: float,
                    min_replicas: int, full_replicas: int) -> tuple[int, bool]:
    """(replicas, capped): the fewest n in [min_replicas, full_replicas] with
    ``rate x L(n) <= capacity``; (full_replicas, True) when none.

    Raises:
        ValueError: ``capacity_per_s`` is not positive.
    """
    if capacity_per_s <= 0:
        raise ValueError(f"capacity_per_s: {capacity_per_s!r} must be > 0 records/s; "
                         "measure one replica's throughput first")
    low = max(min_replicas, 1)
    for n in range(low, max(full_replicas, low) + 1):
        if rate_per_s * max_member_share(shares, n) <= capacity_per_s * (1 + 1e-9):
            return n, False
    return max(full_replicas, low), True


def oracle_replica_seconds(timeline: pd.DataFrame, shares: tuple[float, ...],
                           capacity_per_s: float, min_replicas: int,
                           full_replicas: int) -> tuple[float, float]:
    """(replica-seconds, capped seconds) of :func:`oracle_replicas` over ``produce_rate_per_s``.

    A row's value holds from its ``t_s`` to the next row's (the last row 1 s).
    """
    times = timeline["t_s"].to_numpy(dtype=float)
    durations = np.append(np.diff(times), 1.0) if len(times) else times
    rates = timeline["produce_rate_per_s"].to_numpy(dtype=float)
    by_rate = {r: oracle_replicas(r, shares, capacity_per_s, min_replicas, full_replicas)
               for r in dict.fromkeys(rates.tolist())}
    picks = [by_rate[r] for r in rates.tolist()]
    replicas = np.array([n for n, _ in picks], dtype=float)
    capped = np.array([c for _, c in picks], dtype=bool)
    return float(np.sum(replicas * durations)), float(np.sum(durations[capped]))


def _drain_s(backlog: float, spare_per_s: float) -> float | None:
    """Seconds to drain ``backlog`` at ``spare_per_s``; None when it never drains."""
    if backlog <= 0 and spare_per_s >= 0:
        return 0.0
    return float(backlog / spare_per_s) if spare_per_s > 0 else None


def ideal_drain(backlog_records: float, partition_backlogs: Sequence[float] | None,
                shares: tuple[float, ...], capacity_per_s: float, full_replicas: int,
                input_rate_per_s: float) -> IdealDrain:
    """The skew-aware ideal drain time.

    Args:
        backlog_records: the group's backlog at the spike end, records.
        partition_backlogs: the backlog per partition (index = partition), records; None:
            ``backlog_records x share``.
        shares: :func:`partition_shares`.
        capacity_per_s: one replica's throughput, records/s.
        full_replicas: min(maxReplicaCount, P).
        input_rate_per_s: the mean produce rate during the drain, records/s.
    """
    source = "store" if partition_backlogs is not None else "total x share"
    backlogs = (np.asarray(partition_backlogs, dtype=float) if partition_backlogs is not None
                else backlog_records * np.asarray(shares))
    per_partition = [_drain_s(b, capacity_per_s - input_rate_per_s * s)
                     for b, s in zip(backlogs, shares)]
    group = _drain_s(backlog_records, full_replicas * capacity_per_s - input_rate_per_s)
    slowest = int(np.argmax([math.inf if d is None else d for d in per_partition]))
    bound = per_partition[slowest]
    time_s = None if bound is None or group is None else max(bound, group)
    return IdealDrain(time_s, bound, group, slowest, source)


def hottest(shares: tuple[float, ...]) -> tuple[int, float]:
    """(partition, share) of the largest share."""
    index = int(np.argmax(shares))
    return index, float(shares[index])
