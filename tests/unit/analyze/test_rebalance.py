"""Anchoring each scale step at the rebalance it causes (replica and platform events)."""

from __future__ import annotations

import pytest

from pytest_lagscale.analyze.rebalance import Rebalance, StepTime, step_rebalances

from . import synth

UP_UP = [StepTime(10.0, "up"), StepTime(14.0, "up")]


def test_scale_ups_anchor_at_their_own_members_join_after_the_cold_start() -> None:
    # 1 -> 3 at 10 s and 3 -> 5 at 14 s; the first members join at 26 s, after the second step
    log = synth.events(
        (9.5, "platform", "replica_started", {"replica_id": "r2"}),
        (9.5, "platform", "replica_started", {"replica_id": "r3"}),
        (13.5, "platform", "replica_started", {"replica_id": "r4"}),
        (13.5, "platform", "replica_started", {"replica_id": "r5"}),
        (25.0, "r2", "subscribed", {}),
        (26.0, "r2", "assigned", {"partitions": []}),
        (27.0, "r1", "revoked", {"partitions": [1, 2]}),
        (27.5, "r2", "assigned", {"partitions": [1]}),
        (27.5, "r3", "assigned", {"partitions": [2]}),
        (29.0, "r4", "subscribed", {}),
        (29.5, "r1", "assigned", {"partitions": []}),  # the first step's late tail
        (31.0, "r4", "assigned", {"partitions": []}),
        (32.0, "r3", "revoked", {"partitions": [2]}),
        (32.0, "r3", "rebalance_done", {"duration_s": 0.25}),
    )
    first, second = step_rebalances(log, UP_UP)
    # first: callbacks 26.0 .. 29.5 (r1's late tail, before the next anchor); second: 31 .. 32
    assert first == Rebalance(pytest.approx(26.0), ("r2", "r3"), pytest.approx(3.5), 2)
    assert second == Rebalance(pytest.approx(31.0), ("r4", "r5"), pytest.approx(1.0), 1)


def test_eager_revoke_before_the_newcomers_assignment_is_the_anchor() -> None:
    log = synth.events((9.5, "platform", "replica_started", {"replica_id": "r2"}),
                       (20.0, "r2", "subscribed", {}),
                       (20.4, "r1", "revoked", {"partitions": [0, 1]}),
                       (21.0, "r2", "assigned", {"partitions": [1]}))
    [rebalance] = step_rebalances(log, UP_UP[:1])
    assert (rebalance.start_s, rebalance.partitions_stopped) == (pytest.approx(20.4), 2)


def test_scale_up_whose_members_never_joined_has_no_rebalance() -> None:
    log = synth.events((9.5, "platform", "replica_started", {"replica_id": "r2"}),
                       (12.0, "r1", "assigned", {"partitions": []}))
    assert step_rebalances(log, UP_UP[:1]) == [Rebalance(None, ("r2",))]


def test_scale_down_anchors_at_the_leaving_members_revoke_before_the_row() -> None:
    # the timeline shows 2 -> 1 at 40 s; the platform stopped r2 at 38.8 s
    log = synth.events((30.0, "r1", "assigned", {"partitions": []}),
                       (38.8, "platform", "replica_terminating", {"replica_id": "r2"}),
                       (38.9, "r2", "revoked", {"partitions": [1]}),
                       (39.9, "r1", "assigned", {"partitions": [1]}))
    [rebalance] = step_rebalances(log, [StepTime(40.0, "down")])
    assert rebalance == Rebalance(pytest.approx(38.9), ("r2",), pytest.approx(1.0), 1)


def test_without_platform_events_first_rebalance_before_the_next_step() -> None:
    log = synth.events((12.0, "r1", "assigned", {"partitions": [0]}),
                       (25.0, "r1", "revoked", {"partitions": [0]}))
    steps = [StepTime(10.0, "up"), StepTime(20.0, "down"), StepTime(30.0, "up")]
    assert [r.start_s for r in step_rebalances(log, steps)] == [
        pytest.approx(12.0), pytest.approx(25.0), None]


def test_step_window_is_cut_at_the_next_anchor() -> None:
    log = synth.events((12.0, "r1", "revoked", {"partitions": [0]}),
                       (15.0, "r1", "revoked", {"partitions": [1]}),
                       (16.5, "r1", "assigned", {"partitions": [2]}),
                       (16.5, "r1", "rebalance_done", {"duration_s": 0.001}))
    first, second = step_rebalances(log, [StepTime(10.0, "up"), StepTime(14.0, "down")])
    assert (first.partitions_stopped, first.duration_s) == (1, 0.0)
    assert (second.partitions_stopped, second.duration_s) == (1, pytest.approx(1.5))


def test_no_events() -> None:
    assert step_rebalances(None, UP_UP) == [Rebalance(None), Rebalance(None)]


def test_a_share_group_step_anchors_at_its_members_join_and_leave_and_stops_no_partition() -> None:
    # share replicas log share_offset_reset; no revoked/assigned exist: joined / closed stand in
    log = synth.events((0.5, "r1", "share_offset_reset", {"value": "earliest"}),
                       (1.0, "r1", "joined", {"partitions": [], "group_type": "share"}),
                       (9.5, "platform", "replica_started", {"replica_id": "r2"}),
                       (24.0, "r2", "subscribed", {}),
                       (30.0, "r2", "joined", {"partitions": [], "group_type": "share"}),
                       (58.8, "platform", "replica_terminating", {"replica_id": "r2"}),
                       (59.2, "r2", "closed", {"left_group": True}))
    up, down = step_rebalances(log, [StepTime(10.0, "up"), StepTime(60.0, "down")])
    assert (up.start_s, up.members, up.partitions_stopped) == (pytest.approx(30.0), ("r2",), 0)
    assert (down.start_s, down.partitions_stopped) == (pytest.approx(59.2), 0)
    without = synth.events((9.5, "platform", "replica_started", {"replica_id": "r2"}),
                           (30.0, "r2", "joined", {"partitions": []}))
    assert step_rebalances(without, UP_UP[:1]) == [Rebalance(None, ("r2",))], \
        "a consumer group's join is not its rebalance"
