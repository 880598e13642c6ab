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
