"""Each group protocol pauses what it should on the first scale-up (1 -> several replicas)."""

from __future__ import annotations

import pandas as pd
import pytest

from pytest_lagscale.twin.run import simulate

from .conftest import settings


def _first_rebalance(run) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The replica that owned everything, and every rebalance event of the first scale-up."""
    ev = run.events
    spike = float(ev.loc[ev["event"] == "spike_start", "t_s"].iloc[0])
    window = ev[(ev["t_s"] >= spike) & ev["event"].isin(("revoked", "assigned"))]
    first = window[window["replica_id"] == "replica-0001"]
    return window, first


@pytest.mark.parametrize("balancer", ["range", "roundrobin"], ids=["range", "roundrobin"])
def test_eager_revokes_every_partition(balancer: str) -> None:
    run = simulate(settings(balancer=balancer), seed=3)
    _, first = _first_rebalance(run)
    revoked = first[first["event"] == "revoked"]
    assert sorted(revoked["fields"].iloc[0]["partitions"]) == list(range(8))
    assert run.processed == run.produced


def test_cooperative_revokes_only_moved_partitions() -> None:
    run = simulate(settings(balancer="cooperative-sticky"), seed=3)
    _, first = _first_rebalance(run)
    revokes = first[first["event"] == "revoked"]
    moved = set(revokes["fields"].iloc[0]["partitions"])
    # 1 -> n replicas: the old owner gives up only what moves and keeps consuming the rest
    assert 0 < len(moved) < 8
    later = first[(first["event"] == "assigned") & (first["t_s"] > revokes["t_s"].iloc[0])]
    kept = set(later["fields"].iloc[0]["assignment"])
    assert kept and not kept & moved and kept | moved == set(range(8))
    assert run.processed == run.produced


def test_kip848_joins_at_the_heartbeat_and_moves_only_some_partitions() -> None:
    run = simulate(settings(balancer="consumer"), seed=3)
    ev = run.events
    sub = ev[ev["event"] == "subscribed"].groupby("replica_id")["t_s"].min()
    joined = ev[ev["event"] == "joined"].groupby("replica_id")["t_s"].min()
    newcomers = [r for r in joined.index if r != "replica-0001"]
    # a newcomer is joined at its first heartbeat (1 s after subscribing, within a tick of 0.125 s)
    assert all(abs(joined[r] - sub[r] - 1.0) <= 0.125 for r in newcomers)
    _, first = _first_rebalance(run)
    revoked = {p for f in first.loc[first["event"] == "revoked", "fields"]
               for p in f["partitions"]}
    assert 0 < len(revoked) < 8
    assert run.processed == run.produced


def _cooperative_group(partitions: int):
    """A ClassicGroup of the cooperative protocol over a bare world (round_s 0.5 s)."""
    from types import SimpleNamespace

    import numpy as np

    from pytest_lagscale.twin.group import ClassicGroup
    from pytest_lagscale.twin.world import EventSink

    params = SimpleNamespace(protocol="cooperative", round_s={"cooperative": 0.5},
                             balancer="cooperative-sticky", first_fetch_s=1.0)
    world = SimpleNamespace(params=params, partitions=partitions, owner=[None] * partitions,
                            position=np.zeros(partitions, dtype=np.int64),
                            committed=np.zeros(partitions, dtype=np.int64), events=EventSink())
    return ClassicGroup(world), world


def _member(rid: str):
    from pytest_lagscale.twin.world import Replica

    return Replica(rid=rid, ordinal=0, started_s=0.0, work_s=0.0, probe_phase_s=0.0,
                   phase="member")


def test_cooperative_assignment_reaches_a_busy_member_at_its_next_poll() -> None:
    """A member mid-batch when a cooperative round ends gets its new partitions at its next
    batch boundary (the assign callback runs inside ``consume()``), and a round started before
    then waits for it; an idle member is assigned at once."""
    group, world = _cooperative_group(4)
    a, b, c = _member("a"), _member("b"), _member("c")
    busy = object()
    group.join(a, 0.0)
    group.tick(0.5)
    assert sorted(a.owned) == [0, 1, 2, 3] and a.joined  # idle: assigned at once
    a.batch = busy
    group.join(b, 1.0)
    group.tick(1.5)  # a keeps consuming: no callback pending, it rejoined in the background
    moved = sorted(a.pending_revoke)
    assert len(moved) == 2 and b.joined and not b.owned
    a.batch = None
    group.boundary(a, 2.0)  # a revokes them at its boundary: a second round
    b.batch = busy  # b is mid-batch (of nothing) when that round ends
    group.tick(2.5)
    assert b.pending_assign == moved and not b.owned and world.owner[moved[0]] is None
    group.join(c, 3.0)
    group.tick(3.5)
    group.tick(4.5)
    assert group.round_members is not None and b in group.waiting  # held by b's callback
    b.batch = None
    group.boundary(b, 5.0)
    taken = [e for e in world.events.records if e["event"] == "assigned"
             and e["replica_id"] == "b" and e["partitions"]]
    assert [(e["monotonic_s"], e["partitions"]) for e in taken] == [(5.0, moved)]
    assert not b.pending_assign and all(b.owned[q] == 6.0 for q in b.owned)
    assert c.joined  # the round ended as b rejoined: a and c had rejoined long before


def test_a_cooperative_round_held_by_one_member_ends_at_its_boundary() -> None:
    """When the round waited only for a member with a callback to serve (the others rejoined
    in the background long before), it ends as that member rejoins at its boundary, and the
    member serves the revocation the round asks of it at that same boundary (the runs: 15-21 %
    of a replica's consecutive revocations came 0.00-0.13 s apart)."""
    group, world = _cooperative_group(6)
    a, b, c = _member("a"), _member("b"), _member("c")
    busy = object()
    group.join(a, 0.0)
    group.tick(0.5)
    a.batch = busy
    group.join(b, 1.0)
    group.tick(1.5)  # b joins with nothing: a owes its moved partitions
    owed = set(a.pending_revoke)
    assert len(owed) == 3 and not b.owned
    group.join(c, 2.0)  # a round a must rejoin: held until a's boundary
    group.tick(2.5)
    group.tick(4.0)
    assert a in group.waiting and group.done_at is None
    a.batch = None
    group.boundary(a, 5.0)
    revoked = [e for e in world.events.records if e["event"] == "revoked"]
    # two revocations at the one boundary: what b was owed, then what c is owed
    assert [e["monotonic_s"] for e in revoked] == [5.0, 5.0]
    assert set(revoked[0]["partitions"]) == owed and len(a.owned) == 2
    assert group.round_members is not None and group.done_at == 5.5  # the hand-over round
    group.tick(5.5)
    assert sorted(b.owned) + sorted(c.owned) and len(b.owned) == len(c.owned) == 2
