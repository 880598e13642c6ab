"""A consumer measured from the broker's side only: the group observer's events turned into the
replica events and record times the measurements read.

A command consumer writes no event log and no store; what the run knows of it is the platform's
events (``replica_started``, ``replica_ready``) and the group observer's (``group.events.jsonl``:
``member_joined``, ``member_assigned``, ``member_first_commit``, ``committed_offsets``).

* :func:`attribute_members` gives each member the replica it most likely is: members in the
  order they appeared, each to the oldest replica started before it that has no member yet
  (local replicas share one host, so the member's host cannot tell them apart).
* :func:`broker_replica_records` adds, per attributed member, the replica events the reaction
  decomposition and the scale steps read (:mod:`.reaction`, :mod:`.rebalance`): ``subscribed``
  when the member appears, ``joined`` and ``assigned`` at its first assignment, ``first_record`` at its first commit (so
  "first fetch" there is assignment -> first commit), and for each rebalance the group showed
  (``rebalance_ended``): ``revoked`` at its start and ``assigned`` at its end for the members
  whose partitions it took and gave, and ``rebalance_done`` with its duration (from the group's
  generations, at the observer's resolution), each with ``via: "group"``.
* :func:`partition_owners` follows, from the observer's ``group_snapshot`` records, which
  replica owned each partition when; the completions below are credited to that replica (a
  per-member consume rate, no help from the consumer; ``"group"`` where no owner is known).
* :func:`output_times` is the group's completions from its output topic's per-record times
  (``output-times.parquet``, :mod:`pytest_lagscale.observe.output_topic`), the best source a
  consumer without a store has; else
* :func:`commit_times` is the group's completions from committed-offset progress (the delta
  between two reads, placed at the later read's time), a
  :class:`~.store_rate.StoreTimes` with no produced times, so
  rates and dips can be read as from a store, at the resolution of the observer's interval.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
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
    first_assigned: set[str] = set()
    for r in records:
        if r.get("source") == VIA and r.get("event") == "rebalance_ended":
            added.extend(_rebalance_records(r, owner, first_assigned))
        member = r.get("member_id")
        replica = owner.get(str(member)) if member is not None else None
        if replica is None or r.get("source") != VIA:
            continue
        base = {k: r[k] for k in ("wall_time", "wall_ns", "monotonic_s") if k in r}
        if r["event"] == "member_joined":  # the member asked to join: its replica subscribed
            added.append({**base, "event": "subscribed", "source": replica,
                          "replica_id": replica, "via": VIA, "member_id": member})
        elif r["event"] == "member_assigned":
            first_assigned.add(str(member))
            for name in ("joined", "assigned"):
                added.append({**base, "event": name, "source": replica, "replica_id": replica,
                              "partitions": list(r.get("partitions") or []), "via": VIA,
                              "member_id": member})
        elif r["event"] == "member_first_commit":
            added.append({**base, "event": "first_record", "source": replica,
                          "replica_id": replica, "partition": r.get("partition"), "via": VIA,
                          "member_id": member})
    return sorted([*records, *added], key=lambda r: float(r["monotonic_s"]))


def _rebalance_records(r: Mapping[str, Any], owner: Mapping[str, str],
                       first_assigned: set[str]) -> list[dict[str, Any]]:
    """The replica callbacks one ``rebalance_ended`` record stands for (module docstring); a
    member's first assignment is its ``member_assigned`` record's, not repeated here."""
    end_s = float(r["monotonic_s"])
    start_s = end_s - float(r.get("duration_s") or 0.0)
    out: list[dict[str, Any]] = []
    replicas = set()
    for name, at_s, key in (("revoked", start_s, "revoked"), ("assigned", end_s, "assigned")):
        for member, partitions in (r.get(key) or {}).items():
            replica = owner.get(str(member))
            if replica is None or (name == "assigned" and member not in first_assigned):
                continue
            replicas.add(replica)
            out.append({"event": name, "monotonic_s": at_s, "source": replica,
                        "replica_id": replica, "partitions": list(partitions), "via": VIA,
                        "member_id": member})
    for replica in sorted(replicas):
        out.append({"event": "rebalance_done", "monotonic_s": end_s, "source": replica,
                    "replica_id": replica, "duration_s": float(r.get("duration_s") or 0.0),
                    "generation": r.get("generation"), "via": VIA})
    return out


def partition_owners(records: Iterable[Mapping[str, Any]]
                     ) -> list[tuple[float, dict[int, str]]]:
    """``[(monotonic_s, {partition: replica_id})]`` in time order, one entry per
    ``group_snapshot`` record (the owners from then on), members attributed by
    :func:`attribute_members`."""
    records = list(records)
    owner = attribute_members(records)
    out = []
    for r in sorted((r for r in records if r.get("event") == "group_snapshot"
                     and r.get("source") == VIA), key=lambda r: float(r["monotonic_s"])):
        owners = {int(p): owner[m["member_id"]] for m in r.get("members") or []
                  if m.get("member_id") in owner for p in m.get("partitions") or []}
        out.append((float(r["monotonic_s"]), owners))
    return out


def _owner_at(owners: list[tuple[float, dict[int, str]]], times: Any, partitions: Any) -> list[str]:
    """The replica owning each ``partition`` at each monotonic time (``"group"``: unknown)."""
    stamps = np.array([t for t, _ in owners])
    index = np.searchsorted(stamps, np.asarray(times, dtype=float), side="right") - 1
    return [owners[i][1].get(int(p), VIA) if i >= 0 else VIA for i, p in zip(index, partitions)]


def commit_times(records: Iterable[Mapping[str, Any]], origin_s: float) -> StoreTimes | None:
    """The group's completions from ``committed_offsets`` records (source ``group``): per
    partition, the offsets a read shows past the previous read, in the read's bin of run
    seconds (``monotonic_s - origin_s``). None with fewer than two reads."""
    records = list(records)
    reads = sorted((float(r["monotonic_s"]), r.get("offsets") or {}) for r in records
                   if r.get("event") == "committed_offsets" and r.get("source") == VIA)
    if len(reads) < 2:
        return None
    owners = partition_owners(records)
    rows = []
    previous: dict[int, int] = {}
    for at_s, offsets in reads:
        now = {int(p): int(o) for p, o in offsets.items()}
        for partition, offset in now.items():
            before = max(previous.get(partition, -1), 0) if partition in previous else None
            if before is not None and offset > before:
                bin_s = math.floor(round((at_s - origin_s) / BIN_S, 6)) * BIN_S
                # committed at this read: credited to the partition's owner just before it
                replica = _owner_at(owners, [at_s - 1e-6], [partition])[0] if owners else VIA
                rows.append((round(bin_s, 6), replica, partition, offset - before))
        previous = now
    completed = pd.DataFrame(rows, columns=["t_s", "replica_id", "partition", "records"])
    completed = completed.astype({"t_s": "float64", "partition": "int64", "records": "int64"})
    produced = completed.iloc[0:0].drop(columns=["replica_id"])
    return StoreTimes(completed, produced, batch_interval_s=None)


def output_times(path: str | Path, records: Iterable[Mapping[str, Any]],
                 origin_s: float) -> StoreTimes | None:
    """The group's completions from ``output-times.parquet`` (``partition``, ``offset``,
    ``written_at_ns``): each output record completes its input at its timestamp, in run seconds
    (through the event records' wall/monotonic pairs, as the store's times). None when the file
    is missing or empty."""
    import pyarrow.parquet as pq

    from .store_rate import wall_offset_s

    if not Path(path).is_file():
        return None
    table = pq.read_table(str(path), columns=["partition", "written_at_ns"]).to_pandas()
    if not len(table):
        return None
    records = list(records)
    monotonic_s = table["written_at_ns"].to_numpy() / 1e9 - wall_offset_s(records)
    bins = np.floor(np.round((monotonic_s - origin_s) / BIN_S, 6)) * BIN_S
    owners = partition_owners(records)
    replica = (_owner_at(owners, monotonic_s, table["partition"].to_numpy()) if owners
               else VIA)
    completed = (pd.DataFrame({"t_s": np.round(bins, 6), "replica_id": replica,
                               "partition": table["partition"].astype("int64"), "records": 1})
                 .groupby(["t_s", "replica_id", "partition"], as_index=False)["records"].sum())
    completed = completed.astype({"t_s": "float64", "partition": "int64", "records": "int64"})
    produced = completed.iloc[0:0].drop(columns=["replica_id"])
    return StoreTimes(completed, produced, batch_interval_s=None)


__all__ = ["VIA", "attribute_members", "broker_replica_records", "commit_times", "output_times",
           "partition_owners"]
