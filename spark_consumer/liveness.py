"""The replica's liveness (``GET /healthz``): is its consumer-group session still working?

Rule. A joined replica is *not live* once its group session has stayed broken for longer than
its session timeout (``--session-timeout``, else the 10 s default of
:func:`spark_consumer.group.session_timeout_s`): no healthy group moment for more than that
many seconds. A restart is the cure: after a 20 s SIGSTOP of the broker one replica's
librdkafka kept timing out its GroupCoordinator requests for good and never rejoined.
Kubernetes restarts such a container through a livenessProbe on ``/healthz``
(``k8s/consumer-deployment*.yaml``; the local platform probes it the same way).

Healthy moments (each one restarts the clock):

* a librdkafka statistics callback (every :data:`STATS_INTERVAL_MS`) whose ``cgrp`` says the
  member holds partitions, or is connected to its coordinator (``state`` ``"up"``) and either in
  the group (``join_state`` ``"steady"``) or answered by it since the previous callback (the
  ``GroupCoordinator`` broker's ``rx`` grew); field meanings per confluentinc/librdkafka
  STATISTICS.md ("cgrp", "brokers");
* an assignment callback (``on_assign``) and the join;
* the start and the end of every batch, and all the time in between (a batch runs on the poll
  thread, which serves no callback until it returns).

Live regardless of the group: before the engine is ready and before the first assignment
(startup is readiness's business: ``/ready``), and while draining (stop requested).

Events (the replica's event log): ``liveness_failed`` (reason, since_healthy_s,
session_timeout_s) once per transition to not live, ``liveness_recovered`` (failed_for_s) when a
healthy moment ends it. What librdkafka 2.16.0 showed, the measured outage budget and the cost:
docs/experiments.md, "Notes moved from module docstrings", "spark_consumer/liveness.py".
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass
from typing import Any

from pytest_lagscale.contract.clock import Clock

from .eventlog import EventLog

STATS_INTERVAL_MS = 1000
"""``statistics.interval.ms`` of every replica: one statistics callback (one parse) a second."""


COORDINATOR = "GroupCoordinator"
"""The name of librdkafka's logical broker handle of the group coordinator in ``brokers``."""


@dataclass(frozen=True)
class GroupStats:
    """The group part of one librdkafka statistics callback (see the module docstring):
    ``cgrp``'s fields and ``coordinator_rx``, the responses the logical ``GroupCoordinator``
    broker received so far (None when it has no entry)."""

    state: str
    join_state: str
    stateage_s: float
    assignment_size: int
    coordinator_rx: int | None = None

    def healthy(self, previous_rx: int | None) -> bool:
        """The member holds partitions, or its coordinator is connected and the member is in
        the group or was answered since ``previous_rx`` (the previous callback's count)."""
        if self.assignment_size > 0:
            return True
        answered = (self.coordinator_rx is not None and previous_rx is not None
                    and self.coordinator_rx > previous_rx)
        return self.state == "up" and (self.join_state == "steady" or answered)

    def describe(self) -> str:
        return (f"cgrp state {self.state!r} for {self.stateage_s:.1f} s, join_state "
                f"{self.join_state!r}, {self.assignment_size} partitions assigned")


def parse_group_stats(text: str) -> GroupStats | None:
    """The group part of a statistics JSON string; None when there is no ``cgrp`` or the JSON
    is malformed."""
    try:
        doc = json.loads(text)
        cgrp = doc.get("cgrp")
        if not isinstance(cgrp, dict):
            return None
        coordinator = (doc.get("brokers") or {}).get(COORDINATOR)
        rx = coordinator.get("rx") if isinstance(coordinator, dict) else None
        return GroupStats(state=str(cgrp.get("state", "")),
                          join_state=str(cgrp.get("join_state", cgrp.get("joinstate", ""))),
                          stateage_s=float(cgrp.get("stateage", 0)) / 1000.0,
                          assignment_size=int(cgrp.get("assignment_size", 0)),
                          coordinator_rx=None if rx is None else int(rx))
    except (ValueError, TypeError, AttributeError):
        return None


class GroupLiveness:
    """Healthy group moments in, ``(live, reason)`` out (the rule in the module docstring).

    Thread use: :meth:`on_stats`, :meth:`healthy` and the batch marks come from the poll thread;
    :meth:`check` from the HTTP thread (``/healthz``), the scrape (``replica_live``) and the poll
    thread. The transition bookkeeping (events) is under a lock; the rest is single assignments.

    Args:
        session_timeout_s: how long the group may go without a healthy moment.
        clock: monotonic time.
        events: the replica's event log (``liveness_failed``, ``liveness_recovered``), or None.
        name: the replica id, first word of every reason.
    """

    def __init__(self, session_timeout_s: float, clock: Clock, events: EventLog | None = None,
                 name: str = "replica"):
        self.session_timeout_s = float(session_timeout_s)
        self._clock = clock
        self._events = events
        self._name = name
        self._last_healthy_s = clock.now()
        self._last_via = "start"
        self._in_batch = False
        self.last_stats: GroupStats | None = None
        self._last_stats_s: float | None = None
        self._failed_at_s: float | None = None
        self._lock = threading.Lock()

    # -- healthy moments (poll thread) -------------------------------------------------------
    def healthy(self, via: str) -> None:
        """Record a healthy group moment now (``via``: what showed it)."""
        self._last_healthy_s = self._clock.now()
        self._last_via = via

    def on_stats(self, text: str) -> None:
        """librdkafka's ``stats_cb``: parse the ``cgrp`` object once; never raises."""
        stats = parse_group_stats(text)
        if stats is None:
            return
        previous = self.last_stats
        self.last_stats, self._last_stats_s = stats, self._clock.now()
        if stats.healthy(None if previous is None else previous.coordinator_rx):
            self.healthy("stats")

    def batch_started(self) -> None:
        self.healthy("batch_start")
        self._in_batch = True

    def batch_finished(self) -> None:
        self._in_batch = False
        self.healthy("batch_end")

    # -- the verdict -------------------------------------------------------------------------
    def check(self, exempt: str | None = None) -> tuple[bool, str]:
        """``(live, one-line reason)``; ``exempt`` names a phase that is live regardless of the
        group (``engine starting``, ``waiting for the first assignment``, ``draining``)."""
        now = self._clock.now()
        if exempt is not None:  # no transition either: a drain after a failure is no recovery
            return True, f"{self._name}: live ({exempt})"
        if self._in_batch:
            live, reason = True, f"{self._name}: live (processing a batch)"
        else:
            quiet_s = now - self._last_healthy_s
            live = quiet_s <= self.session_timeout_s
            reason = self._reason(live, quiet_s, now)
        self._transition(live, reason, now)
        return live, reason

    def _reason(self, live: bool, quiet_s: float, now: float) -> str:
        if self.last_stats is None or self._last_stats_s is None:
            seen = "no statistics yet"
        else:
            seen = (f"statistics {now - self._last_stats_s:.1f} s ago: "
                    f"{self.last_stats.describe()}")
        if live:
            return (f"{self._name}: live: group healthy {quiet_s:.1f} s ago "
                    f"({self._last_via}); {seen}")
        return (f"{self._name}: not live: group session broken, no healthy group moment for "
                f"{quiet_s:.1f} s (> session timeout {self.session_timeout_s:g} s); {seen}")

    def _transition(self, live: bool, reason: str, now: float) -> None:
        with self._lock:
            if not live and self._failed_at_s is None:
                self._failed_at_s = now
                self._emit("liveness_failed", reason=reason,
                           since_healthy_s=round(now - self._last_healthy_s, 3),
                           session_timeout_s=self.session_timeout_s,
                           cgrp=None if self.last_stats is None else asdict(self.last_stats))
            elif live and self._failed_at_s is not None:
                failed_for = now - self._failed_at_s
                self._failed_at_s = None
                self._emit("liveness_recovered", failed_for_s=round(failed_for, 3),
                           via=self._last_via)

    def _emit(self, event: str, **fields: Any) -> None:
        if self._events is not None:
            self._events.emit(event, **fields)
