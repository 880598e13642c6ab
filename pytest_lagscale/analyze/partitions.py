"""Experiment 7: what a partition count change (P -> 2P on the live topic) does to the group.

Pure functions over the run's event table (:mod:`.tables`), its timeline and a table of the
store's records (``entity_id``, ``partition``, ``seq``, ``ts_ns``, ``written_at_ns``; read by
:func:`read_store_keys`, the one reader here). Times are run seconds (``t_s``).

* :func:`partition_change` — the ``increase_partitions`` action: when, and the counts before
  and after (the action's event).
* :func:`forced_rebalance` — the rebalance the change forces (the replicas see the new
  partitions at their next metadata refresh): anchor = the first ``revoked`` / ``assigned`` /
  ``lost`` callback at or after the change; it ends when the last new partition gets its
  first owner (at most 10 s later: a replica busy in a batch delivers its callback late, and
  the scale-up's members, which may join the same rebalance or the next, move old partitions
  after it). Duration, partitions revoked and assigned per replica in it, each new partition's
  first owner, and which old partitions moved.
* :func:`new_partition_firsts` — per new partition: its first produced, processed and
  committed record (the commit from the replicas' ``batch`` events: needs ``--log-batches``).
* :func:`trigger_view` — what KEDA's kafka trigger saw in the controller's ``keda_poll``
  events: partitions counted per poll (the cap follows them), the new partitions' lag at the
  first poll that saw them and at most, and the lag over lagThreshold after the change.
* :func:`replicas_after`, :func:`max_owners_after` — replicas after the change against old P.
* :func:`key_remap` — the keyed producer (murmur2(key) % P) sends some entities to new
  partitions: entities seen before and after the change, how many landed on more than one
  partition, the fraction, and how many had a newer record processed before an older one on
  another partition (per-key order lost).

Source: Kafka's CreatePartitions (keyed records may map to a different partition), librdkafka
``topic.metadata.refresh.interval.ms`` (5 s here), kedacore/keda pkg/scalers/kafka_scaler.go
getTotalLag v2.20.2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .rebalance import REBALANCE_EVENTS, REBALANCE_WINDOW_S, STOP_EVENTS

#: Columns of the store table the functions here read.
STORE_COLUMNS = ("entity_id", "partition", "seq", "ts_ns", "written_at_ns")


@dataclass(frozen=True)
class PartitionChange:
    """The ``increase_partitions`` action of a run.

    Attributes:
        t_s: when the action started, run seconds.
        before: partition count before it.
        after: partition count after it.
    """

    t_s: float
    before: int
    after: int

    @property
    def new_partitions(self) -> tuple[int, ...]:
        """Ids of the partitions the change added."""
        return tuple(range(self.before, self.after))


def partition_change(events: pd.DataFrame) -> PartitionChange | None:
    """The run's first completed ``increase_partitions`` action; None when there is none.

    Args:
        events: the event table (``action`` events carry ``action``, ``started_s``,
            ``partitions_before``, ``partitions_after`` in ``fields``).
    """
    rows = events[events["event"] == "action"]
    for t_s, f in zip(rows["t_s"], rows["fields"]):
        if f.get("action") == "increase_partitions":
            return PartitionChange(float(f.get("started_s", t_s)), int(f["partitions_before"]),
                                   int(f["partitions_after"]))
    return None


def _new_members(events: pd.DataFrame, after_s: float) -> set[str]:
    """Replicas the platform started at or after ``after_s`` (the scale-up's members)."""
    started = events[(events["event"] == "replica_started") & (events["t_s"] >= after_s)]
    return {str(r) for r in started["replica_id"].dropna()}


def _all_new_assigned_s(calls: pd.DataFrame, change: PartitionChange) -> float | None:
    """When the last new partition got its first owner (None when one never did)."""
    first: dict[int, float] = {}
    assigned = calls[calls["event"] == "assigned"]
    for t_s, f in zip(assigned["t_s"], assigned["fields"]):
        for p in f.get("partitions") or ():
            first.setdefault(int(p), float(t_s))
    times = [first.get(p) for p in change.new_partitions]
    return None if None in times else max(times)  # type: ignore[type-var]


def _per_replica(rows: pd.DataFrame, names: tuple[str, ...]) -> dict[str, list[int]]:
    out: dict[str, set[int]] = {}
    for replica, event, f in zip(rows["replica_id"], rows["event"], rows["fields"]):
        if event in names:
            out.setdefault(str(replica), set()).update(int(p) for p in f.get("partitions") or ())
    return {k: sorted(v) for k, v in sorted(out.items())}


def _owners(calls: pd.DataFrame) -> tuple[dict[int, str], dict[int, str]]:
    """(partition -> first replica assigned it, partition -> last), in time order."""
    first: dict[int, str] = {}
    last: dict[int, str] = {}
    rows = calls[calls["event"] == "assigned"]
    for replica, f in zip(rows["replica_id"], rows["fields"]):
        for p in f.get("partitions") or ():
            first.setdefault(int(p), str(replica))
            last[int(p)] = str(replica)
    return first, last


def forced_rebalance(events: pd.DataFrame, change: PartitionChange) -> dict[str, Any]:
    """The rebalance the partition change forced (see the module docstring).

    Returns:
        ``anchor_s`` (None when no callback followed the change), ``end_s`` (when the last new
        partition got its first owner; the anchor + 10 s when one did not by then),
        ``duration_s`` (anchor to ``end_s``), ``delay_s`` (change to anchor, s),
        ``complete`` (every new partition got an owner within 10 s), ``merged_with_scale_up``
        (a replica the scale-up started got a partition in the window), ``revoked`` /
        ``assigned`` (replica -> partitions), ``new_partition_owner`` (new partition -> its
        first owner), ``moved`` (old partitions revoked by one replica and assigned to another:
        ``[{partition, from, to}]``), ``partitions_stopped`` (distinct partitions revoked/lost).
    """
    calls = events[events["event"].isin(REBALANCE_EVENTS) & events["replica_id"].notna()
                   & (events["t_s"] >= change.t_s)]
    if not len(calls):
        return {"anchor_s": None}
    anchor = float(calls["t_s"].min())
    calls = calls[calls["t_s"] < anchor + REBALANCE_WINDOW_S]
    done = _all_new_assigned_s(calls, change)
    end = anchor + REBALANCE_WINDOW_S if done is None else done
    window = calls[calls["t_s"] <= end]
    revoked = _per_replica(window, STOP_EVENTS)
    assigned = _per_replica(window, ("assigned",))
    first_owner, owner = _owners(window)
    moved = [{"partition": p, "from": r, "to": owner[p]} for r, parts in revoked.items()
             for p in parts if p < change.before and owner.get(p) not in (None, r)]
    return {"anchor_s": round(anchor, 3), "end_s": round(end, 3),
            "delay_s": round(anchor - change.t_s, 3), "duration_s": round(end - anchor, 3),
            "complete": done is not None,
            "merged_with_scale_up": any(assigned.get(r) for r in
                                        _new_members(events, change.t_s)),
            "revoked": revoked, "assigned": assigned,
            "new_partition_owner": {p: first_owner[p] for p in change.new_partitions
                                    if p in first_owner},
            "moved": sorted(moved, key=lambda m: m["partition"]),
            "partitions_stopped": len({p for parts in revoked.values() for p in parts})}


def _first_commits(events: pd.DataFrame, partitions: tuple[int, ...]) -> dict[int, float]:
    out: dict[int, float] = {}
    batches = events[events["event"] == "batch"]
    for t_s, f in zip(batches["t_s"], batches["fields"]):
        for p in f.get("partitions") or ():
            if int(p) in partitions and int(p) not in out and (f.get("records") or 0) > 0:
                out[int(p)] = round(float(t_s), 3)
    return out


def new_partition_firsts(store: pd.DataFrame, events: pd.DataFrame, change: PartitionChange,
                         shift_s: float) -> list[dict[str, Any]]:
    """Per new partition: first produced, processed and committed record (run seconds).

    Args:
        store: store rows with :data:`STORE_COLUMNS`.
        events: the event table (replica ``batch`` events, written with ``--log-batches``).
        change: the partition change.
        shift_s: subtract from a wall time in seconds to get run seconds
            (``wall_offset_s(records) + origin_s``, see :mod:`.store_rate`).

    Returns:
        One row per new partition: ``partition``, ``records``, ``first_produced_s``,
        ``first_processed_s``, ``first_commit_s`` (None when not seen), and
        ``produced_after_change_s`` = first produced minus the change's time.
    """
    mine = store[store["partition"] >= change.before]
    first = mine.groupby("partition").agg(records=("ts_ns", "size"), ts=("ts_ns", "min"),
                                          written=("written_at_ns", "min"))
    commits = _first_commits(events, change.new_partitions)
    rows = []
    for p in change.new_partitions:
        row: dict[str, Any] = {"partition": p, "records": 0, "first_produced_s": None,
                               "first_processed_s": None, "first_commit_s": commits.get(p),
                               "produced_after_change_s": None}
        if p in first.index:
            produced = round(first.at[p, "ts"] / 1e9 - shift_s, 3)
            row.update(records=int(first.at[p, "records"]), first_produced_s=produced,
                       first_processed_s=round(first.at[p, "written"] / 1e9 - shift_s, 3),
                       produced_after_change_s=round(produced - change.t_s, 3))
        rows.append(row)
    return rows


def _poll_rows(events: pd.DataFrame) -> list[tuple[float, Mapping[str, Any]]]:
    polls = events[events["event"] == "keda_poll"]
    return [(float(t), (f.get("triggers") or [{}])[0]) for t, f in
            zip(polls["t_s"], polls["fields"]) if f.get("triggers")]


def trigger_view(events: pd.DataFrame, change: PartitionChange, lag_threshold: float,
                 offset_reset_policy: str) -> dict[str, Any]:
    """What KEDA's kafka trigger computed around the change (controller ``keda_poll`` events).

    Args:
        events: the event table.
        change: the partition change.
        lag_threshold: the trigger's lagThreshold, records per replica.
        offset_reset_policy: the trigger's offsetResetPolicy (recorded beside the numbers:
            with ``latest`` a new partition without a commit counts 1, with ``earliest`` its
            whole log-end offset).

    Returns:
        ``first_seen_s`` (first poll counting more than ``before`` partitions), the new
        partitions' summed lag at that poll and at most, ``max_partitions_counted``,
        ``max_metric_value`` (after KEDA's cap) and ``max_lag_over_threshold`` (uncapped summed
        partition lag / lagThreshold) after the change, and the cap before and after.
    """
    after = [(t, trig) for t, trig in _poll_rows(events) if t >= change.t_s]
    seen = [(t, trig) for t, trig in after if len(trig.get("partition_lag") or {}) > change.before]

    def new_lag(trig: Mapping[str, Any]) -> int:
        return sum(int(v) for k, v in (trig.get("partition_lag") or {}).items()
                   if int(k) >= change.before)

    uncapped = [sum(int(v) for v in (trig.get("partition_lag") or {}).values())
                for _, trig in after]
    return {"offset_reset_policy": offset_reset_policy, "lag_threshold": lag_threshold,
            "cap_before_records": change.before * lag_threshold,
            "cap_after_records": change.after * lag_threshold,
            "first_seen_s": round(seen[0][0], 3) if seen else None,
            "new_partition_lag_first_seen": new_lag(seen[0][1]) if seen else None,
            "new_partition_lag_max": max((new_lag(trig) for _, trig in seen), default=None),
            "max_partitions_counted": max((len(trig.get("partition_lag") or {})
                                           for _, trig in after), default=None),
            "max_metric_value": max((float(trig.get("metric_value") or 0.0)
                                     for _, trig in after), default=None),
            "max_lag_over_threshold": (max(uncapped) / lag_threshold) if uncapped else None}


def replicas_after(timeline: pd.DataFrame, change: PartitionChange) -> dict[str, Any]:
    """Desired, current and ready replicas after the change against the old partition count.

    Returns:
        ``max_desired`` / ``max_current`` / ``max_ready`` after the change and
        ``first_above_old_p_s``: the first timeline row whose desired count exceeds ``before``
        (None when none did).
    """
    rows = timeline[timeline["t_s"] >= change.t_s]
    above = rows[rows["desired_replicas"] > change.before]
    return {"old_p": change.before, "new_p": change.after,
            "max_desired": int(rows["desired_replicas"].max()) if len(rows) else None,
            "max_current": int(rows["current_replicas"].max()) if len(rows) else None,
            "max_ready": int(rows["ready_replicas"].max()) if len(rows) else None,
            "first_above_old_p_s": round(float(above["t_s"].iloc[0]), 3) if len(above)
            else None}


def max_owners_after(owned: pd.DataFrame, change: PartitionChange) -> int:
    """Most replicas owning at least one partition at once, at or after the change.

    Args:
        owned: :func:`pytest_lagscale.analyze.replicas.ownership` of the run (``t_s``,
            ``replica_id``, ``partitions`` owned after each change, in time order).
        change: the partition change.
    """
    counts: dict[str, int] = {}
    best = 0
    for t_s, replica, partitions in zip(owned["t_s"], owned["replica_id"], owned["partitions"]):
        counts[str(replica)] = int(partitions)
        if t_s >= change.t_s:
            best = max(best, sum(1 for n in counts.values() if n > 0))
    return best


def key_remap(store: pd.DataFrame, change: PartitionChange) -> dict[str, Any]:
    """Entities whose records landed on more than one partition across the change.

    The split is the producer's first record on a new partition (smallest ``seq`` there): an
    entity "spans" the change when it has records on both sides of it. Moved = spanning
    entities seen on more than one partition (murmur2(key) % after differs from % before);
    reordered = entities with two consecutive records (by ``seq``, the producer's order) on
    different partitions where the newer one was written to the store first: per-key order
    lost.

    Args:
        store: store rows with :data:`STORE_COLUMNS`.
        change: the partition change.

    Returns:
        ``entities``, ``spanning_entities``, ``moved_entities``, ``moved_fraction`` (of the
        spanning ones; None without any), ``reordered_entities``, ``expected_fraction``
        (1 - before/after: the share of keys murmur2 % after maps off their old partition when
        after is a multiple of before; None otherwise).
    """
    new = store[store["partition"] >= change.before]
    parts = store.groupby("entity_id")["partition"].nunique()
    spanning = pd.Index([], dtype="int64")
    if len(new):
        split = int(new["seq"].min())
        early = store["seq"].to_numpy() < split
        spanning = pd.Index(np.intersect1d(store.loc[early, "entity_id"].unique(),
                                           store.loc[~early, "entity_id"].unique()))
    moved = parts.index[parts.to_numpy() > 1].intersection(spanning)
    return {"entities": len(parts), "spanning_entities": len(spanning),
            "moved_entities": len(moved),
            "moved_fraction": (len(moved) / len(spanning)) if len(spanning) else None,
            "reordered_entities": reordered_entities(store[store["entity_id"].isin(moved)]),
            "expected_fraction": 1.0 - change.before / change.after
            if change.after % change.before == 0 else None}


def reordered_entities(rows: pd.DataFrame) -> int:
    """Entities with two consecutive records (by ``seq``) on different partitions where the
    newer one has the smaller ``written_at_ns`` (processed first)."""
    if not len(rows):
        return 0
    ordered = rows.sort_values(["entity_id", "seq"], kind="stable")
    entity = ordered["entity_id"].to_numpy()
    part = ordered["partition"].to_numpy()
    written = ordered["written_at_ns"].to_numpy()
    bad = (entity[1:] == entity[:-1]) & (part[1:] != part[:-1]) & (written[1:] < written[:-1])
    return len(np.unique(entity[1:][bad]))


def read_store_keys(store_dir: str | Path) -> pd.DataFrame:
    """The store's :data:`STORE_COLUMNS` (every record; 40 bytes a row).

    Raises:
        FileNotFoundError: the store has no Parquet file.
    """
    import pyarrow.dataset as ds

    from .reconcile import store_files

    files = store_files(store_dir)
    if not files:
        raise FileNotFoundError(f"store {str(store_dir)!r}: no Parquet file")
    dataset = ds.dataset([str(f) for f in files], format="parquet")
    return dataset.to_table(columns=list(STORE_COLUMNS)).to_pandas()
