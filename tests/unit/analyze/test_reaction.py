from __future__ import annotations

import pytest

from pytest_lagscale.analyze import Reaction, reaction_time

from . import synth


def test_reaction_breakdown_follows_first_new_replica_to_process() -> None:
    _, log = synth.scale_out_run()
    assert reaction_time(log) == Reaction(
        total_s=19.0, detection_s=5.0, actuation_s=5.5, cold_start_s=5.0, join_s=2.5,
        first_fetch_s=1.0, replica_id="r2", reason=None)


def test_reaction_parts_add_up_to_total() -> None:
    _, log = synth.scale_out_run()
    r = reaction_time(log)
    assert r.detection_s + r.actuation_s + r.cold_start_s + r.join_s + r.first_fetch_s \
        == pytest.approx(r.total_s)


BASE = [
    (10.0, "producer", "spike_start", {}),
    (11.0, "r0", "first_record", {}),
]


@pytest.mark.parametrize("rows, expected", [
    pytest.param(
        [(0.0, "platform", "replica_started", {"replica_id": "r0"})] + BASE,
        Reaction(None, None, None, None, None, None, None,
                 "NoScaleOutDecision: no 'decision' with desired_replicas > current_replicas "
                 "after the spike start at 10.0 s"),
        id="old-replica-does-not-count"),
    pytest.param(
        BASE + [(12.0, "controller", "decision", {"desired_replicas": 1,
                                                  "current_replicas": 1}),
                (13.0, "controller", "decision", {"desired_replicas": 2,
                                                  "current_replicas": 1})],
        Reaction(None, 3.0, None, None, None, None, None,
                 "NoNewReplica: no replica started after the spike start at 10.0 s"),
        id="first-decision-with-desired-above-current"),
    pytest.param(
        BASE + [(13.0, "controller", "decision", {"desired_replicas": 2,
                                                  "current_replicas": 1}),
                (14.0, "platform", "replica_started", {"replica_id": "r1"}),
                (16.0, "platform", "replica_ready", {"replica_id": "r1"}),
                (17.0, "r1", "assigned", {"partitions": []}),
                (18.0, "r1", "assigned", {"partitions": [3]})],
        Reaction(None, 3.0, 1.0, 2.0, 2.0, None, "r1",
                 "NoFirstRecord: replica 'r1' has no 'first_record' event"),
        id="empty-assignment-skipped"),
    pytest.param(
        # Seen in CI (lagThreshold 50): at 8 of 8 through the spike, in to 3, out to 4 later.
        BASE + [(12.0, "controller", "decision", {"desired_replicas": 8,
                                                  "current_replicas": 8}),
                (150.0, "controller", "decision", {"desired_replicas": 3,
                                                   "current_replicas": 8}),
                (190.0, "controller", "decision", {"desired_replicas": 4,
                                                   "current_replicas": 3}),
                (191.0, "platform", "replica_started", {"replica_id": "r9"}),
                (195.0, "platform", "replica_ready", {"replica_id": "r9"}),
                (196.0, "r9", "assigned", {"partitions": [1]}),
                (197.0, "r9", "first_record", {})],
        Reaction(None, None, None, None, None, None, None,
                 "ScaledInFirst: the group scaled in at 150.0 s, after the spike start at "
                 "10.0 s and before any scale-out: it absorbed the spike with the replicas it "
                 "had"),
        id="a-scale-out-after-a-scale-in-is-no-reaction"),
    pytest.param(
        [(0.0, "controller", "decision", {"desired_replicas": 2, "current_replicas": 1})],
        Reaction(None, None, None, None, None, None, None,
                 "NoSpikeStart: no 'spike_start' event; the producer must log the spike"),
        id="no-spike"),
])
def test_reaction_missing_events(rows: list, expected: Reaction) -> None:
    assert reaction_time(synth.events(*rows)) == expected


def test_reaction_spike_start_override() -> None:
    _, log = synth.scale_out_run()
    assert reaction_time(log, spike_start_s=22.0).detection_s == 3.0


def test_ready_is_the_engine_when_the_probe_sees_the_replica_after_its_assignment() -> None:
    # /ready waits for the first assignment and the probe polls once a second: the platform's
    # replica_ready (16.4) can follow the assignment (16.0). The engine was up at 15.5.
    log = synth.events(
        (10.0, "producer", "spike_start", {}),
        (12.0, "controller", "decision", {"desired_replicas": 2, "current_replicas": 1}),
        (12.5, "platform", "replica_started", {"replica_id": "r1"}),
        (15.5, "r1", "engine_ready", {}),
        (16.0, "r1", "assigned", {"partitions": [0, 1]}),
        (16.4, "platform", "replica_ready", {"replica_id": "r1"}),
        (16.5, "r1", "first_record", {}),
    )
    r = reaction_time(log)
    assert (r.detection_s, r.actuation_s, r.cold_start_s, r.join_s, r.first_fetch_s) == (
        2.0, 0.5, 3.0, 0.5, 0.5)
    assert r.total_s == 6.5 and r.reason is None


def test_a_share_group_members_join_is_its_joined_event() -> None:
    rows = [(10.0, "producer", "spike_start", {}),
            (13.0, "controller", "decision", {"desired_replicas": 2, "current_replicas": 1}),
            (14.0, "platform", "replica_started", {"replica_id": "r2"}),
            (20.0, "r2", "engine_ready", {}),
            (26.0, "r2", "joined", {"partitions": [], "group_type": "share"}),
            (27.5, "r2", "first_record", {})]
    r = reaction_time(synth.events(*rows))
    assert (r.reason, r.join_s, r.first_fetch_s, r.total_s) == (None, 6.0, 1.5, 17.5)
    consumer = [row for row in rows if row[2] != "joined"] + [(26.0, "r2", "joined", {"partitions": []})]
    assert reaction_time(synth.events(*consumer)).reason.startswith("NoAssignment"), \
        "a consumer group's join without an assignment is no assignment"
