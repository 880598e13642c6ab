"""A consumer measured from the broker's side only: the group observer's events turned into the
replica events and record times the measurements read.

A command consumer writes no event log and no store; what the run knows of it is the platform's
events (``replica_started``, ``replica_ready``) and the group observer's (``group.events.jsonl``:
``member_joined``, ``member_assigned``, ``member_first_commit``, ``committed_offsets``).

* :func:`attribute_members` gives each member the replica it most likely is: members in the
  order they appeared, each to the oldest replica started before it that has no member yet
  (local replicas share one host, so the member's host cannot tell them apart).
* :func:`broker_replica_records` adds, per attributed member, the replica events the reaction
  decomposition reads (:mod:`.reaction`): ``joined`` and ``assigned`` at the member's first
  assignment, ``first_record`` at its first commit (so "first fetch" there is assignment ->
  first commit), each with ``via: "group"``.
* :func:`commit_times` is the group's completions from committed-offset progress (the delta
  between two reads, placed at the later read's time), a
  :class:`~.store_rate.StoreTimes` with ``replica_id`` ``"group"`` and no produced times, so
  rates and dips can be read as from a store, at the resolution of the observer's interval.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import pandas as pd

from .store_rate import BIN_S, StoreTimes

#: Where a command consumer's events come from, in the records they are added to.
VIA = "group"


def attribute_members(records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{member_id: replica_id}`` from ``replica_started`` (platform) and ``member_joined``
    (group) records, matched in time order (see the module docstring). A member that appears
    before any unmatched replica started (a consumer outside the run) is left out."""
    started: list[tuple[float, str]] = []
    joined: list[tuple[float, str]] = []
    for r in records:
        if r.get("event") == "replica_started" and r.get("replica_id"):
            started.append((float(r["monotonic_s"]), str(r["replica_id"])))
        elif r.get("event") == "member_joined" and r.get("member_id"):
            joined.append((float(r["monotonic_s"]), str(r["member_id"])))
    started.sort()
    out: dict[str, str] = {}
    taken: set[str] = set()
    for at_s, member in sorted(joined):
        replica = next((rid for t, rid in started if t <= at_s and rid not in taken), None)
        if replica is not None and member not in out:
            out[member] = replica
            taken.add(replica)
    return out


def broker_replica_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` plus the replica events a command consumer's group shows (module
    docstring), ordered by ``monotonic_s``."""
    owner = attribute_members(records)
    added = []
    for r in records:
        member = r.get("member_id")
        replica = owner.get(str(member)) if member is not None else None
        if replica is None or r.get("source") != VIA:
            continue
        base = {k: r[k] for k in ("wall_time", "wall_ns", "monotonic_s") if k in r}
        if r["event"] == "member_assigned":
            for name in ("joined", "assigned"):
                added.append({**base, "event": name, "source": replica, "replica_id": replica,
                              "partitions": list(r.get("partitions") or []), "via": VIA,
                              "member_id": member})
        elif r["event"] == "member_first_commit":
            added.append({**base, "event": "first_record", "source": replica,
                          "replica_id": replica, "partition": r.get("partition"), "via": VIA,
                          "member_id": member})
    return sorted([*records, *added], key=lambda r: float(r["monotonic_s"]))


def commit_times(records: Iterable[Mapping[str, Any]], origin_s: float) -> StoreTimes | None:
    """The group's completions from ``committed_offsets`` records (source ``group``): per
    partition, the offsets a read shows past the previous read, in the read's bin of run
    seconds (``monotonic_s - origin_s``). None with fewer than two reads."""
    reads = sorted((float(r["monotonic_s"]), r.get("offsets") or {}) for r in records
                   if r.get("event") == "committed_offsets" and r.get("source") == VIA)
    if len(reads) < 2:
        return None
    rows = []
    previous: dict[int, int] = {}
    for at_s, offsets in reads:
        now = {int(p): int(o) for p, o in offsets.items()}
        for partition, offset in now.items():
            before = max(previous.get(partition, -1), 0) if partition in previous else None
            if before is not None and offset > before:
                bin_s = math.floor(round((at_s - origin_s) / BIN_S, 6)) * BIN_S
                rows.append((round(bin_s, 6), VIA, partition, offset - before))
        previous = now
    completed = pd.DataFrame(rows, columns=["t_s", "replica_id", "partition", "records"])
    completed = completed.astype({"t_s": "float64", "partition": "int64", "records": "int64"})
    produced = completed.iloc[0:0].drop(columns=["replica_id"])
    return StoreTimes(completed, produced, batch_interval_s=None)


__all__ = ["VIA", "attribute_members", "broker_replica_records", "commit_times"]
