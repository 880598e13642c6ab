from __future__ import annotations

import pytest

from pytest_lagscale.analyze import ScaleStep, direction_reversals, scale_steps

from . import synth


def test_step_fields_without_store_or_events() -> None:
    # the count changes at 20 s; nothing to anchor it or measure its rate with
    table = synth.timeline(40, current_replicas={0: 2, 20: 3})
    [step] = scale_steps(table)
    assert step == ScaleStep(t_s=20.0, replicas_before=2, replicas_after=3, direction="up",
                             reversal=False, dip=None, recovery_s=None, rebalance_s=None,
                             dip_reason="no store")


def test_no_rebalance_reason_with_a_store() -> None:
    table = synth.timeline(40, current_replicas={0: 2, 20: 3}, total_lag=50_000)
    store = synth.store(synth.batches("r1", 0.0, 40.0, 0.1, 10))
    [step] = scale_steps(table, events=synth.events(), store=store)
    assert (step.rebalance_s, step.dip, step.dip_reason) == (None, None, "no rebalance")


def test_no_store_keeps_the_rebalance() -> None:
    table = synth.timeline(40, current_replicas={0: 2, 20: 1})
    log = synth.events((20.5, "r2", "revoked", {"partitions": [3, 4]}))
    [step] = scale_steps(table, events=log)
    assert (step.rebalance_s, step.partitions_stopped, step.dip_reason) == (
        pytest.approx(20.5), 2, "no store")
    assert step.to_dict()["partitions_stopped"] == 2 and set(step.to_dict()) == {
        "t_s", "replicas_before", "replicas_after", "direction", "reversal", "dip",
        "recovery_s", "rebalance_s", "dip_reason", "rebalance_cost_records",
        "rebalance_duration_s", "partitions_stopped", "rate_before_per_s"}


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
