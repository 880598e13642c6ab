"""A consumer group's history from the broker's side: snapshots in, membership and rebalance
events out (pure: times are inputs).

The group observer (:mod:`pytest_lagscale.observe.group`) describes the group every 0.5-1 s
(DescribeConsumerGroups) and feeds each :class:`GroupSnapshot` to :class:`GroupHistory`, which
returns the events the change since the previous snapshot shows:

* ``member_joined`` / ``member_left``: a member id appears / disappears;
* ``member_assigned``: a member's first non-empty assignment (``join_s``: seconds since it
  appeared; the member's join as the broker saw it);
* ``rebalance_started``: the group enters a rebalancing state (classic: PREPARING_REBALANCE or
  COMPLETING_REBALANCE; KIP-848: ASSIGNING or RECONCILING);
* ``rebalance_ended``: the group is STABLE again with its assignment, or two STABLE snapshots
  differ in assignment (a rebalance that fell between two looks: its ``start_s`` is the earlier
  look, ``resolution_s`` says how coarse that is). It carries the partitions each member was
  revoked and assigned, the partitions that changed owner (``moved``), its ``duration_s`` and
  ``generation``: the count of rebalances observed, since confluent-kafka's group description
  does not carry the broker's generation id.

Works for any consumer: it reads nothing from the consumers themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

#: Group states in which a rebalance is under way (classic protocol, then KIP-848's).
REBALANCING_STATES = frozenset({"PREPARING_REBALANCE", "COMPLETING_REBALANCE", "ASSIGNING",
                                "RECONCILING"})


@dataclass(frozen=True)
class MemberView:
    """One member as a snapshot shows it.

    Attributes:
        member_id: broker-assigned member id.
        client_id: the client's ``client.id``.
        host: the client's host as the broker saw it (``/127.0.0.1``).
        partitions: the partitions of the observed topic it owns, sorted.
    """

    member_id: str
    client_id: str = ""
    host: str = ""
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupSnapshot:
    """The group at one look.

    Attributes:
        at_s: when it was read, seconds on the observer's clock (wall time in a run).
        state: ``STABLE``, ``EMPTY``, ``PREPARING_REBALANCE``, ... (upper case).
        members: every member, any order.
        protocol: ``classic`` or ``consumer`` (KIP-848).
    """

    at_s: float
    state: str
    members: tuple[MemberView, ...] = ()
    protocol: str = "classic"

    def assignment(self) -> dict[str, tuple[int, ...]]:
        """``{member_id: partitions}``."""
        return {m.member_id: m.partitions for m in self.members}


@dataclass
class GroupHistory:
    """Feed snapshots in time order with :meth:`observe`; it returns the events each shows.

    ``events`` keeps every event returned (dicts with ``event`` and ``at_s`` first).
    """

    events: list[dict[str, Any]] = field(default_factory=list)
    generation: int = 0
    _last: GroupSnapshot | None = None
    _first_seen: dict[str, float] = field(default_factory=dict)
    _assigned: set[str] = field(default_factory=set)
    _rebalance_start: float | None = None
    _before: dict[str, tuple[int, ...]] | None = None
    _stable_assignment: dict[str, tuple[int, ...]] = field(default_factory=dict)
    _committed: dict[int, int] = field(default_factory=dict)
    _awaiting_commit: dict[str, tuple[float, dict[int, int | None]]] = field(default_factory=dict)

    def observe_commits(self, at_s: float, committed: Mapping[int, int]) -> list[dict[str, Any]]:
        """The events a read of the group's committed offsets (``{partition: offset}``) shows,
        against the newest snapshot's assignment: ``committed_offsets`` when any changed, and
        ``member_first_commit`` (member_id, partition, since_assigned_s) the first time a
        partition a newly assigned member owns moves past the offset it had at the assignment
        (the member's first commit: its first processed records, seen from the broker)."""
        out: list[dict[str, Any]] = []
        now = {int(k): int(v) for k, v in committed.items()}
        if now != self._committed:
            out.append(_event("committed_offsets", at_s,
                              offsets={str(k): v for k, v in sorted(now.items())}))
        for member_id, (assigned_s, start) in list(self._awaiting_commit.items()):
            moved = sorted(p for p, offset in start.items()
                           if now.get(p, -1) > (-1 if offset is None else offset))
            if moved:
                del self._awaiting_commit[member_id]
                out.append(_event("member_first_commit", at_s, member_id=member_id,
                                  partition=moved[0],
                                  since_assigned_s=round(at_s - assigned_s, 3)))
        self._committed = now
        self.events.extend(out)
        return out

    def observe(self, snap: GroupSnapshot) -> list[dict[str, Any]]:
        """The events since the previous snapshot.

        Raises:
            ValueError: ``snap`` is older than the previous snapshot.
        """
        last = self._last
        if last is not None and snap.at_s < last.at_s:
            raise ValueError(f"at_s: {snap.at_s} is before the previous snapshot's "
                             f"{last.at_s}; feed snapshots in time order")
        out: list[dict[str, Any]] = []
        now = snap.assignment()
        previous = {} if last is None else last.assignment()
        for member in snap.members:
            if member.member_id not in self._first_seen:
                self._first_seen[member.member_id] = snap.at_s
                out.append(_event("member_joined", snap.at_s, member_id=member.member_id,
                                  client_id=member.client_id, host=member.host))
            if member.partitions and member.member_id not in self._assigned:
                self._assigned.add(member.member_id)
                self._awaiting_commit[member.member_id] = (
                    snap.at_s, {p: self._committed.get(p) for p in member.partitions})
                out.append(_event("member_assigned", snap.at_s, member_id=member.member_id,
                                  client_id=member.client_id, partitions=list(member.partitions),
                                  join_s=round(snap.at_s - self._first_seen[member.member_id],
                                               3)))
        for member_id in sorted(set(previous) - set(now)):
            out.append(_event("member_left", snap.at_s, member_id=member_id))
            self._first_seen.pop(member_id, None)
            self._assigned.discard(member_id)
            self._awaiting_commit.pop(member_id, None)
        rebalancing = snap.state in REBALANCING_STATES
        if rebalancing and self._rebalance_start is None:
            self._rebalance_start = snap.at_s
            self._before = dict(self._stable_assignment)
            out.append(_event("rebalance_started", snap.at_s, state=snap.state,
                              members=len(snap.members)))
        elif not rebalancing and snap.state == "STABLE":
            if self._rebalance_start is not None:
                out.append(self._ended(snap, self._rebalance_start, self._before or {},
                                       resolution_s=None))
            elif last is not None and now != self._stable_assignment:
                # a whole rebalance between two looks
                out.append(self._ended(snap, last.at_s, self._stable_assignment,
                                       resolution_s=round(snap.at_s - last.at_s, 3)))
            self._stable_assignment = now
        elif snap.state == "EMPTY":
            self._rebalance_start, self._before = None, None
            self._stable_assignment = {}
        self._last = snap
        self.events.extend(out)
        return out

    def _ended(self, snap: GroupSnapshot, start_s: float, before: Mapping[str, tuple[int, ...]],
               resolution_s: float | None) -> dict[str, Any]:
        self.generation += 1
        after = snap.assignment()
        owner_before = {p: m for m, parts in before.items() for p in parts}
        owner_after = {p: m for m, parts in after.items() for p in parts}
        revoked = {m: sorted(set(parts) - set(after.get(m, ())))
                   for m, parts in before.items() if set(parts) - set(after.get(m, ()))}
        assigned = {m: sorted(set(parts) - set(before.get(m, ())))
                    for m, parts in after.items() if set(parts) - set(before.get(m, ()))}
        moved = sorted(p for p in owner_after if p in owner_before
                       and owner_before[p] != owner_after[p])
        self._rebalance_start, self._before = None, None
        return _event("rebalance_ended", snap.at_s, generation=self.generation,
                      start_s=start_s, duration_s=round(snap.at_s - start_s, 3),
                      resolution_s=resolution_s, members=len(after), revoked=revoked,
                      assigned=assigned, moved=moved)


def _event(name: str, at_s: float, **fields: Any) -> dict[str, Any]:
    return {"event": name, "at_s": at_s, **fields}


__all__ = ["GroupHistory", "GroupSnapshot", "MemberView", "REBALANCING_STATES"]
