"""Actions scheduled at times of a run: the registry, the planning check and the scheduler.

A profile lists them (``actions: [{at_s: 120, action: increase_partitions, to: 16}]``) and a
test may add more through ``lagscale_run(actions=...)``. Each runs on the runner's clock, is
written to ``runner.events.jsonl`` as an ``action`` event (or ``action_failed``) and is marked on
the timeline PNG. A new action is one module plus one line in :data:`ACTIONS`. An action with
the class attribute ``fault = True`` injects a failure: its event carries ``fault_s`` (how long
the failure lasted), the run lists it under ``faults`` in ``benchmark.json`` and the timeline
shades its window.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any, Iterable

from ...contract.errors import ConfigError
from .base import ActionContext, PlanFacts, ScheduledAction
from .hang_replica import HangReplica
from .increase_partitions import IncreasePartitions
from .kill_prometheus import KillPrometheus
from .kill_replica import KillReplica
from .pause_broker import PauseBroker
from .restart_broker import RestartBroker
from .restart_prometheus import RestartPrometheus
from .rolling_restart import RollingRestart
from .switch_policy import SwitchPolicy

#: Every action a profile may schedule, by name.
ACTIONS: dict[str, type] = {
    IncreasePartitions.name: IncreasePartitions,
    KillReplica.name: KillReplica,
    RollingRestart.name: RollingRestart,
    SwitchPolicy.name: SwitchPolicy,
    # faults: each injects one failure for a time (``fault_s`` in its event)
    PauseBroker.name: PauseBroker,
    RestartBroker.name: RestartBroker,
    KillPrometheus.name: KillPrometheus,
    RestartPrometheus.name: RestartPrometheus,
    HangReplica.name: HangReplica,
}


@dataclass(frozen=True)
class Scheduled:
    """One checked action and its time (seconds after the load start)."""

    at_s: float
    action: Any


def plan_actions(specs: Iterable[Any], facts: PlanFacts) -> tuple[Scheduled, ...]:
    """Check ``specs`` (:class:`~pytest_lagscale.load.profiles.ActionSpec`) against the registry.

    Raises:
        ConfigError: every unknown action and bad parameter, one line each.
    """
    out, problems = [], []
    for i, spec in enumerate(sorted(specs, key=lambda s: s.at_s)):
        where = f"actions[{i}]"
        kind = ACTIONS.get(spec.action)
        if kind is None:
            problems.append(f"{where}.action: {spec.action!r} is not an action; allowed: "
                            f"{', '.join(sorted(ACTIONS))}; use one of those")
            continue
        try:
            action = kind.from_params(spec.params, where, facts)
        except ConfigError as exc:
            problems += exc.problems
            continue
        out.append(Scheduled(spec.at_s, action))
        if isinstance(action, IncreasePartitions):  # a later increase must grow it further
            facts = PlanFacts(action.to, facts.max_partitions)
    if problems:
        raise ConfigError(problems)
    return tuple(out)


class ActionScheduler:
    """Runs scheduled actions at ``start_s + at_s`` on a clock, in a thread (an action with
    ``background = True`` in a thread of its own). :meth:`finish_scheduling` (the load ended)
    starts nothing more but lets the actions under way run on (:attr:`running`): a rolling
    restart begun during the load completes while the run settles. :meth:`close` (or leaving
    the ``with`` block) sets ``context.stopping`` and waits for the actions still running.

    Args:
        scheduled: from :func:`plan_actions`, ordered by time.
        context: the run's parts (each action gets a copy carrying the scheduler's
            ``stopping`` event and ``events``).
        events: the runner's event log (``action`` / ``action_failed`` events).
        clock: the runner's clock; ``start_s`` is the load start on it (monotonic seconds).
    """

    def __init__(self, scheduled: tuple[Scheduled, ...], context: ActionContext, events: Any,
                 clock: Any, start_s: float):
        self.scheduled, self.events = scheduled, events
        self.clock, self.start_s = clock, start_s
        self.done: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._stop, self._no_more = threading.Event(), threading.Event()
        self._busy = 0  # actions inside run_one (the scheduler's thread or their own)
        self._busy_lock = threading.Lock()
        self.context = replace(context, stopping=self._stop, events=events)
        self._background: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._loop, name="lagscale-actions", daemon=True)

    def __enter__(self) -> "ActionScheduler":
        if self.scheduled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finish_scheduling(self) -> None:
        """Start no action from now on; the ones under way run on until they end or
        :meth:`close`."""
        self._no_more.set()

    @property
    def running(self) -> bool:
        """True while an action is under way (in the scheduler's thread or its own)."""
        return self._busy > 0 or any(thread.is_alive() for thread in self._background)

    def close(self) -> None:
        """Set ``context.stopping`` and wait (at most 30 s per thread) for the actions still
        running; calling it again does nothing more."""
        self._no_more.set()
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
        for thread in self._background:
            thread.join(timeout=30)

    def _loop(self) -> None:
        for item in self.scheduled:
            while not (self._stop.is_set() or self._no_more.is_set()):
                delay = self.start_s + item.at_s - self.clock.now()
                if delay <= 0:
                    break
                self._stop.wait(min(delay, 0.05))
            if self._stop.is_set() or self._no_more.is_set():
                return
            if getattr(item.action, "background", False):
                thread = threading.Thread(target=self.run_one, args=(item,), daemon=True,
                                          name=f"lagscale-action-{item.action.name}")
                self._background.append(thread)
                thread.start()
            else:
                self.run_one(item)

    def run_one(self, item: Scheduled) -> None:
        """Run one action now and write its event."""
        base = {"action": item.action.name, "label": item.action.label(),
                "scheduled_s": item.at_s,
                "started_s": round(self.clock.now() - self.start_s, 3),
                **({"fault": True} if getattr(item.action, "fault", False) else {})}
        with self._busy_lock:
            self._busy += 1
        try:
            fields = item.action.run(self.context)
        except Exception as exc:  # recorded, and raised by the runner
            error = f"{type(exc).__name__}: {exc}"
            self.errors.append(f"{item.action.label()} at {item.at_s:g} s: {error}")
            self.events.emit("action_failed", **base, error=error)
        else:
            self.done.append({**base, **fields})
            self.events.emit("action", **base, **fields)
        finally:
            with self._busy_lock:
                self._busy -= 1


__all__ = ["ACTIONS", "ActionContext", "ActionScheduler", "PlanFacts", "Scheduled",
           "ScheduledAction", "plan_actions"]
