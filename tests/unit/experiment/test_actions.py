"""Scheduled actions: the profile's ``actions`` list, the planning check and the scheduler."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pytest_lagscale.clock import RealClock
from pytest_lagscale.errors import ConfigError
from pytest_lagscale.experiment.actions import (ACTIONS, ActionContext, ActionScheduler,
                                                PlanFacts, plan_actions)
from pytest_lagscale.experiment.actions.increase_partitions import IncreasePartitions
from pytest_lagscale.experiment.actions.kill_replica import KillReplica
from pytest_lagscale.load.profiles import ActionSpec, parse_profile

STEADY = {"kind": "steady", "seed": 1, "partitions": 8, "duration_s": 60, "rate_per_s": 10}


def test_profile_actions_are_parsed_in_time_order() -> None:
    profile = parse_profile({**STEADY, "actions": [
        {"at_s": 40, "action": "kill_replica", "replica": "oldest"},
        {"at_s": 20, "action": "increase_partitions", "to": 16}]})
    assert profile.actions == (ActionSpec(20.0, "increase_partitions", {"to": 16}),
                               ActionSpec(40.0, "kill_replica", {"replica": "oldest"}))
    assert profile.to_dict()["actions"][0] == {"at_s": 20.0, "action": "increase_partitions",
                                               "to": 16}


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        pytest.param([{"at_s": 90, "action": "kill_replica"}],
                     "'at_s': 90; allowed: seconds in [0, duration_s = 60]; source: <profile> "
                     "at actions[0].at_s; give the time after the load start", id="late"),
        pytest.param([{"at_s": 5}],
                     "'actions[0]': {'at_s': 5} has no action name; allowed: a mapping with "
                     "at_s and action; source: <profile> at actions[0]; add e.g. 'action: "
                     "increase_partitions'", id="no-name"),
        pytest.param({"at_s": 5},
                     "'actions': {'at_s': 5} is not a list; allowed: a list of {at_s, action, "
                     "...} entries; source: <profile> at actions; write one '- at_s: ..., "
                     "action: ...' entry per action", id="not-a-list"),
    ],
)
def test_bad_profile_actions_name_the_entry(actions: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_profile({**STEADY, "actions": actions})
    assert info.value.problems == [message]


def test_plan_checks_names_and_parameters_all_at_once() -> None:
    specs = [ActionSpec(10, "increase_partitions", {"to": 8}),
             ActionSpec(20, "restart_everything", {}),
             ActionSpec(30, "kill_replica", {"signal": "SIGSEGV", "when": "now"})]
    with pytest.raises(ConfigError) as info:
        plan_actions(specs, PlanFacts(partitions=8))
    assert info.value.problems == [
        "actions[0].to: 8 is not allowed; allowed: an integer in [9, 1024] partitions (more "
        "than the topic has at that time); set 'to'",
        "actions[1].action: 'restart_everything' is not an action; allowed: "
        f"{', '.join(sorted(ACTIONS))}; use one of those",
        "actions[2].when: 'now' is not a parameter of this action; allowed: replica, signal; "
        "remove it",
        "actions[2].signal: 'SIGSEGV' is not allowed; allowed: SIGKILL, SIGTERM, SIGINT, "
        "SIGSTOP, SIGCONT; set 'signal'",
    ]


def test_a_second_increase_must_grow_past_the_first() -> None:
    specs = [ActionSpec(10, "increase_partitions", {"to": 16}),
             ActionSpec(20, "increase_partitions", {"to": 12})]
    with pytest.raises(ConfigError, match=r"actions\[1\].to: 12 .* \[17, 1024\]"):
        plan_actions(specs, PlanFacts(partitions=8))
    planned = plan_actions(specs[:1], PlanFacts(partitions=8))
    assert [(p.at_s, p.action) for p in planned] == [(10, IncreasePartitions(16))]


class _Events:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))


class _Platform:
    def __init__(self) -> None:
        self.killed: list[tuple[str, int]] = []

    def replicas(self) -> list[Any]:
        from types import SimpleNamespace

        return [SimpleNamespace(replica_id="replica-0001"), SimpleNamespace(replica_id="replica-0002")]

    def kill_replica(self, replica_id: str, signum: int) -> None:
        self.killed.append((replica_id, signum))


def test_scheduler_runs_each_action_on_time_and_records_failures() -> None:
    """Real clock, short delays: the kill lands at ~0.2 s, the failing increase is recorded."""
    import signal

    platform, events, clock = _Platform(), _Events(), RealClock()

    class _Admin:
        def partition_count(self, topic: str) -> int:
            raise RuntimeError("broker gone")

    context = ActionContext(_Admin(), "events", "enrich", platform, None, None, lambda r: None,
                            clock.now)
    planned = plan_actions([ActionSpec(0.2, "kill_replica", {"replica": "newest"}),
                            ActionSpec(0.3, "increase_partitions", {"to": 9})],
                           PlanFacts(partitions=8))
    start = clock.now()
    done = threading.Event()
    with ActionScheduler(planned, context, events, clock, start) as scheduler:
        while len(events.lines) < 2 and clock.now() - start < 5:
            done.wait(0.02)
        killed_after_s = clock.now() - start
    assert platform.killed == [("replica-0002", int(signal.SIGKILL))]
    assert killed_after_s >= 0.2
    assert [name for name, _ in events.lines] == ["action", "action_failed"]
    started_s = events.lines[0][1].pop("started_s")
    assert 0.2 <= started_s < 1.0
    assert events.lines[0][1] == {"action": "kill_replica", "label": "kill_replica newest SIGKILL",
                                  "scheduled_s": 0.2, "replica_id": "replica-0002",
                                  "signal": "SIGKILL"}
    assert scheduler.errors == ["increase_partitions to=9 at 0.3 s: RuntimeError: broker gone"]
    assert KillReplica().label() == "kill_replica newest SIGKILL"
