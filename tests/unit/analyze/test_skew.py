"""Ideal drain and oracle under skewed partition shares (known answers)."""

from __future__ import annotations

import pytest

from pytest_lagscale.analyze import oracle_replica_seconds as even_spread_oracle
from pytest_lagscale.analyze.skew import (IdealDrain, ideal_drain, max_member_share,
                                          oracle_replica_seconds, oracle_replicas,
                                          partition_shares)

from . import synth

#: P = 4, the hottest partition carries half the input.
SHARES = (0.5, 0.2, 0.2, 0.1)


def test_partition_shares_from_manifest_counts() -> None:
    assert partition_shares([50, 20, 20, 10], 4) == SHARES
    assert partition_shares(None, 4) == (0.25,) * 4
    assert partition_shares([0, 0], 2) == (0.5, 0.5)
    with pytest.raises(ValueError) as info:
        partition_shares([1, 2], 3)
    assert str(info.value) == ("counts: [1, 2] must be 3 counts >= 0 records, one per "
                               "partition; pass Manifest.counts() in partition order")


@pytest.mark.parametrize("shares, members, expected", [
    pytest.param(SHARES, 1, 1.0, id="one-member-takes-all"),
    # slots 2+2: 0.5 | 0.2+0.2, then 0.1 must join 0.5 (the other member is full)
    pytest.param(SHARES, 2, 0.6, id="two-members-two-slots-each"),
    # slots 2+1+1: 0.5 alone on a 1-slot member
    pytest.param(SHARES, 3, 0.5, id="hot-partition-alone"),
    pytest.param(SHARES, 4, 0.5, id="one-partition-each"),
    pytest.param((0.125,) * 8, 3, 0.375, id="uniform-8-over-3-is-ceil-granular"),
])
def test_max_member_share(shares: tuple, members: int, expected: float) -> None:
    assert max_member_share(shares, members) == pytest.approx(expected)


@pytest.mark.parametrize("rate, expected", [
    pytest.param(150.0, (2, False), id="two-members-carry-90-per-s-max"),
    pytest.param(190.0, (3, False), id="hot-partition-needs-its-own-member"),
    pytest.param(210.0, (4, True), id="hot-partition-over-capacity-capped"),
    pytest.param(0.0, (1, False), id="idle-at-min"),
])
def test_oracle_replicas_honours_the_hottest_partition(rate: float, expected: tuple) -> None:
    assert oracle_replicas(rate, SHARES, 100.0, min_replicas=1, full_replicas=4) == expected


def test_oracle_replica_seconds_skewed_vs_even_spread() -> None:
    table = synth.timeline(30, produce_rate_per_s={0: 150.0, 10: 190.0, 20: 210.0})
    assert oracle_replica_seconds(table, SHARES, 100.0, 1, 4) == (10 * 2 + 10 * 3 + 10 * 4, 10)
    assert even_spread_oracle(table, 100.0, 1, 4) == 10 * 2 + 10 * 2 + 10 * 3


def test_ideal_drain_bounded_by_the_slowest_partition() -> None:
    # backlog 1000 as total x share: 500 on partition 0, drained at 100 - 50 x 0.5 = 75/s
    ideal = ideal_drain(1000.0, None, SHARES, 100.0, full_replicas=4, input_rate_per_s=50.0)
    assert ideal == IdealDrain(pytest.approx(500 / 75), pytest.approx(500 / 75),
                               pytest.approx(1000 / 350), 0, "total x share")


def test_ideal_drain_from_store_backlogs() -> None:
    # partition 1 holds 300 at 100 - 50 x 0.2 = 90/s spare: 3.33 s > group 2.86 s
    ideal = ideal_drain(1000.0, [100.0, 300.0, 300.0, 300.0], SHARES, 100.0, 4, 50.0)
    assert (ideal.time_s, ideal.slowest_partition, ideal.backlog_source) == (
        pytest.approx(300 / 90), 1, "store")


def test_ideal_drain_group_bound_when_partitions_are_even() -> None:
    ideal = ideal_drain(1000.0, None, (0.25,) * 4, 100.0, full_replicas=2,
                        input_rate_per_s=100.0)
    assert ideal.time_s == pytest.approx(1000 / 100) and ideal.partition_bound_s < 10


def test_ideal_drain_none_when_the_hottest_partition_outgrows_a_replica() -> None:
    ideal = ideal_drain(1000.0, None, SHARES, 100.0, full_replicas=4, input_rate_per_s=250.0)
    assert (ideal.time_s, ideal.partition_bound_s, ideal.slowest_partition) == (None, None, 0)
    assert ideal.group_bound_s == pytest.approx(1000 / 150)
