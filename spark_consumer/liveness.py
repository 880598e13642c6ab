"""The replica's liveness (``GET /healthz``): is its consumer-group session still working?

Rule. A joined replica is *not live* once its group session has stayed broken for longer than
its session timeout (``--session-timeout``, else the 10 s default of
:func:`spark_consumer.group.session_timeout_s`): no healthy group moment for more than that
many seconds. A restart is the cure the rule aims at: seen after a 20 s SIGSTOP of the broker,
one replica's librdkafka kept timing out its GroupCoordinator requests ("Timed out 0 in-flight,
0 retry-queued, 1 out-queue" every 60 s) for good; it held no partition, never rejoined, and
only a new process would have. Kubernetes restarts such a container through a livenessProbe on
``/healthz`` (``k8s/consumer-deployment*.yaml``; the local platform probes it the same way).

Healthy moments (each one restarts the clock):

* a librdkafka statistics callback (``statistics.interval.ms`` = :data:`STATS_INTERVAL_MS`,
  ``stats_cb``) whose ``cgrp`` object says the member holds partitions (``assignment_size`` >
  0), or is connected to its coordinator (``state`` ``"up"``) and either in the group
  (``join_state`` ``"steady"``) or answered by it since the previous callback (the ``rx``
  count of the logical broker ``GroupCoordinator`` grew: a heartbeat or join got its
  response). Field meanings, per confluentinc/librdkafka STATISTICS.md ("cgrp", "brokers"):
  ``state`` is the local group handler's state (``"up"`` once the coordinator connection is
  up), ``stateage`` the milliseconds since ``state`` last changed, the join state the handler's
  place in the join protocol (``"steady"``: in the group; documented there as ``joinstate``,
  emitted as ``join_state`` by librdkafka 2.16), ``assignment_size`` the current assignment's
  partition count, a broker's ``rx`` its total responses received. An assignment counts
  because librdkafka revokes it itself (``on_lost``, log ``SESSTMOUT``) once no heartbeat
  succeeded for the session timeout. Measured with librdkafka 2.16.0: an idle classic member of
  a group with more members than partitions is ``up``/``steady`` with nothing assigned; an idle
  KIP-848 member (``--balancer consumer``) stays ``up``/``init`` with nothing assigned, and only
  its coordinator's answers (one per heartbeat: each second on the embedded broker) show
  that it is in the group;
* an assignment callback (``on_assign``) and the join (also a KIP-848 member found by
  describing the group);
* the start and the end of every batch, and all the time in between: a batch runs on the poll
  thread, which serves no callback (statistics included) until it returns, while librdkafka's
  own threads keep heartbeating, so a slow Spark batch is never taken for a dead session.

Live regardless of the group: before the engine is ready and before the first assignment
(startup is readiness's business: ``/ready``), and while draining (stop requested).

Measured (librdkafka 2.16.0, two ``--engine arrow`` replicas, the embedded broker SIGSTOPped
20 s, session timeout 10 s): the statistics kept showing the assignment until librdkafka's own
session timeout revoked it 9.9 s after the stop (``lost``); ``liveness_failed`` came 10.0 s
later (since_healthy_s 10.0), 0.7 s before SIGCONT, and the coordinator's first answers after
it ended the failure 1.0 s later (``liveness_recovered``; the partitions came back 10 s after
SIGCONT). A broker outage of S seconds thus costs a healthy replica about S - 20 s of 503: the
Deployments' livenessProbe allows 16 s of failures (periodSeconds 2 x failureThreshold 8), so
outages up to about 35 s restart nothing, and a session that stays broken restarts its replica
within 10 + 16 (+ 2, the probe's phase) seconds. An eager rebalance can also outlast the
session timeout without a healthy moment (a member that revoked everything waits in
``wait-join`` with no answer until the last member rejoins): in
tests/integration/test_consumer_rebalance.py an 11.0 s ``range`` rebalance made one replica
answer 503 for 0.7 s, far from 16 s of failures.

Cost: one ``json.loads`` of the statistics per second on the poll thread (about 4 KB with one
broker; the callback never raises), and a few comparisons per ``/healthz``, scrape or poll.

Events (the replica's event log): ``liveness_failed`` (reason, since_healthy_s,
session_timeout_s) once per transition to not live, ``liveness_recovered`` (failed_for_s) when a
healthy moment ends it.
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
