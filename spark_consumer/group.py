"""Group membership: librdkafka settings, offset commits and rebalance callbacks.

Commit safety. Batches run in the poll thread and each one is finished (written and committed)
before the next ``consume()``; rebalance callbacks only run inside ``consume()`` and ``close()``,
so no batch is in flight when a callback runs. A commit that failed (for instance during a
rebalance) is kept as *pending* and retried with the next batch's commit, or in ``on_revoke``
for the partitions being revoked, before the callback returns. What the revoke could not commit
is dropped with the partition (``commit_abandoned``), as ``on_lost`` drops the pending offsets of
lost partitions without committing: another member owns them next and a late commit from here
could move its committed offset backwards (their records are reprocessed there:
at-least-once). A draining replica whose last commit failed serves the group's rebalance
before it closes, so the commit can be retried in the new generation
(:meth:`spark_consumer.replica.Replica` ``_settle``).

Eager protocols (range, roundrobin) revoke every partition at each rebalance; cooperative ones
(cooperative-sticky, and KIP-848 ``consumer``) pass incremental lists, so kept partitions are
never revoked and keep being fetched. The binding performs the (incremental) assign/unassign
after each callback returns.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from pytest_lagscale.contract.clock import Clock

from .eventlog import EventLog
from .metrics import ReplicaMetrics
from .options import ConsumerOptions

QUEUED_MAX_KBYTES = 4096
DEFAULT_SESSION_TIMEOUT_S = 10.0
"""``session.timeout.ms`` of classic groups without ``--session-timeout`` (seconds)."""


def session_timeout_s(opts: ConsumerOptions) -> float:
    """The member's session timeout in seconds: ``--session-timeout``, else
    :data:`DEFAULT_SESSION_TIMEOUT_S` (also for KIP-848 members, whose real timeout is the
    broker's ``group.consumer.session.timeout.ms``; the liveness rule uses this one)."""
    return float(opts.session_timeout_s or DEFAULT_SESSION_TIMEOUT_S)


def consumer_config(opts: ConsumerOptions) -> dict[str, Any]:
    """librdkafka settings of one replica.

    ``group.protocol=consumer`` gets ``group.remote.assignor`` and none of the classic-only
    settings (partition.assignment.strategy, session.timeout.ms, heartbeat.interval.ms), which
    librdkafka rejects with it. ``max.poll.interval.ms`` is raised above the longest batch.
    """
    batch_ms = math.ceil(opts.max_batch / opts.inflight) * opts.process_ms
    conf: dict[str, Any] = {
        "bootstrap.servers": opts.bootstrap,
        "group.id": opts.group,
        "client.id": opts.replica_id,
        "enable.auto.commit": opts.commit == "auto",
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "max.poll.interval.ms": int(max(300_000, 2 * batch_ms + 60_000)),
        # Bounded prefetch (RSS): about 15k events queued, 4 MB per fetch response.
        "queued.max.messages.kbytes": QUEUED_MAX_KBYTES,
        "fetch.max.bytes": 4 * 1024 * 1024,
        "max.partition.fetch.bytes": 512 * 1024,
        "receive.message.max.bytes": 5 * 1024 * 1024,
        "topic.metadata.refresh.interval.ms": 5000,
        # Measured: with the defaults kept partitions stalled 0.3-1 s after an incremental
        # revoke: librdkafka drops the prefetched messages and the fetcher of a partition whose
        # queue was full waits fetch.queue.backoff.ms (1000) before fetching again.
        "fetch.queue.backoff.ms": 50,
        "fetch.wait.max.ms": 100,
        "fetch.error.backoff.ms": 50,
        "log.connection.close": False,
    }
    conf.update(_protocol_config(opts))
    if opts.instance_id:
        conf["group.instance.id"] = opts.instance_id
    return conf


def _protocol_config(opts: ConsumerOptions) -> dict[str, Any]:
    if opts.balancer == "consumer":
        return {"group.protocol": "consumer",
                "group.remote.assignor": opts.remote_assignor or "uniform"}
    session_ms = int(session_timeout_s(opts) * 1000)
    # A member notices a rebalance at its next heartbeat: keep it at 1 s or less.
    return {"partition.assignment.strategy": opts.balancer, "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": max(100, min(1000, session_ms // 3))}


@runtime_checkable
class GroupConsumer(Protocol):
    """The part of ``confluent_kafka.Consumer`` a replica uses."""

    def subscribe(self, topics: list[str], on_assign: Callable = ..., on_revoke: Callable = ...,
                  on_lost: Callable = ...) -> None: ...

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]: ...

    def commit(self, message: Any = None, offsets: Any = None,
               asynchronous: bool = True) -> Any: ...

    def store_offsets(self, message: Any = None, offsets: Any = None) -> None: ...

    def close(self) -> None: ...


def _topic_partition(topic: str, partition: int, offset: int) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition, offset)


class OffsetCommitter:
    """Commits processed offsets (manual: synchronous commit; auto: offset store).

    Args:
        consumer: the group consumer.
        topic: the subscribed topic.
        mode: ``manual`` or ``auto``.
        metrics: the replica's metrics.
        events: the replica's event log.
        make_tp: builds a TopicPartition (injected by tests).
    """

    def __init__(self, consumer: GroupConsumer, topic: str, mode: str, metrics: ReplicaMetrics,
                 events: EventLog, make_tp: Callable[[str, int, int], Any] = _topic_partition):
        self._consumer = consumer
        self._topic = topic
        self._mode = mode
        self._metrics = metrics
        self._events = events
        self._make_tp = make_tp
        self.pending: dict[int, int] = {}
        self._pending_records = 0
        self.committed: dict[int, int] = {}

    def commit(self, offsets: dict[int, int], records: int) -> bool:
        """Commit ``offsets`` (``{partition: next offset}``) plus anything still pending.

        Returns:
            True when everything given and pending is committed (or stored).
        """
        for p, o in offsets.items():
            self.pending[p] = max(o, self.pending.get(p, -1))
        self._pending_records += records
        return self._flush(sorted(self.pending))

    def flush(self, partitions: Sequence[int]) -> bool:
        """Commit the pending offsets of ``partitions`` (called from on_revoke).

        In auto mode the stored offsets of the partitions are committed synchronously too, so
        nothing processed waits for the auto-commit interval when it changes owner. Offsets
        that still fail are dropped (``commit_abandoned`` event): the partitions leave this
        member, and their next owner reprocesses from the last committed offset.

        Returns:
            True when everything pending for ``partitions`` was committed (or stored).
        """
        wanted = [p for p in partitions if p in self.pending]
        ok = self._flush(wanted)
        if self._mode == "auto":
            stored = {p: self.committed[p] for p in partitions if p in self.committed}
            ok = self._sync_commit(stored) and ok
        abandoned = {p: self.pending[p] for p in partitions if p in self.pending}
        if abandoned:
            self.drop(list(abandoned))
            self._events.emit("commit_abandoned", mode=self._mode,
                              offsets=_str_keys(abandoned))
        return ok

    def drop(self, partitions: Sequence[int]) -> None:
        """Forget pending offsets of lost partitions (their next owner reprocesses them)."""
        for p in partitions:
            self.pending.pop(p, None)
        if not self.pending:
            self._pending_records = 0  # processed here, counted as committed by the next owner

    def _flush(self, partitions: Sequence[int]) -> bool:
        todo = {p: self.pending[p] for p in partitions}
        if not todo:
            return True
        if self._mode == "auto":
            ok = self._store(todo)
        else:
            ok = self._sync_commit(todo)
        if ok:
            for p, o in todo.items():
                self.pending.pop(p, None)
                self.committed[p] = o
                self._metrics.partition_committed_offset.labels(partition=str(p)).set(o)
            if not self.pending:
                self._metrics.records_committed.inc(self._pending_records)
                self._pending_records = 0
        return ok

    def _store(self, offsets: dict[int, int]) -> bool:
        tps = [self._make_tp(self._topic, p, o) for p, o in offsets.items()]
        try:
            self._consumer.store_offsets(offsets=tps)
        except Exception as exc:  # KafkaException; the binding's type is not importable here
            return self._failed(offsets, exc)
        return True

    def _sync_commit(self, offsets: dict[int, int]) -> bool:
        if not offsets:
            return True
        tps = [self._make_tp(self._topic, p, o) for p, o in offsets.items()]
        try:
            result = self._consumer.commit(offsets=tps, asynchronous=False) or []
        except Exception as exc:  # KafkaException, e.g. REBALANCE_IN_PROGRESS
            return self._failed(offsets, exc)
        errors = [tp for tp in result if getattr(tp, "error", None)]
        if errors:
            return self._failed(offsets, errors[0].error)
        return True

    def _failed(self, offsets: dict[int, int], error: object) -> bool:
        self._metrics.commit_failures.inc()
        self._events.emit("commit_failed", mode=self._mode, offsets=_str_keys(offsets),
                          error=str(error))
        return False


def _str_keys(offsets: dict[int, int]) -> dict[str, int]:
    return {str(p): o for p, o in sorted(offsets.items())}


class RebalanceHandler:
    """The on_assign / on_revoke / on_lost callbacks: bookkeeping, commits, timing.

    A rebalance episode starts at the first revoke, lost or assign callback after the member
    joined (the first assignment is the join, not a rebalance) and ends at the next assign;
    ``rebalances_total`` counts episodes and ``rebalance_duration_seconds`` observes their
    length. Assign lists are added to the assignment, revoke/lost lists removed, which is right
    for eager (full lists, revoke first) and cooperative (incremental lists) protocols alike.
    Set :attr:`closing` before ``close()``: its final revoke is then not counted as a rebalance.
    Listeners added with :meth:`add_removed_listener` hear of every revoked or lost partition
    first, before any commit (the micro-batch trigger drops those partitions' buffered records).

    Args:
        committer: commits pending offsets of revoked partitions.
        metrics: the replica's metrics.
        events: the replica's event log.
        clock: monotonic time for episode durations.
        on_joined: called once, after the first assignment.
    """

    def __init__(self, committer: OffsetCommitter, metrics: ReplicaMetrics, events: EventLog,
                 clock: Clock, on_joined: Callable[[], None] = lambda: None):
        self.committer = committer
        self._metrics = metrics
        self._events = events
        self._clock = clock
        self._on_joined = on_joined
        self.assigned: set[int] = set()
        self.joined = False
        self.closing = False
        self._episode_start: float | None = None
        self._removed_listeners: list[Callable[[list[int]], None]] = []

    def add_removed_listener(self, listener: Callable[[list[int]], None]) -> None:
        """Call ``listener(partitions)`` (sorted partition numbers) on each revoke or lost
        callback, inside it and before its commits."""
        self._removed_listeners.append(listener)

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        parts = sorted(tp.partition for tp in partitions)
        self.assigned.update(parts)
        self._publish(parts, 1)
        self._events.emit("assigned", partitions=parts, assignment=sorted(self.assigned))
        if not self.joined:
            self.joined = True
            self._events.emit("joined", partitions=sorted(self.assigned))
            self._on_joined()
            return
        start = self._begin()
        duration = self._clock.now() - start
        self._episode_start = None
        self._metrics.rebalance_duration.observe(duration)
        self._events.emit("rebalance_done", duration_s=round(duration, 6),
                          assignment=sorted(self.assigned))

    def mark_joined(self, via: str) -> None:
        """Record joining without an assignment callback (KIP-848 members given nothing)."""
        if not self.joined:
            self.joined = True
            self._events.emit("joined", partitions=[], via=via)
            self._on_joined()

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        parts = sorted(tp.partition for tp in partitions)
        self._begin()
        self._events.emit("revoked", partitions=parts)
        self._removed(parts)
        self.committer.flush(parts)
        self.assigned.difference_update(parts)
        self._publish(parts, 0)

    def on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        parts = sorted(tp.partition for tp in partitions)
        self._begin()
        self._events.emit("lost", partitions=parts)
        self._removed(parts)
        self.committer.drop(parts)
        self.assigned.difference_update(parts)
        self._publish(parts, 0)

    def _removed(self, parts: list[int]) -> None:
        for listener in self._removed_listeners:
            listener(parts)

    def _begin(self) -> float:
        if self._episode_start is None:
            self._episode_start = self._clock.now()
            if self.joined and not self.closing:
                self._metrics.rebalances.inc()
        return self._episode_start

    def _publish(self, parts: list[int], value: int) -> None:
        for p in parts:
            self._metrics.partition_assigned.labels(partition=str(p)).set(value)
        self._metrics.assigned_partitions.set(len(self.assigned))


class MembershipProbe:
    """Tells when a KIP-848 member that was assigned nothing has joined.

    librdkafka calls no assign callback for a ``group.protocol=consumer`` member whose
    assignment is empty (classic groups get one with an empty list), so such a member would
    never become ready. The probe asks the group coordinator (describe_consumer_groups) at most
    once per ``interval_s`` until the member id shows up.

    Args:
        member_id: returns this consumer's member id (``Consumer.memberid``).
        describe: returns the member ids of the group (an AdminClient call).
        clock: monotonic time.
        interval_s: minimum seconds between two describe calls.
    """

    def __init__(self, member_id: Callable[[], str | None], describe: Callable[[], set[str]],
                 clock: Clock, interval_s: float = 1.0):
        self._member_id = member_id
        self._describe = describe
        self._clock = clock
        self._interval_s = interval_s
        self._next = clock.now() + interval_s
        self._found = False

    def joined(self) -> bool:
        """True once the coordinator lists this member (False between and before checks)."""
        now = self._clock.now()
        if self._found or now < self._next:
            return self._found
        self._next = now + self._interval_s
        me = self._member_id()
        try:
            self._found = bool(me) and me in self._describe()
        except Exception:  # the coordinator may not answer yet; ask again next interval
            return False
        return self._found


def describe_members(bootstrap: str, group: str, timeout_s: float = 2.0) -> Callable[[], set[str]]:
    """A ``describe`` function for :class:`MembershipProbe` backed by an AdminClient."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def describe() -> set[str]:
        desc = admin.describe_consumer_groups([group], request_timeout=timeout_s)[group]
        return {m.member_id for m in desc.result(timeout=timeout_s).members}

    return describe
