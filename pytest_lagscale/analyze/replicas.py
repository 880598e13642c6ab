"""Per replica: the partitions it owned over time and the records it processed (experiment 4).

With more replicas than partitions P: which replicas own partitions, which process records,
and how often the idle ones made the group rebalance. Two sources:

* **Ownership**, from the replicas' event logs (the event table of :mod:`.tables`): ``assigned``
  (``partitions``: the ones added; ``assignment``: the whole assignment after the callback),
  ``revoked`` and ``lost`` (``partitions``: the ones removed). A replica owns nothing before its
  first ``assigned`` and after it leaves (its ``closed``, ``exited``, or the platform's
  ``replica_exited``/``replica_stopped``, whichever comes first: a SIGKILLed replica revokes
  nothing, its partitions are simply gone).
* **Records**, from the store: a completions table of :mod:`.completions` (records whose
  write completed, per replica per 0.1 s bin).

**Replica ordinal**: 1-based creation order (the platform's ``replica_started``; replicas
without one follow, by their first event). The local platform removes the newest replicas
first, as a ReplicaSet does, so with ``minReplicaCount = P`` the replicas of ordinal P+1..2P
are exactly the ones above P: :attr:`ReplicaShare.surplus`.

**Rebalance episode**: the group's ``assigned``/``revoked``/``lost`` events clustered in time,
a new episode starting after a quiet gap of more than ``gap_s`` (:data:`EPISODE_GAP_S`, 5 s:
the ci Deployment's longest batch, so a cooperative rebalance's two rounds are one episode). Its membership changes are the joins (a
replica's ``joined``) and leaves (see above) after the previous episode's last event, up to its
own last event; changes the run ended before the group rebalanced for make a last,
unobserved episode. An episode is **caused by surplus replicas** when it has membership changes
and every one of them is by a surplus replica; those are the extra rebalances that
``maxReplicaCount > P`` costs.

Everything here stops at the run's ``record`` phase (the harness's stop is no part of it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .tables import events_named

#: Events that change a replica's assignment.
REBALANCE_EVENTS = ("assigned", "revoked", "lost")
#: Events after which a replica is no longer a group member (the first one counts).
LEAVE_EVENTS = ("closed", "exited", "replica_exited", "replica_stopped")
#: Quiet seconds that separate two rebalance episodes (see the module docstring).
EPISODE_GAP_S = 5.0


@dataclass(frozen=True)
class ReplicaShare:
    """One replica's share of the group's work (seconds since run start).

    Attributes:
        replica_id: the replica.
        ordinal: 1-based creation order.
        surplus: ``ordinal`` > P.
        started_s: its ``replica_started`` (None without one).
        joined_s: its ``joined`` (first assignment, possibly empty), None if it never joined.
        left_s: when it left the group (see the module docstring), None if it never left.
        max_partitions: the most partitions it owned at once.
        partitions_owned: every partition it owned at some time, ascending.
        partition_seconds: the integral of its owned partition count over time, from its
            first assignment to its leave (or the end of the events), partition-seconds.
        records: records it processed (completed writes in the store).
        rebalance_callbacks: its ``assigned``/``revoked``/``lost`` events after its first one.
    """

    replica_id: str
    ordinal: int
    surplus: bool
    started_s: float | None
    joined_s: float | None
    left_s: float | None
    max_partitions: int
    partitions_owned: tuple[int, ...]
    partition_seconds: float
    records: int
    rebalance_callbacks: int


@dataclass(frozen=True)
class RebalanceEpisode:
    """One group rebalance as the replicas' callbacks show it.

    Attributes:
        start_s, end_s: first and last callback event of the episode, seconds since run start.
        members_before, members_after: group members before and after its membership changes.
        joined, left: replicas that joined / left in it (see the module docstring).
        partitions_moved: partitions revoked or lost in it (a cooperative rebalance that only
            adds an idle member moves none).
        owner_callbacks: callbacks in it of replicas that owned partitions at its start.
        by_surplus: every membership change in it is by a surplus replica.
        observed: the replicas' callbacks show it; False for membership changes the run
            ended before the group rebalanced for (start and end are then the changes').
    """

    start_s: float
    end_s: float
    members_before: int
    members_after: int
    joined: tuple[str, ...]
    left: tuple[str, ...]
    partitions_moved: int
    owner_callbacks: int
    by_surplus: bool
    observed: bool = True


@dataclass(frozen=True)
class ReplicaTable:
    """Every replica of a run and the group's rebalance episodes.

    Attributes:
        partitions: P, the topic's partition count the surplus is measured against.
        replicas: one :class:`ReplicaShare` per replica, by ordinal.
        episodes: the rebalance episodes in time order.
        gap_s: the episode gap used, seconds.
    """

    partitions: int
    replicas: tuple[ReplicaShare, ...]
    episodes: tuple[RebalanceEpisode, ...]
    gap_s: float = EPISODE_GAP_S

    @property
    def surplus(self) -> tuple[ReplicaShare, ...]:
        """The replicas of ordinal > P."""
        return tuple(r for r in self.replicas if r.surplus)

    @property
    def surplus_rebalances(self) -> int:
        """Episodes caused by surplus replicas only (the extra rebalances)."""
        return sum(e.by_surplus for e in self.episodes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every attribute, plus ``surplus_rebalances``, ``surplus_records``
        and ``surplus_max_partitions`` (None without surplus replicas)."""
        surplus = self.surplus
        return {"partitions": self.partitions, "gap_s": self.gap_s,
                "replicas": [asdict(r) for r in self.replicas],
                "episodes": [asdict(e) for e in self.episodes],
                "surplus_replicas": len(surplus),
                "surplus_rebalances": self.surplus_rebalances,
                "surplus_records": sum(r.records for r in surplus) if surplus else None,
                "surplus_max_partitions": (max(r.max_partitions for r in surplus)
                                           if surplus else None)}


# -- ownership and membership ---------------------------------------------------------------
def _ordinals(events: pd.DataFrame) -> dict[str, int]:
    """replica id -> 1-based creation order (``replica_started`` first, then first event)."""
    started = [r for r in events_named(events, "replica_started")["replica_id"] if r]
    own = events[events["event"].isin((*REBALANCE_EVENTS, "joined", "started"))]
    seen = [r for r in own["replica_id"] if r and isinstance(r, str)]
    order: dict[str, int] = {}
    for replica in [*started, *seen]:
        order.setdefault(replica, len(order) + 1)
    return order


def _leaves(events: pd.DataFrame) -> dict[str, float]:
    """replica id -> t_s of its first leave event."""
    rows = events[events["event"].isin(LEAVE_EVENTS) & events["replica_id"].notna()]
    return {str(r): float(t) for r, t in rows.groupby("replica_id")["t_s"].min().items()}


def _joins(events: pd.DataFrame) -> dict[str, float]:
    rows = events_named(events, "joined")
    rows = rows[rows["replica_id"].notna()]
    return {str(r): float(t) for r, t in rows.groupby("replica_id")["t_s"].min().items()}


def ownership(events: pd.DataFrame) -> pd.DataFrame:
    """Every replica's owned partitions after each change.

    Args:
        events: the event table (:mod:`.tables`); from the run's ``record`` phase on left out
            (:func:`during_run`).

    Returns:
        Columns ``t_s`` float64, ``replica_id`` object, ``event`` object (``assigned``,
        ``revoked``, ``lost`` or ``left``: a leave while still owning partitions),
        ``partitions`` int64 (owned after the change), ``assignment`` object (a tuple of the
        owned partitions); one row per change, in time order.
    """
    events = during_run(events)
    leaves = _leaves(events)
    rows = events[events["event"].isin(REBALANCE_EVENTS) & events["replica_id"].notna()]
    owned: dict[str, set[int]] = {}
    out: list[tuple[float, str, str, int, tuple[int, ...]]] = []
    for t_s, replica, name, fields in zip(rows["t_s"], rows["replica_id"], rows["event"],
                                          rows["fields"]):
        if replica in leaves and t_s > leaves[replica] + 1e-9:
            continue
        current = owned.setdefault(replica, set())
        changed = {int(p) for p in fields.get("partitions") or ()}
        if name == "assigned" and fields.get("assignment") is not None:
            current = owned[replica] = {int(p) for p in fields["assignment"]}
        elif name == "assigned":
            current |= changed
        else:
            current -= changed
        out.append((float(t_s), replica, name, len(current), tuple(sorted(current))))
    for replica, t_s in sorted(leaves.items(), key=lambda item: item[1]):
        if owned.get(replica):
            owned[replica] = set()
            out.append((t_s, replica, "left", 0, ()))
    table = pd.DataFrame(out, columns=["t_s", "replica_id", "event", "partitions", "assignment"])
    table = table.astype({"t_s": "float64", "partitions": "int64"})
    return table.sort_values("t_s", kind="stable").reset_index(drop=True)


def _partition_seconds(rows: pd.DataFrame, end_s: float) -> float:
    """Integral of the owned count over time, rows of one replica in time order."""
    times = np.append(rows["t_s"].to_numpy(), max(end_s, float(rows["t_s"].iloc[-1])))
    return float(np.sum(np.diff(times) * rows["partitions"].to_numpy()))


def _clusters(times: np.ndarray, gap_s: float) -> list[tuple[int, int]]:
    """``(first, last)`` indices of runs of sorted ``times`` with gaps <= ``gap_s``."""
    if not len(times):
        return []
    breaks = np.flatnonzero(np.diff(times) > gap_s)
    starts, ends = np.r_[0, breaks + 1], np.r_[breaks, len(times) - 1]
    return list(zip(starts.tolist(), ends.tolist()))


def rebalance_episodes(events: pd.DataFrame, surplus: Iterable[str],
                       gap_s: float = EPISODE_GAP_S) -> tuple[RebalanceEpisode, ...]:
    """The group's rebalance episodes (see the module docstring), during the run.

    The replicas' callbacks, ``joined`` and leave events are clustered together (so a join or
    leave logged just after the callbacks it caused stays with them); clusters without a
    callback (a SIGKILLed replica's stop, long before the survivors notice) are dropped and
    their membership changes go to the next episode. Changes after the last callback (the run
    ended before the group rebalanced for them) make a last episode with ``observed`` False.

    Args:
        events: the event table; events from the run's ``record`` phase on (the Deployment
            stopped at the end) are left out.
        surplus: ids of the surplus replicas (ordinal > P).
        gap_s: quiet seconds that end an episode.
    """
    events = during_run(events)
    surplus = set(surplus)
    joins, leaves = _joins(events), _leaves(events)
    rows = events[events["event"].isin((*REBALANCE_EVENTS, "joined", *LEAVE_EVENTS))
                  & events["replica_id"].notna()]
    owners = ownership(events)
    times = rows["t_s"].to_numpy()
    out: list[RebalanceEpisode] = []
    previous_end = -np.inf
    for first, last in _clusters(times, gap_s):
        part = rows.iloc[first:last + 1]
        callbacks = part[part["event"].isin(REBALANCE_EVENTS)]
        if not len(callbacks):
            continue
        end_s = float(times[last])
        out.append(_episode(callbacks, float(callbacks["t_s"].iloc[0]), end_s, previous_end,
                            (joins, leaves), owners, surplus))
        previous_end = end_s
    pending = [t for t in [*joins.values(), *leaves.values()] if t > previous_end]
    if pending:
        out.append(_episode(rows.iloc[0:0], min(pending), max(pending), previous_end,
                            (joins, leaves), owners, surplus))
    return tuple(out)


def _episode(callbacks: pd.DataFrame, start_s: float, end_s: float, previous_end: float,
             changes: tuple[dict[str, float], dict[str, float]], owners: pd.DataFrame,
             surplus: set[str]) -> RebalanceEpisode:
    joins, leaves = changes
    joined = tuple(sorted(r for r, t in joins.items() if previous_end < t <= end_s))
    left = tuple(sorted(r for r, t in leaves.items() if previous_end < t <= end_s))
    after = sum(1 for r, t in joins.items() if t <= end_s and leaves.get(r, np.inf) > end_s)
    before = owners[owners["t_s"] < start_s].groupby("replica_id")["partitions"].last()
    owning = set(before[before > 0].index)
    moved = sum(len(f.get("partitions") or ()) for n, f in
                zip(callbacks["event"], callbacks["fields"]) if n in ("revoked", "lost"))
    changers = set(joined) | set(left)
    last_s = float(callbacks["t_s"].iloc[-1]) if len(callbacks) else end_s
    return RebalanceEpisode(
        start_s=round(start_s, 3), end_s=round(last_s, 3),
        members_before=after - len(joined) + len(left), members_after=after, joined=joined,
        left=left, partitions_moved=moved,
        owner_callbacks=int(callbacks["replica_id"].isin(owning).sum()),
        by_surplus=bool(changers) and changers <= surplus, observed=bool(len(callbacks)))


def during_run(events: pd.DataFrame) -> pd.DataFrame:
    """The events before the run's ``record`` phase (the runner's ``run_phase`` event): what
    follows is the harness stopping the Deployment, not the experiment. All events when there
    is no such phase."""
    end_s = _record_s(events)
    return events if end_s is None else events[events["t_s"] < end_s]


def _record_s(events: pd.DataFrame) -> float | None:
    phases = events_named(events, "run_phase")
    ends = [t for t, f in zip(phases["t_s"], phases["fields"]) if f.get("phase") == "record"]
    return float(min(ends)) if ends else None


def replica_table(events: pd.DataFrame, completions: pd.DataFrame, partitions: int,
                  gap_s: float = EPISODE_GAP_S) -> ReplicaTable:
    """Every replica's share of the work and the group's rebalance episodes.

    Args:
        events: the event table; from the run's ``record`` phase on left out
            (:func:`during_run`).
        completions: a completions table (:mod:`.completions`; may be empty).
        partitions: P; replicas of ordinal > P are surplus.
        gap_s: see :func:`rebalance_episodes`.
    """
    run_end_s = _record_s(events)
    events = during_run(events)
    ordinals, joins, leaves = _ordinals(events), _joins(events), _leaves(events)
    started = {str(r): float(t) for r, t in events_named(events, "replica_started")
               .groupby("replica_id")["t_s"].min().items()}
    owners = ownership(events)
    records = completions.groupby("replica_id")["records"].sum()
    end_s = run_end_s if run_end_s is not None else (float(events["t_s"].max()) if len(events)
                                                      else 0.0)
    shares = []
    for replica, ordinal in sorted(ordinals.items(), key=lambda item: item[1]):
        mine = owners[owners["replica_id"] == replica]
        owned = sorted({p for a in mine["assignment"] for p in a})
        shares.append(ReplicaShare(
            replica_id=replica, ordinal=ordinal, surplus=ordinal > partitions,
            started_s=started.get(replica), joined_s=joins.get(replica),
            left_s=leaves.get(replica),
            max_partitions=int(mine["partitions"].max()) if len(mine) else 0,
            partitions_owned=tuple(owned),
            partition_seconds=(round(_partition_seconds(mine, leaves.get(replica, end_s)), 3)
                               if len(mine) else 0.0),
            records=int(records.get(replica, 0)),
            rebalance_callbacks=max(0, len(mine[mine["event"] != "left"]) - 1)))
    surplus = [s.replica_id for s in shares if s.surplus]
    return ReplicaTable(partitions, tuple(shares),
                        rebalance_episodes(events, surplus, gap_s), gap_s)


# -- the controller's view ------------------------------------------------------------------
def controller_syncs(events: pd.DataFrame) -> pd.DataFrame:
    """The lag trigger's input and the decision of every HPA sync (``hpa_sync`` events).

    Returns:
        Columns ``t_s`` float64, ``total_lag`` int64 (records, the first kafka trigger's
        per-partition lag summed: before KEDA's caps, which its own ``total_lag`` field has
        already applied), ``metric_value`` float64 (records, after the caps), ``proposal``
        int64 (the replicas that trigger's metric asks for, -1 when it gave none), ``desired``
        int64 (the replicas the sync set, after bounds, stabilization and rate limits),
        ``min_partition_lag`` int64 (records, the least backlogged partition; -1 without
        per-partition lag); one row per sync with a kafka trigger reading, in time order.
    """
    out = []
    for t_s, fields in zip(*(events_named(events, "hpa_sync")[c] for c in ("t_s", "fields"))):
        kafka = [t for t in fields.get("triggers") or () if t.get("type") == "kafka"
                 and t.get("total_lag") is not None]
        if not kafka:
            continue
        lags = [int(v) for v in (kafka[0].get("partition_lag") or {}).values()]
        proposal = kafka[0].get("proposal")
        out.append((float(t_s), sum(lags) if lags else int(kafka[0]["total_lag"]),
                    float(kafka[0].get("metric_value") or 0.0),
                    -1 if proposal is None else int(proposal),
                    int(fields.get("replicas_after", 0)), min(lags) if lags else -1))
    columns = {"t_s": "float64", "total_lag": "int64", "metric_value": "float64",
               "proposal": "int64", "desired": "int64", "min_partition_lag": "int64"}
    return pd.DataFrame(out, columns=list(columns)).astype(columns)
