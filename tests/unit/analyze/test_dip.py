"""The rebalance dip, recovery and cost on synthetic per-record stores with known answers.

Every store below has a rate window of 2 s (batches every 0.1 s or 1 s). Rates in comments are
the group's, records/s.
"""

from __future__ import annotations

import pandas as pd
import pytest

from pytest_lagscale.analyze import scale_steps
from pytest_lagscale.analyze.dip import Dip, rebalance_dip, saturated

from . import synth

SATURATED = 50_000


def _step(store_tables: list[pd.DataFrame], rows: list[tuple], replicas: dict,
          total_lag: object = SATURATED):
    table = synth.timeline(80, current_replicas=replicas, total_lag=total_lag)
    [step] = scale_steps(table, events=synth.events(*rows), store=synth.store(*store_tables))
    return step


def _join(at_s: float, member: str = "r2", partitions: list | None = None) -> list[tuple]:
    """A scale-up's platform start at 29.5 s and ``member`` subscribing 1 s before ``at_s``."""
    return [(29.5, "platform", "replica_started", {"replica_id": member}),
            (at_s - 1.0, member, "subscribed", {}),
            (at_s, member, "assigned", {"partitions": partitions or []})]


def test_smooth_handover_has_no_dip() -> None:
    # 1000/s on r1, from 32 s 500/s on each of r1 and r2: the group never slows
    stores = [synth.batches("r1", 0.0, 32.0, 0.1, 100),
              synth.batches("r1", 32.0, 80.0, 0.1, 50, partition=0),
              synth.batches("r2", 32.0, 80.0, 0.1, 50, partition=1)]
    rows = [*_join(32.0, partitions=[1]), (32.0, "r1", "revoked", {"partitions": [1]}),
            (32.0, "r1", "rebalance_done", {"duration_s": 0.01})]
    step = _step(stores, rows, {0: 1, 30: 2})
    assert (step.rebalance_s, step.dip, step.dip_reason, step.recovery_s,
            step.rebalance_cost_records, step.rate_before_per_s) == (32.0, 0.0, None, 0.0, 0.0,
                                                                     1000.0)
    # every callback at 32.0 s: the rebalance took no time as its members saw it
    assert (step.partitions_stopped, step.rebalance_duration_s) == (1, 0.0)


def test_batchy_replica_is_not_a_full_dip() -> None:
    # 1000 records written at one instant per batch, batches 0.9 s and 1.1 s apart by turns
    # (median interval 1 s): a 1 s window between batches can read 0, the 2 s window (two
    # batch intervals) reads a steady 1000/s
    stores = [synth.batches("r1", 0.0, 80.0, 2.0, 1000, spread_s=0.0),
              synth.batches("r1", 0.9, 80.9, 2.0, 1000, spread_s=0.0)]
    step = _step(stores, _join(33.0), {0: 1, 30: 2})
    assert (step.rebalance_s, step.dip, step.recovery_s, step.rebalance_cost_records) == (
        33.0, 0.0, 0.0, 0.0)


def test_long_spark_batches_count_by_write_time() -> None:
    # saturated Spark: r1 starts a batch of 2000 records every 5 s and writes them over the
    # 5 s (400/s); r2's 10 records a second make the median batch interval 1 s, so the window
    # is 2 s: by batch time r1 would read 0 and 1000/s by turns
    stores = [synth.batches("r1", 0.0, 80.0, 5.0, 2000),
              synth.batches("r2", 0.0, 80.0, 1.0, 10, partition=1, spread_s=0.0)]
    step = _step(stores, _join(33.0, member="r3"), {0: 2, 30: 3})
    assert (step.dip, step.rate_before_per_s, step.rebalance_cost_records) == (
        pytest.approx(0.0), pytest.approx(410.0), pytest.approx(0.0, abs=1e-6))


def test_scale_up_whose_rate_rises_has_dip_zero_not_negative() -> None:
    # 400/s, 800/s from 33 s on (2 s before r2's join at 35 s): the median before is 400/s and
    # the lowest rate after 800/s, 1 - 800 / 400 = -1 unclamped
    stores = [synth.batches("r1", 0.0, 33.0, 0.1, 40),
              synth.batches("r1", 33.0, 80.0, 0.1, 80)]
    step = _step(stores, _join(35.0, partitions=[1]), {0: 1, 30: 2})
    assert (step.dip, step.recovery_s, step.rebalance_cost_records, step.rate_before_per_s) == (
        0.0, 0.0, 0.0, 400.0)


def test_scale_down_after_the_backlog_ran_out_is_not_saturated() -> None:
    # 200/s with 100 records of lag: less than one 2 s window of work (400 records)
    stores = [synth.batches("r1", 0.0, 80.0, 0.1, 10),
              synth.batches("r2", 0.0, 39.6, 0.1, 10, partition=1)]
    rows = [(39.5, "platform", "replica_terminating", {"replica_id": "r2"}),
            (39.6, "r2", "revoked", {"partitions": [1]}),
            (40.2, "r1", "assigned", {"partitions": [1]})]
    step = _step(stores, rows, {0: 2, 40: 1}, total_lag=100)
    assert (step.rebalance_s, step.dip, step.dip_reason, step.recovery_s,
            step.rebalance_cost_records, step.partitions_stopped) == (
        pytest.approx(39.6), None, "not saturated", None, None, 1)
    assert step.rate_before_per_s == pytest.approx(200.0)


def test_eager_rebalance_pause_known_dip_recovery_and_cost() -> None:
    # 1000/s on r1 + r2; both revoke everything at 40 s and write nothing until 41 s.
    # Window 2 s: the rate falls linearly to 500/s at 41 s, holds to 42 s and is back to
    # 950/s at 42.9 s; the cost is the 1 s pause's 1000 records.
    stores = [synth.batches("r1", 0.0, 80.0, 0.1, 50, skip=(40.0, 41.0)),
              synth.batches("r2", 0.0, 80.0, 0.1, 50, partition=2, skip=(40.0, 41.0))]
    rows = [(29.5, "platform", "replica_started", {"replica_id": "r3"}),
            (39.5, "r3", "subscribed", {}),
            (40.0, "r1", "revoked", {"partitions": [0, 1]}),
            (40.0, "r2", "revoked", {"partitions": [2, 3]}),
            (41.0, "r1", "assigned", {"partitions": [0, 1]}),
            (41.0, "r1", "rebalance_done", {"duration_s": 1.0}),
            (41.0, "r2", "assigned", {"partitions": [2]}),
            (41.0, "r2", "rebalance_done", {"duration_s": 0.8}),
            (41.0, "r3", "assigned", {"partitions": [3]})]
    step = _step(stores, rows, {0: 2, 30: 3})
    assert (step.rebalance_s, step.dip, step.recovery_s, step.rate_before_per_s) == (
        40.0, pytest.approx(0.5), pytest.approx(2.9), pytest.approx(1000.0))
    assert step.rebalance_cost_records == pytest.approx(1000.0)
    assert (step.partitions_stopped, step.rebalance_duration_s) == (4, 1.0)


def test_never_recovers_before_the_store_ends() -> None:
    # 1000/s, then 400/s from the anchor on: the window ramps down 300/s per s for 2 s
    store = synth.store(synth.batches("r1", 0.0, 40.0, 0.1, 100),
                        synth.batches("r1", 40.0, 60.0, 0.1, 40))
    dip = rebalance_dip(store, synth.timeline(60, total_lag=SATURATED), 40.0)
    assert (dip.dip, dip.recovery_s) == (pytest.approx(0.6), None)
    # deficit 30 k/s at 40 + 0.1 k (k < 20), then 600/s for 8 s, summed on the 0.1 s grid
    assert dip.cost_records == pytest.approx(sum(30 * k * 0.1 for k in range(20)) + 600 * 8)


def test_no_rate_before() -> None:
    store = synth.store(synth.batches("r1", 50.0, 60.0, 0.1, 10))
    assert rebalance_dip(store, synth.timeline(60, total_lag=SATURATED), 40.0) == Dip(
        None, "no rate before", rate_before_per_s=0.0)


@pytest.mark.parametrize("lag, expected", [
    pytest.param({0: 5000}, True, id="standing-backlog"),
    pytest.param({0: 5000, 45: 1999}, False, id="ran-out-after"),
    pytest.param({0: 5000, 30: 1999}, False, id="ran-out-before"),
    pytest.param({0: 1999, 30: 5000}, True, id="built-up-in-time"),
])
def test_saturated_over_ten_seconds_either_side(lag: dict, expected: bool) -> None:
    assert saturated(synth.timeline(60, total_lag=lag), 40.0, 2000.0) is expected
