"""The group observer: a consumer group watched from the broker's side, whatever the consumer.

Every ``interval_s`` (0.5-1 s) a thread describes the group (DescribeConsumerGroups through
:meth:`pytest_lagscale.kafka.admin.KafkaAdmin.describe_group`: state, protocol, each member's
id, client id, host and assignment of the topic) and writes what changed to an event log
(``group.events.jsonl`` in a run directory): a ``group_snapshot`` when the state or the
assignment changed, and the membership and rebalance events of
:class:`pytest_lagscale.analyze.group_events.GroupHistory` (joins, join times, leaves,
rebalances with their duration and the partitions revoked, assigned and moved). With
``committed=True`` each look also reads the group's committed offsets (``committed_offsets``
when they moved, ``member_first_commit`` for each newly assigned member's first progress). A
read that fails is a ``group_read_failed`` event, never a held value.

Example:
    >>> with GroupObserver(admin, "enrich", "events", path) as observer:  # doctest: +SKIP
    ...     run_the_load()
    >>> observer.history.events  # doctest: +SKIP
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from ..analyze.group_events import GroupHistory, GroupSnapshot, MemberView
from ..contract.errors import ConfigError
from ..contract.eventlog import EventLog
from ..lifecycle import StartStop

MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 10.0


class GroupObserver(StartStop):
    """Describe ``group`` every ``interval_s`` seconds on a thread of its own.

    Args:
        admin: a :class:`~pytest_lagscale.kafka.admin.KafkaAdmin` (its ``describe_group``), or
            anything with that method.
        group: the consumer group's id.
        topic: the topic whose partitions the assignments count.
        events_path: the event log (source ``group``), or None for none.
        interval_s: seconds between looks, 0.1..10.
        clock: wall time in seconds (``time.time`` by default): the snapshots' ``at_s``.
        committed: also read the committed offsets of ``topic`` at each look.

    Raises:
        ConfigError: ``interval_s`` out of range.
    """

    def __init__(self, admin: Any, group: str, topic: str, events_path: str | Path | None,
                 *, interval_s: float = 0.5, clock: Callable[[], float] = time.time,
                 committed: bool = False):
        if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
            raise ConfigError(f"interval_s: {interval_s!r} is out of range; allowed: seconds "
                              f"in [{MIN_INTERVAL_S:g}, {MAX_INTERVAL_S:g}]")
        self.admin, self.group, self.topic = admin, group, topic
        self.interval_s, self.clock = interval_s, clock
        self.events = EventLog(events_path, source="group")
        self.history = GroupHistory()
        self.reads = self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_key: tuple[Any, ...] | None = None
        self.committed = committed
        #: the newest snapshot read, None before the first or after a failed describe
        self.last: GroupSnapshot | None = None

    def members_with_partitions(self) -> int | None:
        """Members holding partitions of ``topic`` at the newest look (None: unknown)."""
        last = self.last
        return None if last is None else sum(1 for m in last.members if m.partitions)

    def start(self) -> "GroupObserver":
        """Start looking (the first look is made on the thread at once); returns self."""
        self._thread = threading.Thread(target=self._loop, name=f"group-observer-{self.group}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, wait_s: float | None = None) -> None:
        """Stop looking (idempotent); the event log is closed.

        Args:
            wait_s: seconds to wait for a describe in flight (default: the admin's
                ``timeout_s`` plus two intervals, after which the caller may close the admin).
                A run that ends because its broker died waits less and leaves a call still
                in flight to the admin's own close (which then keeps its clients).
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=wait_s if wait_s is not None else
                              getattr(self.admin, "timeout_s", 10.0) + 2 * self.interval_s)
        self.events.close()

    def look(self) -> GroupSnapshot | None:
        """One look: describe, record, feed the history; None when the describe failed."""
        at_s = self.clock()
        try:
            state = self.admin.describe_group(self.group, self.topic)
        except Exception as exc:  # any failure is recorded, never a held value
            self.failures += 1
            self.last = None
            self.events.emit("group_read_failed", at_s=at_s, group=self.group,
                             error=f"{type(exc).__name__}: {exc}"[:300])
            return None
        self.reads += 1
        snap = GroupSnapshot(at_s, str(state.state).upper(), tuple(
            MemberView(m.member_id, m.client_id, getattr(m, "host", ""), tuple(m.partitions))
            for m in state.members), protocol=state.protocol)
        key = (snap.state, tuple(sorted(snap.assignment().items())))
        if key != self._last_key:
            self._last_key = key
            self.events.emit("group_snapshot", at_s=at_s, group=self.group, state=snap.state,
                             protocol=snap.protocol, assignor=state.assignor,
                             members=[{"member_id": m.member_id, "client_id": m.client_id,
                                       "host": m.host, "partitions": list(m.partitions)}
                                      for m in snap.members])
        events = self.history.observe(snap)
        self.last = snap
        if self.committed:
            try:
                events += self.history.observe_commits(self.clock(), self.admin.committed_offsets(
                    self.group, self.topic))
            except Exception as exc:  # recorded, never a held value
                self.failures += 1
                self.events.emit("group_read_failed", at_s=self.clock(), group=self.group,
                                 what="committed_offsets",
                                 error=f"{type(exc).__name__}: {exc}"[:300])
        for event in events:
            fields = {k: v for k, v in event.items() if k != "event"}
            self.events.emit(event["event"], group=self.group, **fields)
        return snap

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.look()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))


__all__ = ["GroupObserver", "MAX_INTERVAL_S", "MIN_INTERVAL_S"]
