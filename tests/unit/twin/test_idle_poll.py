"""An idle replica's first batch: at the end of the poll slice its first records arrived in
(``group.idle_poll_s``), with what was produced by then; and its calibration."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest


def _first_batch(params, *, first_tick: int = 17, ticks: int = 40):
    """(start_s, records) of the first batch of one member replica, idle from t = 0 on an empty
    partition 0 that receives 250 records per tick from ``first_tick`` on."""
    from .conftest import one_member_world

    world, replica = one_member_world(
        params, [max(0, k - first_tick + 1) * 250 for k in range(ticks + 1)])
    for k in range(ticks + 1):
        world.tick(k)
        if replica.batch is not None:
            return replica.batch.start_s, replica.batch.records
    raise AssertionError("no batch started")


def _params(idle_poll_s: float):
    from .test_simulate import spike_run_params

    return replace(spike_run_params(), idle_poll_s=idle_poll_s)


def test_without_idle_poll_the_first_records_start_a_batch_at_once() -> None:
    assert _first_batch(_params(0.0)) == (pytest.approx(2.125), 250)


def test_the_first_batch_waits_for_the_end_of_the_slice_and_takes_what_came() -> None:
    """Slices of 1 s from t = 0 (when the replica found nothing): records from 2.125 s start a
    batch at 3.0 s with the 2,000 records produced by then."""
    assert _first_batch(_params(1.0)) == (pytest.approx(3.0), 2000)


def test_a_slice_ending_between_ticks_takes_what_was_produced_by_its_end() -> None:
    """Slices of 0.9 s end at 2.7 s, between the ticks of 2.625 s (1,250 records) and 2.75 s
    (1,500): the batch starts at 2.7 s with 1,250 + 250 x 0.6 = 1,400."""
    assert _first_batch(_params(0.9)) == (pytest.approx(2.7), 1400)


def _facts(first_batch_after_load_s: float | None, *, batch_before_load: bool = False):
    starts = [] if first_batch_after_load_s is None else [100.0 + first_batch_after_load_s]
    if batch_before_load:
        starts.append(99.0)
    return SimpleNamespace(load_start_s=100.0, batches=pd.DataFrame({"start_s": starts}))


def test_idle_poll_is_the_largest_first_batch_delay_times_n_plus_one_over_n() -> None:
    from pytest_lagscale.calibration.calibrate import idle_poll_s

    runs = [_facts(0.2), _facts(0.6), _facts(0.9), _facts(0.4)]
    assert idle_poll_s(runs) == pytest.approx(0.9 * 5 / 4)


def test_idle_poll_needs_runs_idle_before_their_load() -> None:
    """A run with a batch before its load was not idle; one without batches says nothing: with
    fewer than three samples left there is no estimate (the key is left out)."""
    from pytest_lagscale.calibration.calibrate import idle_poll_s

    runs = [_facts(0.2), _facts(0.6, batch_before_load=True), _facts(None), _facts(0.5)]
    assert idle_poll_s(runs) is None
