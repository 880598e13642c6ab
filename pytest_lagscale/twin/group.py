"""The twin's consumer group: rebalances per protocol, with pauses at batch boundaries.

A replica serves its group's callbacks only between batches (the real replica polls between
micro-batches), so every protocol below revokes and rejoins (eager) at a member's next batch
boundary (:meth:`boundary`), never inside a batch.

* **eager** (``range``, ``roundrobin``): a membership change starts a round; each member rejoins
  at its batch boundary and revokes *all* its partitions there (stop the world); the round ends
  ``round_s`` after the last member rejoined, and every member is assigned its new partitions.
* **cooperative** (``cooperative-sticky``): rounds too, but members keep their partitions and
  rejoin in the background (librdkafka's thread), so a round ends ``round_s`` after its last
  change; except a member with a rebalance callback not yet served (a revocation, or partitions
  assigned while it was mid-batch: callbacks run inside ``consume()``, between batches), which
  rejoins only at its next boundary (librdkafka 2.x ``src/rdkafka_cgrp.c``: no rejoin in the
  join states wait-assign-call / wait-unassign-call); a round it held ends as it rejoins, if the
  others rejoined ``round_s`` before, so it serves the next callback at that same boundary. At
  the round's end unowned partitions go to their target owner (a busy one takes them at its
  next boundary) and the members owning a partition that moves revoke only that partition at
  their next boundary, which starts a second round that hands the revoked partitions over. Only
  moved partitions pause.
* **consumer** (KIP-848): no rounds. The broker computes the target at once; every member
  heartbeats every ``heartbeat_s`` (its own phase); at a heartbeat it learns partitions to
  revoke (revoked at its next boundary) and gets free partitions of its target (assigned at its
  next boundary). A joining member is joined at its first heartbeat, ``heartbeat_s`` after
  subscribing.

Events (as the replica writes them): ``assigned`` (``partitions``: added, the full list for
eager; ``assignment``: all it owns after), ``revoked`` (``partitions``), ``joined`` and
``ready`` at a member's first assignment.
"""

from __future__ import annotations

import math
from typing import Any

from .assign import assign
from .world import Replica


class _Base:
    def __init__(self, world: Any):
        self.world = world
        self.params = world.params
        self.members: list[Replica] = []

    def _owned(self) -> dict[str, list[int]]:
        return {r.rid: list(r.owned) for r in self.members}

    def _revoke(self, replica: Replica, partitions: list[int], t: float) -> None:
        w = self.world
        for q in partitions:
            replica.owned.pop(q, None)
            if w.owner[q] is replica:
                w.owner[q] = None
            w.position[q] = w.committed[q]
        if partitions:
            self.world.events.emit(t, replica.rid, "revoked", replica_id=replica.rid,
                                   partitions=sorted(partitions))

    def _assign(self, replica: Replica, partitions: list[int], t: float) -> None:
        w = self.world
        for q in partitions:
            replica.owned[q] = t + self.params.first_fetch_s
            w.owner[q] = replica
            w.position[q] = w.committed[q]
        w.events.emit(t, replica.rid, "assigned", replica_id=replica.rid,
                      partitions=sorted(partitions), assignment=sorted(replica.owned))
        if not replica.joined:
            replica.joined, replica.joined_s = True, t
            w.events.emit(t, replica.rid, "joined", replica_id=replica.rid,
                          partitions=sorted(partitions))
            w.events.emit(t, replica.rid, "ready", replica_id=replica.rid)


class ClassicGroup(_Base):
    """Eager or cooperative rebalances in rounds (see the module docstring)."""

    def __init__(self, world: Any):
        super().__init__(world)
        self.cooperative = self.params.protocol == "cooperative"
        self.round_members: list[Replica] | None = None
        self.waiting: set[Replica] = set()
        self.done_at: float | None = None
        self.changed_s = -math.inf  # the round's last join, leave or start

    def _start_round(self, t: float) -> None:
        if self.round_members is None:
            self.round_members = list(self.members)
            self.done_at = None
            self.changed_s = t
            for r in self.members:
                # cooperative members rejoin in the background, unless a callback of theirs is
                # not served yet: then at their next batch boundary, like every eager member
                if not self.cooperative or r.pending_revoke or r.pending_assign:
                    r.rejoin = True
                    self.waiting.add(r)

    def join(self, replica: Replica, t: float) -> None:
        """``replica`` subscribed at ``t``: it joins the current or a new round at once."""
        self._start_round(t)
        if replica not in self.round_members:
            self.round_members.append(replica)
        self.done_at, self.changed_s = None, t
        self._check(t)

    def leave(self, replica: Replica, t: float) -> None:
        """``replica`` closed (LeaveGroup) at ``t``: its partitions are revoked; a round starts."""
        self._revoke(replica, list(replica.owned), t)
        if replica in self.members:
            self.members.remove(replica)
        if self.round_members is not None and replica in self.round_members:
            self.round_members.remove(replica)
        self.waiting.discard(replica)
        replica.pending_assign = []
        if self.members or self.round_members:
            self._start_round(t)
            self.changed_s = t  # a leave during a round in progress is its latest change too
            self._check(t)

    def boundary(self, replica: Replica, t: float) -> None:
        """``replica`` is between batches at ``t``: take what it was assigned, revoke what it
        must, rejoin a round."""
        if replica.pending_assign:
            assign, replica.pending_assign = replica.pending_assign, []
            self._assign(replica, assign, t)
        if replica.pending_revoke:
            revoke, replica.pending_revoke = sorted(replica.pending_revoke), set()
            self._revoke(replica, revoke, t)
            self._start_round(t)
            self._check(t)
        if replica.rejoin and replica in self.waiting:
            replica.rejoin = False
            self.waiting.discard(replica)
            if not self.cooperative:
                self._revoke(replica, list(replica.owned), t)
            self._check(t)
            if self.cooperative and self.done_at is not None and self.done_at <= t + 1e-9:
                # the others rejoined long ago: the round ends while this member still polls,
                # and it serves what the round asks of it at this same boundary
                self._complete(t)
                if replica.pending_revoke:  # served now; it then has nothing pending: one level
                    self.boundary(replica, t)

    def _check(self, t: float) -> None:
        """Set the round's end once nobody is waiting: eager ``round_s`` after the last
        member's rejoin; cooperative ``round_s`` after the round's last change (the members
        rejoining in the background take that long), or at once when the last member to rejoin
        (at its batch boundary) came later than that."""
        if self.round_members is not None and not self.waiting and self.done_at is None:
            round_s = self.params.round_s[self.params.protocol]
            self.done_at = (max(self.changed_s + round_s, t) if self.cooperative
                            else t + round_s)

    def tick(self, t: float) -> None:
        """End the round when its time has come."""
        if self.done_at is not None and t >= self.done_at - 1e-9:
            self._complete(t)

    def _complete(self, t: float) -> None:
        members = [r for r in self.round_members if r.phase == "member"]
        self.round_members, self.done_at = None, None
        self.members = members
        if not members:
            return
        owned = self._owned()
        target = assign(self.params.balancer, [r.rid for r in members], self.world.partitions,
                        owned)
        for r in members:
            mine = target[r.rid]
            if self.cooperative:
                add = [q for q in mine if self.world.owner[q] is None]
                r.pending_revoke |= set(r.owned) - set(mine)
                if r.busy and add:  # its assign callback waits for its next poll
                    r.pending_assign = add
                    continue
            else:
                add = mine
            self._assign(r, add, t)


class ConsumerGroup(_Base):
    """KIP-848: server-side incremental assignment at heartbeats (module docstring)."""

    def __init__(self, world: Any):
        super().__init__(world)
        self.target: dict[str, list[int]] = {}
        self.next_hb: dict[Replica, float] = {}
        self.pending_assign: dict[Replica, list[int]] = {}

    def _retarget(self) -> None:
        owned = {r.rid: [q for q in r.owned if q not in r.pending_revoke]
                 + self.pending_assign.get(r, []) for r in self.members}
        self.target = assign("sticky", [r.rid for r in self.members], self.world.partitions,
                             owned)

    def join(self, replica: Replica, t: float) -> None:
        """``replica`` subscribed: a member now, joined at its first heartbeat."""
        self.members.append(replica)
        self.next_hb[replica] = t + self.params.heartbeat_s
        self._retarget()

    def leave(self, replica: Replica, t: float) -> None:
        """``replica`` left: its partitions are free; the target is recomputed."""
        self._revoke(replica, list(replica.owned), t)
        if replica in self.members:
            self.members.remove(replica)
        self.next_hb.pop(replica, None)
        self.pending_assign.pop(replica, None)
        self._retarget()

    def tick(self, t: float) -> None:
        """Heartbeats due at ``t``."""
        for r in list(self.members):
            if t < self.next_hb.get(r, math.inf) - 1e-9:
                continue
            self._heartbeat(r, t)
            hb = self.params.heartbeat_s
            self.next_hb[r] = t + hb

    def _heartbeat(self, r: Replica, t: float) -> None:
        mine = set(self.target.get(r.rid, ()))
        r.pending_revoke |= set(r.owned) - mine
        pending = self.pending_assign.setdefault(r, [])
        taken = {q for lst in self.pending_assign.values() for q in lst}
        pending += [q for q in sorted(mine) if self.world.owner[q] is None
                    and q not in taken and q not in r.owned]
        if not r.joined and not r.busy:
            self._deliver(r, t)

    def boundary(self, replica: Replica, t: float) -> None:
        """Between batches: revoke, then take what the last heartbeats gave."""
        if replica.pending_revoke:
            revoke, replica.pending_revoke = sorted(replica.pending_revoke), set()
            self._revoke(replica, revoke, t)
        if replica.joined and self.pending_assign.get(replica):
            self._deliver(replica, t)

    def _deliver(self, replica: Replica, t: float) -> None:
        add = self.pending_assign.pop(replica, [])
        self._assign(replica, add, t)


def make_group(world: Any) -> Any:
    """The group of the world's protocol (``world.params.protocol``)."""
    return ConsumerGroup(world) if world.params.protocol == "consumer" else ClassicGroup(world)


__all__ = ["ClassicGroup", "ConsumerGroup", "make_group"]
