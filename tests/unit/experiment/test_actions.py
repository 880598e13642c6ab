"""Scheduled actions: the profile's ``actions`` list, the planning check and the scheduler."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pytest_lagscale.contract.clock import RealClock
from pytest_lagscale.contract.errors import ConfigError
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
                                  "signal": "SIGKILL", "fault": True, "fault_s": 0.0}
    assert scheduler.errors == ["increase_partitions to=9 at 0.3 s: RuntimeError: broker gone"]
    assert KillReplica().label() == "kill_replica newest SIGKILL"


# -- rolling_restart ---------------------------------------------------------------------------
from pytest_lagscale.contract.errors import ReplicaError  # noqa: E402
from pytest_lagscale.experiment.actions import rolling_restart as rolling_module  # noqa: E402
from pytest_lagscale.experiment.actions.rolling_restart import RollingRestart  # noqa: E402


@pytest.mark.parametrize(("params", "problems"), [
    pytest.param({"pause_s": -1}, ["actions[0].pause_s: -1 is not allowed; allowed: seconds in "
                                   "[0, 600]; set 'pause_s'"], id="pause-negative"),
    pytest.param({"pause_s": "5s", "timeout_s": 0.5},
                 ["actions[0].pause_s: '5s' is not allowed; allowed: seconds in [0, 600]; set "
                  "'pause_s'",
                  "actions[0].timeout_s: 0.5 is not allowed; allowed: seconds in [1, 3600]; set "
                  "'timeout_s'"], id="pause-text-timeout-short"),
    pytest.param({"timeout_s": True}, ["actions[0].timeout_s: True is not allowed; allowed: "
                                       "seconds in [1, 3600]; set 'timeout_s'"], id="bool"),
    pytest.param({"order": "newest"}, ["actions[0].order: 'newest' is not a parameter of this "
                                       "action; allowed: pause_s, timeout_s; remove it"],
                 id="unknown"),
])
def test_rolling_restart_parameters_are_checked_at_plan_time(params: dict[str, Any],
                                                             problems: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        plan_actions([ActionSpec(10, "rolling_restart", params)], PlanFacts(partitions=8))
    assert info.value.problems == problems


def test_rolling_restart_defaults_and_label() -> None:
    planned = plan_actions([ActionSpec(10, "rolling_restart", {}),
                            ActionSpec(20, "rolling_restart", {"pause_s": 5, "timeout_s": 60})],
                           PlanFacts(partitions=8))
    assert [p.action for p in planned] == [RollingRestart(0.0, 180.0), RollingRestart(5, 60)]
    assert [p.action.label() for p in planned] == ["rolling_restart",
                                                   "rolling_restart pause_s=5"]
    assert RollingRestart.background is True


class _Slots:
    """A Deployment of fake replicas: an exited replica is replaced in its slot (pod name) by
    a new id; ``ready_after`` polls of the replica list pass before a replacement is ready;
    ``exits_on`` the signals the replicas exit on."""

    def __init__(self, n: int, *, ready_after: int = 0, exits_on: tuple[int, ...] = (15, 9),
                 grace_s: float = 30.0) -> None:
        from types import SimpleNamespace

        self.template = SimpleNamespace(termination_grace_period_s=grace_s)
        self.live = [self._replica(i) for i in range(n)]
        self.next_id, self.ready_after, self.exits_on = n + 1, ready_after, exits_on
        self.signals: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def _replica(self, ordinal: int, index: int | None = None, polls: int = 0) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(replica_id=f"replica-{(index or ordinal + 1):04d}",
                               pod_name=f"c-{ordinal}", instance_id=f"c-{ordinal}",
                               ordinal=ordinal, polls=polls, ready=polls == 0)

    def replicas(self) -> list[Any]:
        with self.lock:
            for r in self.live:
                r.polls -= 1
                r.ready = r.polls <= 0
            return list(self.live)

    def kill_replica(self, replica_id: str, signum: int) -> None:
        with self.lock:
            self.signals.append((replica_id, signum))
            old = next(r for r in self.live if r.replica_id == replica_id)
            if signum in self.exits_on:
                self.live.remove(old)
                self.live.append(self._replica(old.ordinal, self.next_id, self.ready_after))
                self.next_id += 1


def _context(platform: Any, events: Any = None) -> ActionContext:
    context = ActionContext(None, "events", "enrich", platform, None, None, lambda r: None,
                            RealClock().now)
    context.events = events
    return context


def test_rolling_restart_replaces_each_replica_oldest_first_in_its_slot() -> None:
    platform, events = _Slots(3, ready_after=2), _Events()
    fields = RollingRestart().run(_context(platform, events))
    assert platform.signals == [("replica-0001", 15), ("replica-0002", 15), ("replica-0003", 15)]
    assert [(r["replica_id"], r["pod_name"], r["replacement_id"], r["killed"])
            for r in fields["replicas"]] == [("replica-0001", "c-0", "replica-0004", False),
                                             ("replica-0002", "c-1", "replica-0005", False),
                                             ("replica-0003", "c-2", "replica-0006", False)]
    assert (fields["restarted"], fields["interrupted"]) == (3, False)
    assert all(r["downtime_s"] >= r["exit_wait_s"] >= 0 for r in fields["replicas"])
    assert [(name, f["replica_id"]) for name, f in events.lines] == [
        ("replica_restart_started", "replica-0001"), ("replica_restarted", "replica-0001"),
        ("replica_restart_started", "replica-0002"), ("replica_restarted", "replica-0002"),
        ("replica_restart_started", "replica-0003"), ("replica_restarted", "replica-0003")]
    assert events.lines[0][1] == {"replica_id": "replica-0001", "pod_name": "c-0",
                                  "instance_id": "c-0", "index": 0, "of": 3}
    assert [r.pod_name for r in platform.replicas()] == ["c-0", "c-1", "c-2"]


def test_rolling_restart_sigkills_a_replica_still_there_after_the_grace_period(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rolling_module, "EXIT_DETECT_S", 0.2)
    platform = _Slots(1, exits_on=(9,), grace_s=0.0)
    fields = RollingRestart().run(_context(platform))
    assert platform.signals == [("replica-0001", 15), ("replica-0001", 9)]
    assert fields["replicas"][0]["killed"] is True
    assert fields["replicas"][0]["exit_wait_s"] >= 0.2


def test_rolling_restart_fails_naming_the_slot_when_the_replacement_is_not_ready() -> None:
    platform = _Slots(2, ready_after=10**9)
    with pytest.raises(ReplicaError) as info:
        RollingRestart(timeout_s=0.3).run(_context(platform))
    assert str(info.value) == ("rolling_restart: c-0: the replacement of replica-0001 was not "
                               "ready within 0.3 s; raise timeout_s or check the replica logs")


def test_rolling_restart_skips_a_replica_scaled_down_before_its_turn() -> None:
    platform = _Slots(2)
    real_kill = platform.kill_replica

    def kill_and_scale_down(replica_id: str, signum: int) -> None:
        real_kill(replica_id, signum)
        platform.live = [r for r in platform.live if r.replica_id != "replica-0002"]

    platform.kill_replica = kill_and_scale_down  # type: ignore[method-assign]
    fields = RollingRestart().run(_context(platform))
    assert [r.get("skipped") for r in fields["replicas"]] == [
        None, "gone before its turn (scaled down)"]
    assert fields["restarted"] == 1


def test_rolling_restart_goes_on_when_the_replacement_is_scaled_down_before_ready() -> None:
    platform = _Slots(2, ready_after=10**9)
    real_kill = platform.kill_replica

    def kill_then_scale_down(replica_id: str, signum: int) -> None:
        real_kill(replica_id, signum)
        platform.live.pop()  # the autoscaler removes the newest: the replacement, not ready

    platform.kill_replica = kill_then_scale_down  # type: ignore[method-assign]
    fields = RollingRestart(timeout_s=5).run(_context(platform))
    assert [(r["replica_id"], r["replacement_id"], r["downtime_s"])
            for r in fields["replicas"]] == [("replica-0001", None, None),
                                             ("replica-0002", None, None)]
    assert platform.live == []


def test_a_rolling_restart_runs_beside_later_actions_and_the_scheduler_stop_interrupts_it() -> None:
    """The restart waits for a replacement that never gets ready; a kill 0.1 s later still runs
    on time, and leaving the scheduler stops the restart at once with what it did."""
    platform, events, clock = _Slots(2, ready_after=10**9), _Events(), RealClock()
    planned = plan_actions([ActionSpec(0.0, "rolling_restart", {"timeout_s": 60}),
                            ActionSpec(0.1, "kill_replica", {"replica": "oldest",
                                                             "signal": "SIGSTOP"})],
                           PlanFacts(partitions=8))
    start = clock.now()
    with ActionScheduler(planned, _context(platform), events, clock, start) as scheduler:
        while len(platform.signals) < 2 and clock.now() - start < 5:
            threading.Event().wait(0.02)
        assert platform.signals[1] == ("replica-0002", 19)  # SIGSTOP, while the restart waits
        assert [name for name, _ in events.lines] == ["replica_restart_started", "action"]
        left_s = clock.now()
    assert clock.now() - left_s < 1.0
    assert scheduler.errors == []
    restart = scheduler.done[-1]
    assert (restart["action"], restart["interrupted"], restart["replicas"]) == (
        "rolling_restart", True, [])
    assert [name for name, _ in events.lines][-1] == "action"


# -- faults -------------------------------------------------------------------------------------
#: Bad fault parameters tried, each with the line it must give (field, value, allowed range).
BAD_FAULT_PARAMS = [
    ("pause_broker", {"duration_s": 0}, "actions[0].duration_s: 0 is not allowed; allowed: a "
     "number of seconds in [0.1, 3600]"),
    ("pause_broker", {"duration_s": -5}, "actions[0].duration_s: -5 is not allowed"),
    ("pause_broker", {"duration_s": "20"}, "actions[0].duration_s: '20' is not allowed"),
    ("pause_broker", {"duration_s": True}, "actions[0].duration_s: True is not allowed"),
    ("pause_broker", {"duration_s": 1e12}, "actions[0].duration_s: 1000000000000.0 is not "
     "allowed"),
    ("pause_broker", {"seconds": 20}, "actions[0].seconds: 20 is not a parameter of this "
     "action; allowed: duration_s"),
    ("hang_replica", {"replica": "pod-1"}, "actions[0].replica: 'pod-1' is not allowed; "
     "allowed: newest, oldest or a replica id"),
    ("hang_replica", {"duration_s": None}, "actions[0].duration_s: None is not allowed"),
    ("restart_broker", {"graceful": "yes"}, "actions[0].graceful: 'yes' is not allowed; "
     "allowed: true (SIGTERM) or false (SIGKILL)"),
    ("restart_broker", {"down_s": -1}, "actions[0].down_s: -1 is not allowed; allowed: a number "
     "of seconds in [0, 3600]"),
    ("kill_prometheus", {"signal": "SIGTERM"}, "actions[0].signal: 'SIGTERM' is not a "
     "parameter of this action; allowed: none"),
    ("restart_prometheus", {"at": 3}, "actions[0].at: 3 is not a parameter of this action"),
]


@pytest.mark.parametrize("action,params,line", BAD_FAULT_PARAMS,
                         ids=[f"{a}-{'-'.join(p)}" for a, p, _ in BAD_FAULT_PARAMS])
def test_fault_parameters_are_checked_when_the_run_is_planned(action, params, line) -> None:
    with pytest.raises(ConfigError) as error:
        plan_actions([ActionSpec(90, action, params)], PlanFacts(partitions=8))
    assert any(problem.startswith(line) for problem in error.value.problems), error.value.problems


def test_each_fault_is_registered_with_its_defaults_and_marked_as_a_fault() -> None:
    from pytest_lagscale.experiment.actions import ACTIONS

    specs = [ActionSpec(90, name, {}) for name in ("pause_broker", "restart_broker",
                                                   "kill_prometheus", "restart_prometheus",
                                                   "hang_replica", "kill_replica")]
    planned = plan_actions(specs, PlanFacts(partitions=8))
    assert [p.action.label() for p in planned] == [
        "pause_broker 20 s", "restart_broker", "kill_prometheus", "restart_prometheus",
        "hang_replica newest 20 s", "kill_replica newest SIGKILL"]
    assert all(getattr(ACTIONS[s.action], "fault", False) for s in specs)
    assert not getattr(ACTIONS["increase_partitions"], "fault", False)


def test_a_broker_fault_on_a_cluster_that_is_not_the_runs_own_broker_says_so() -> None:
    from pytest_lagscale.experiment.actions.pause_broker import PauseBroker

    class _External:
        kind = "external"

    context = ActionContext(None, "events", "enrich", None, None, _External(), lambda r: None,
                            lambda: 0.0)
    with pytest.raises(ConfigError, match="needs the run's own embedded broker.*external"):
        PauseBroker(1.0).run(context)


def test_a_paused_process_is_continued_when_the_run_stops_early(tmp_path) -> None:
    """hold_stopped: SIGSTOP, then SIGCONT on the stop event, not only after the duration."""
    import subprocess

    from pytest_lagscale.experiment.actions.base import hold_stopped
    from pytest_lagscale.process import ManagedProcess

    process = ManagedProcess("sleeper", ["sleep", "30"], log_path=tmp_path / "s.log").start()
    stopping = threading.Event()
    timer = threading.Timer(0.3, stopping.set)
    timer.start()
    held_s = hold_stopped(process, 20.0, stopping)
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(process.pid)], capture_output=True,
                           text=True).stdout.strip()
    process.stop(0)
    assert 0.2 <= held_s < 5.0
    assert not state.startswith("T"), state  # running (or sleeping) again, not stopped


def test_finish_scheduling_lets_the_restart_under_way_run_on_and_starts_nothing_later() -> None:
    """The load's end: the rolling restart begun before it still runs (``running``) and its
    replacement becomes ready, so it completes; the kill scheduled after the end never runs."""
    platform, events, clock = _Slots(2, ready_after=10**9), _Events(), RealClock()
    planned = plan_actions([ActionSpec(0.0, "rolling_restart", {"timeout_s": 60}),
                            ActionSpec(0.5, "kill_replica", {"replica": "oldest"})],
                           PlanFacts(partitions=8))
    start = clock.now()
    with ActionScheduler(planned, _context(platform), events, clock, start) as scheduler:
        while not platform.signals and clock.now() - start < 5:
            threading.Event().wait(0.02)
        scheduler.finish_scheduling()
        threading.Event().wait(0.8)  # past the kill's time
        assert scheduler.running
        with platform.lock:  # the replacements get ready: the restart goes on
            for replica in platform.live:
                replica.polls = 0
            platform.ready_after = 0
        while scheduler.running and clock.now() - start < 10:
            threading.Event().wait(0.02)
        assert not scheduler.running
    restart = scheduler.done[-1]
    assert (restart["action"], restart["interrupted"], restart["restarted"]) == (
        "rolling_restart", False, 2)
    assert [signum for _, signum in platform.signals] == [15, 15]  # no SIGKILL of the kill
    assert [name for name, _ in events.lines].count("action") == 1
