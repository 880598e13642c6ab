from __future__ import annotations

import pytest

from pytest_lagscale.analyze import ScaleStep, direction_reversals, scale_steps

from . import synth


def test_dip_of_exactly_30_percent_and_recovery() -> None:
    # step at 20 s: rate 100/s before (median 100), 70/s for 3 s, then back to 100
    rate = {0: 100.0, 20: 70.0, 23: 100.0}
    table = synth.timeline(40, current_replicas={0: 2, 20: 3}, consume_rate_per_s=rate)
    [step] = scale_steps(table)
    assert step.dip == pytest.approx(0.30)
    assert step == ScaleStep(t_s=20.0, replicas_before=2, replicas_after=3, direction="up",
                             reversal=False, dip=step.dip, recovery_s=3.0)


def test_dip_median_ignores_one_outlier_and_late_drop() -> None:
    rate = [100.0] * 15 + [500.0] + [100.0] * 4 + [100.0, 100.0, 50.0, 90.0, 96.0] + [100.0] * 5
    table = synth.timeline(30, current_replicas={0: 1, 20: 2}, consume_rate_per_s=rate)
    [step] = scale_steps(table)
    assert (step.dip, step.recovery_s) == (pytest.approx(0.5), 4.0)


@pytest.mark.parametrize("rate, expected", [
    pytest.param({0: 100.0, 10: 96.0}, (pytest.approx(0.04), 0.0), id="no-real-dip"),
    pytest.param({0: 100.0, 10: 50.0}, (pytest.approx(0.5), None), id="never-recovers"),
    pytest.param({0: 0.0}, (None, None), id="zero-median"),
    pytest.param({0: 100.0, 10: 200.0}, (pytest.approx(-1.0), 0.0), id="rate-rose"),
])
def test_dip_edge_cases(rate: dict, expected: tuple) -> None:
    table = synth.timeline(25, current_replicas={0: 1, 10: 2}, consume_rate_per_s=rate)
    [step] = scale_steps(table)
    assert (step.dip, step.recovery_s) == expected


def test_windows_truncated_at_the_timeline_edges() -> None:
    # one row before the step, one after: still measured over what there is
    [step] = scale_steps(synth.timeline(2, current_replicas=[2, 3],
                                        consume_rate_per_s=[100.0, 80.0]))
    assert (step.t_s, step.dip, step.recovery_s) == (1.0, pytest.approx(0.2), None)


@pytest.mark.parametrize("replicas, directions, reversals", [
    pytest.param({0: 1, 10: 3, 20: 5}, ["up", "up"], 0, id="monotone-scale-out"),
    pytest.param({0: 1, 10: 3, 20: 2, 30: 4}, ["up", "down", "up"], 2, id="flapping"),
    pytest.param({0: 4, 10: 2, 20: 1}, ["down", "down"], 0, id="monotone-scale-in"),
    pytest.param({0: 2}, [], 0, id="no-steps"),
])
def test_direction_reversals(replicas: dict, directions: list, reversals: int) -> None:
    steps = scale_steps(synth.timeline(40, current_replicas=replicas))
    assert [s.direction for s in steps] == directions
    assert direction_reversals(steps) == reversals


def test_reversal_flag_is_on_the_step_that_turns() -> None:
    steps = scale_steps(synth.timeline(40, current_replicas={0: 1, 10: 3, 20: 2}))
    assert [s.reversal for s in steps] == [False, True]


def test_steps_follow_chosen_column() -> None:
    table, _ = synth.scale_out_run()
    assert [s.t_s for s in scale_steps(table, column="ready_replicas")] == [35.0]
    assert [s.t_s for s in scale_steps(table, column="desired_replicas")] == [25.0]
