from __future__ import annotations

import pytest

from pytest_lagscale.analyze import Drain, PeakLag, drain, lag_build_up_rate, peak_lag

from . import synth


def test_peak_lag_is_first_maximum() -> None:
    table, _ = synth.scale_out_run()
    assert peak_lag(table) == PeakLag(records=3000, t_s=35.0)


def test_peak_lag_empty_timeline() -> None:
    with pytest.raises(ValueError, match="timeline: is empty"):
        peak_lag(synth.timeline(0))


@pytest.mark.parametrize("spike_end_s, expected", [
    pytest.param(60.0, 200.0, id="until-new-replicas-ready"),
    pytest.param(30.0, 200.0, id="spike-ends-first"),
])
def test_lag_build_up_rate(spike_end_s: float, expected: float) -> None:
    table, _ = synth.scale_out_run()
    assert lag_build_up_rate(table, 20.0, spike_end_s) == pytest.approx(expected)


def test_lag_build_up_rate_no_window() -> None:
    table, _ = synth.scale_out_run()
    assert lag_build_up_rate(table, 20.0, 20.0) is None


def test_drain_time_and_monotone() -> None:
    table, _ = synth.scale_out_run()
    result = drain(table, spike_end_s=60.0, lag_threshold_records=1000, full_replicas=3)
    assert result == Drain(drain_time_s=20.0, drained_at_s=80.0, monotone=True,
                           window_means=(2550.0, 1550.0, 1000.0))


def test_drain_non_monotone() -> None:
    # windows [0,10) mean 5000, [10,20) mean 6000 (a second wave), [20,25) mean 500
    lag = [5000] * 10 + [6000] * 10 + [500] * 5
    table = synth.timeline(25, total_lag=lag, ready_replicas=4)
    result = drain(table, spike_end_s=0.0, lag_threshold_records=500, full_replicas=4)
    assert (result.monotone, result.first_violation_s, result.window_means) == (
        False, 10.0, (5000.0, 6000.0, 500.0))
    assert result.drain_time_s == 20.0


def test_drain_ignores_steps_below_full_parallelism() -> None:
    lag = [5000] * 10 + [6000] * 10 + [4000] * 10 + [0]
    ready = [4] * 10 + [2] * 10 + [4] * 11
    table = synth.timeline(31, total_lag=lag, ready_replicas=ready)
    result = drain(table, spike_end_s=0.0, lag_threshold_records=0, full_replicas=4)
    assert result.monotone and result.window_means == (5000.0, 4000.0, 0.0)


def test_drain_never_drained() -> None:
    table = synth.timeline(5, total_lag=9000, ready_replicas=2)
    result = drain(table, spike_end_s=0.0, lag_threshold_records=100, full_replicas=2)
    assert (result.drain_time_s, result.drained_at_s, result.monotone) == (None, None, True)
