"""Share-group consumption (``--group-type share``): the replica as a KIP-932 share-group member.

A share group (Apache Kafka 4.3.1, KIP-932) hands records, not partitions, to its members: each
polled record is *acquired* by one member for the group's lock duration
(``share.record.lock.duration.ms``, 30 s by default) and settled by an acknowledgement. The
replica uses confluent-kafka-python 2.16.1's ``ShareConsumer`` in explicit acknowledgement mode
(:func:`share_consumer_config`), which refuses a poll while a record of the previous poll is
unacknowledged, so each poll's records are processed before the next poll, as micro-batches of
at most ``--max-batch`` records (``max.poll.records`` is a soft limit: a poll may return whole
record batches beyond it). :class:`ShareLoop` runs them: process and write each batch
(:class:`spark_consumer.pipeline.BatchProcessor`), then acknowledge per
:func:`plan_acknowledgements` (ACCEPT what was written, RELEASE what was not, REJECT what cannot
be decoded) and ``commit_sync``.
``--trigger-interval`` is the shortest time between batch starts: the next poll waits for it.

Use (the replica's wiring, :mod:`spark_consumer.replica`)::

    apply_offset_reset(opts.bootstrap, opts.group, opts.share_offset_reset)
    consumer = ShareConsumer({**share_consumer_config(opts), "error_cb": ...})
    consumer.subscribe([opts.topic])
    loop = ShareLoop(consumer, processor, sink, settings, metrics, events, clock, membership)
    code = loop.run(); loop.close()

Drain: after a stop request no batch starts; records fetched and not processed are released
(``drained``'s ``buffered_dropped``), a batch in progress writes its finished prefix and
acknowledges exactly it, then ``close()`` commits what is pending and leaves the group. Each
record's delivery count goes to the store (:class:`DeliveryCountSink`); counts above 1 are
redeliveries (``replica_redelivered_records_total``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Callable, Protocol, Sequence

import numpy as np
import pyarrow as pa

from pytest_lagscale.contract.clock import Clock

from .eventlog import EventLog
from .liveness import GroupLiveness, GroupStats
from .metrics import ReplicaMetrics
from .options import ConsumerOptions
from .pipeline import BatchProcessor
from .records import well_formed
from .store import DELIVERY_COUNT, Sink
from .trigger import TriggerSettings

SHARE_SESSION_TIMEOUT_S = 45.0
"""A share member's session timeout in seconds: the broker's ``group.share.session.timeout.ms``
default (Apache Kafka 4.3.1); the replica's liveness rule uses it."""
OFFSET_RESET_CONFIG = "share.auto.offset.reset"
"""The share group's config naming where a new group starts (Apache Kafka 4.3.1 KIP-932)."""
COMMIT_TIMEOUT_S = 30.0
"""Longest ``commit_sync`` of one batch's acknowledgements, in seconds."""
EXIT_OK, EXIT_FAILED = 0, 1


class Ack(IntEnum):
    """Acknowledgement types, with the protocol's values (Apache Kafka 4.3.1 KIP-932
    ``AcknowledgeType``; confluent-kafka-python 2.16.1 ``AcknowledgeType`` has the same)."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3

    @property
    def label(self) -> str:
        """``accept``, ``release`` or ``reject`` (the metric label)."""
        return self.name.lower()


class ShareConsumerLike(Protocol):
    """The part of confluent-kafka-python 2.16.1 ``ShareConsumer`` a replica uses."""

    def subscribe(self, topics: list[str]) -> None: ...

    def poll(self, timeout: float = -1) -> Sequence[Any]: ...

    def acknowledge(self, message: Any, ack_type: int = 1) -> None: ...

    def commit_sync(self, timeout: float = 60) -> dict[Any, Any]: ...

    def close(self) -> None: ...


def share_consumer_config(opts: ConsumerOptions) -> dict[str, Any]:
    """librdkafka settings of a share replica (without callbacks).

    Explicit acknowledgement mode; ``max.poll.records`` = ``--max-batch`` (a soft limit: the
    broker returns whole record batches); ``max.poll.interval.ms`` above two of the longest
    batches plus the trigger interval. None of the consumer-group settings librdkafka 2.16.0
    refuses for a share consumer (``auto.offset.reset``, ``group.protocol``,
    ``enable.auto.commit``, ``session.timeout.ms``, ``group.instance.id``,
    ``queued.max.messages.kbytes``, ...): where a new group starts is the group's
    ``share.auto.offset.reset`` (:func:`apply_offset_reset`).
    """
    batch_ms = math.ceil(opts.max_batch / opts.inflight) * opts.process_ms
    poll_interval_ms = 2 * batch_ms + 1000 * opts.trigger_interval_s + 60_000
    return {
        "bootstrap.servers": opts.bootstrap,
        "group.id": opts.group,
        "client.id": opts.replica_id,
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": opts.max_batch,
        "max.poll.interval.ms": int(max(300_000, poll_interval_ms)),
        "fetch.max.bytes": 4 * 1024 * 1024,
        "max.partition.fetch.bytes": 512 * 1024,
        "fetch.wait.max.ms": 100,
        "log.connection.close": False,
    }


def apply_offset_reset(bootstrap: str, group: str, value: str, timeout_s: float = 15.0) -> None:
    """Set the share group's ``share.auto.offset.reset`` to ``value`` (``earliest`` or
    ``latest``): an incremental SET of a GROUP config resource, idempotent. It decides where a
    group with no share-partition state starts, so it must precede the first member's join
    (Apache Kafka 4.3.1 KIP-932; the default, latest, skips what was produced before).

    Raises:
        KafkaException: the broker refused it or did not answer within ``timeout_s`` seconds.
    """
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(OFFSET_RESET_CONFIG, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource],
                                                  request_timeout=timeout_s).values():
        future.result(timeout=timeout_s + 5)


def plan_acknowledgements(messages: Sequence[Any], written: int | None) -> list[Ack]:
    """How to acknowledge each message of a batch, in poll order.

    Args:
        messages: the batch (messages without errors), in poll order.
        written: how many of its well-formed records (280-byte values, in poll order) were
            written to the sink; None when the batch failed (engine or sink error).

    Returns:
        One :class:`Ack` per message: REJECT for a value that cannot be decoded (it never will;
        the broker archives it), ACCEPT for a record among the first ``written`` well-formed
        ones, RELEASE for the others (another delivery, here or on another member; the broker
        archives a record after ``group.share.delivery.count.limit`` deliveries, 5 by default).
    """
    plan: list[Ack] = []
    seen = 0
    for msg in messages:
        if not well_formed(msg.value()):
            plan.append(Ack.REJECT)
            continue
        plan.append(Ack.ACCEPT if written is not None and seen < written else Ack.RELEASE)
        seen += 1
    return plan


def delivery_counts(messages: Sequence[Any]) -> np.ndarray:
    """int32 delivery count per message (1 on the first acquisition; confluent-kafka-python
    2.16.1 ``Message.delivery_count()``), 0 where the client gives none."""
    return np.fromiter(((m.delivery_count() or 0) for m in messages), dtype=np.int32,
                       count=len(messages))


class DeliveryCountSink:
    """A :class:`spark_consumer.store.Sink` that adds each row's ``delivery_count`` column
    (int32) before the inner sink writes it, so the store holds
    :data:`spark_consumer.store.SHARE_STORE_SCHEMA` rows.

    Call :meth:`expect` with a batch's messages before the batch is processed; rows are matched
    to messages by (partition, offset), unique within one share poll.

    Args:
        inner: the replica's sink (Parquet store or output topic).
    """

    def __init__(self, inner: Sink):
        self.inner = inner
        self._counts: dict[tuple[int, int], int] = {}

    def expect(self, messages: Sequence[Any]) -> None:
        """Remember the delivery counts of the batch about to be written."""
        counts = delivery_counts(messages)
        self._counts = {(m.partition(), m.offset()): int(c) for m, c in zip(messages, counts)}

    def write(self, enriched: pa.Table, written_at_ns: np.ndarray) -> object:
        """Write ``enriched`` plus ``delivery_count`` through the inner sink.

        Raises:
            KeyError: a row's (partition, offset) is not among the expected messages.
        """
        keys = zip(enriched.column("partition").to_pylist(), enriched.column("offset").to_pylist())
        counts = pa.array([self._counts[k] for k in keys], pa.int32())
        return self.inner.write(enriched.append_column(DELIVERY_COUNT, counts), written_at_ns)

    def close(self) -> None:
        """Close the inner sink."""
        self.inner.close()


class ShareMembership:
    """What the replica knows of its share-group membership (a share consumer has no
    assignment callbacks): joined at the first statistics showing the member in the group
    (``cgrp`` ``join_state`` ``steady`` or an assignment; librdkafka 2.16.0) or at the first poll
    that returned records, whichever comes first.

    Args:
        events: the replica's event log (``joined``).
        on_joined: called once, after ``joined`` was written.
    """

    def __init__(self, events: EventLog, on_joined: Callable[[], None] = lambda: None):
        self._events = events
        self._on_joined = on_joined
        self.joined = False
        self.assigned: set[int] = set()  # partitions are not visible to a share member

    def on_stats(self, stats: GroupStats | None) -> None:
        """Join on statistics showing the member in the group."""
        if stats is not None and (stats.join_state == "steady" or stats.assignment_size > 0):
            self.mark_joined("stats")

    def mark_joined(self, via: str) -> None:
        """Record joining once (``via``: ``stats`` or ``poll``)."""
        if not self.joined:
            self.joined = True
            self._events.emit("joined", partitions=[], via=via, group_type="share")
            self._on_joined()


@dataclass(frozen=True)
class AckResult:
    """What one acknowledgement commit settled.

    Attributes:
        committed: ``{Ack: records}`` whose acknowledgement was committed.
        ok: True when every acknowledgement was recorded and committed.
    """

    committed: dict[Ack, int]
    ok: bool


class ShareLoop:
    """Polls a subscribed share consumer and runs its records as acknowledged micro-batches.

    Args:
        consumer: the subscribed ``ShareConsumer`` (explicit acknowledgement mode).
        processor: runs one batch (decode, enrich, simulated write, sink write).
        sink: the processor's sink, told each batch's delivery counts.
        settings: ``--trigger-interval``, ``--max-batch`` and the poll wait.
        metrics: the replica's metrics (with :meth:`ReplicaMetrics.add_share_series`).
        events: the replica's event log.
        clock: monotonic time (a FakeClock in tests).
        membership: set joined at the first poll with records.
        should_stop: True once the replica is draining.
        fatal: the fatal client error reported so far, or None.
        is_error: True for a polled message carrying an error (dropped; the replica reports it).
        liveness: marks batches as healthy group moments.
        on_idle: called between polls (the replica's liveness check).
        log_batches: write a ``batch`` event per batch.
    """

    def __init__(self, consumer: ShareConsumerLike, processor: BatchProcessor,
                 sink: DeliveryCountSink, settings: TriggerSettings, metrics: ReplicaMetrics,
                 events: EventLog, clock: Clock, membership: ShareMembership, *,
                 should_stop: Callable[[], bool], fatal: Callable[[], str | None] = lambda: None,
                 is_error: Callable[[Any], bool] = lambda m: m.error() is not None,
                 liveness: GroupLiveness | None = None,
                 on_idle: Callable[[], object] = lambda: None,
                 log_batches: bool = False):
        self._consumer = consumer
        self._processor = processor
        self._sink = sink
        self._s = settings
        self._m = metrics
        self._events = events
        self._clock = clock
        self._membership = membership
        self._should_stop = should_stop
        self._fatal = fatal
        self._is_error = is_error
        self._liveness = liveness
        self._on_idle = on_idle
        self._log_batches = log_batches
        self._last_start: float | None = None
        self.released_unprocessed = 0
        """Records fetched and released without processing (the drain's, or after a failure)."""

    def run(self) -> int:
        """Poll and run batches until stopped (exit code 0) or failed (1: a batch's engine or
        sink failed, ``poll()`` raised, or a fatal client error; ``error`` event written)."""
        while not self._should_stop() and self._fatal() is None:
            if not self._await_trigger():
                break
            try:
                messages, poll_s, polled_at = self._poll()
            except Exception as exc:  # KafkaException, IllegalStateException: nothing acquired
                self._events.emit("error", where="poll", error=repr(exc))
                return EXIT_FAILED
            if messages and not self._run_poll(messages, poll_s, polled_at):
                return EXIT_FAILED
            self._on_idle()
        fatal = self._fatal()
        if fatal is not None:
            self._events.emit("error", where="kafka", error=fatal)
            return EXIT_FAILED
        return EXIT_OK

    def close(self) -> None:
        """``drained``, then ``close()`` (commits pending acknowledgements, leaves the group),
        then ``closed``; a failing ``close()`` is reported (``error`` where ``close``)."""
        self._events.emit("drained", pending_offsets={}, buffered_dropped=self.released_unprocessed)
        try:
            self._consumer.close()
        except Exception as exc:  # KafkaException: the acknowledgements' locks expire instead
            self._events.emit("error", where="close", error=repr(exc))
        self._events.emit("closed", left_group=True, static_member=False)

    # -- internals ---------------------------------------------------------------------------
    def _await_trigger(self) -> bool:
        """Wait until the next batch may start (``--trigger-interval`` after the previous
        start), in slices of the poll wait; False when a stop came first."""
        while not self._should_stop():
            if self._last_start is None or self._s.interval_s <= 0:
                return True
            left = self._last_start + self._s.interval_s - self._clock.now()
            if left <= 0:
                return True
            self._clock.sleep(min(left, self._s.batch_wait_s))
        return False

    def _poll(self) -> tuple[list[Any], float, float]:
        """(records without errors, seconds in ``poll()``, when it returned)."""
        t0 = self._clock.now()
        polled = self._consumer.poll(self._s.batch_wait_s)
        now = self._clock.now()
        if not polled:
            return [], now - t0, now
        self._m.batch_poll.observe(now - t0)
        messages = [m for m in polled if not self._is_error(m)]
        if messages:
            self._membership.mark_joined("poll")
            self._m.redelivered.inc(int(np.count_nonzero(delivery_counts(messages) > 1)))
        return messages, now - t0, now

    def _run_poll(self, messages: list[Any], poll_s: float, polled_at: float) -> bool:
        """Run one poll's records as batches of at most ``max_batch``; release what a stop
        leaves unprocessed. False when a batch failed."""
        n = self._s.max_batch
        for first in range(0, len(messages), n):
            if self._should_stop() or self._fatal() is not None:
                self._release(messages[first:])
                return True
            if not self._run_batch(messages[first:first + n], poll_s if first == 0 else 0.0,
                                   polled_at):
                self._release(messages[first + n:])
                return False
        return True

    def _run_batch(self, batch: list[Any], poll_s: float, polled_at: float) -> bool:
        """Process, write and acknowledge one batch; False when the engine or sink failed (its
        records are released, its malformed ones rejected)."""
        m, started = self._m, self._clock.now()
        self._last_start = started
        m.inflight.set(len(batch))
        self._sink.expect(batch)
        if self._liveness is not None:
            self._liveness.batch_started()
        outcome = None
        try:
            outcome = self._processor.process(batch, self._should_stop)
        except Exception as exc:  # engine or sink failure: release the batch, stop
            self._events.emit("error", where="batch", error=repr(exc))
        finally:
            if self._liveness is not None:
                self._liveness.batch_finished()
        plan = plan_acknowledgements(batch, None if outcome is None else outcome.records_done)
        t0 = self._clock.now()
        result = self._acknowledge(batch, plan)
        commit_s = self._clock.now() - t0
        m.batch_commit.observe(commit_s)
        m.inflight.set(0)
        if outcome is None:
            return False
        counts = {a.label: plan.count(a) for a in Ack}
        if self._log_batches:
            redelivered = int(np.count_nonzero(delivery_counts(batch) > 1))
            self._events.emit(
                "batch", messages=outcome.messages, records=outcome.records_done,
                poll_s=round(poll_s, 4), engine_s=round(outcome.engine_s, 4),
                commit_s=round(commit_s, 4), partitions=sorted({x.partition() for x in batch}),
                trigger_wait_s=round(started - polled_at, 4),
                started_monotonic_s=round(started, 6), redelivered=redelivered,
                acknowledged=counts, committed=result.ok)
        if outcome.stopped_early:
            self._events.emit("batch_cut", messages=outcome.messages,
                              messages_done=outcome.messages_done, offsets={},
                              acknowledged=counts)
        return True

    def _release(self, messages: Sequence[Any]) -> None:
        """RELEASE fetched records that will not be processed, and commit that."""
        if messages:
            self.released_unprocessed += len(messages)
            self._acknowledge(messages, [Ack.RELEASE] * len(messages))

    def _acknowledge(self, messages: Sequence[Any], plan: Sequence[Ack]) -> AckResult:
        """Acknowledge each message as planned, then ``commit_sync``; counts what was committed
        (``replica_acknowledged_records_total``, ``records_committed_total`` for ACCEPT) and
        reports failures (``commit_failures_total``, ``commit_failed``). A record whose
        acknowledgement failed is redelivered once its lock expires."""
        recorded: list[tuple[int, Ack]] = []
        refused, first_error = 0, None
        for msg, ack in zip(messages, plan):
            try:
                self._consumer.acknowledge(msg, int(ack))
                recorded.append((msg.partition(), ack))
            except Exception as exc:  # IllegalStateException: no longer in flight (lock expired)
                refused += 1
                first_error = first_error or exc
        failed: dict[int, str] = {}
        try:
            result = self._consumer.commit_sync(COMMIT_TIMEOUT_S) or {}
            failed = {tp.partition: str(err) for tp, err in result.items() if err is not None}
        except Exception as exc:  # KafkaException: nothing of this commit is known to be applied
            failed = {p: str(exc) for p in {p for p, _ in recorded}}
        committed = {a: 0 for a in Ack}
        for partition, ack in recorded:
            if partition not in failed:
                committed[ack] += 1
        for ack, n in committed.items():
            if n:
                self._m.acknowledged.labels(type=ack.label).inc(n)
        self._m.records_committed.inc(committed[Ack.ACCEPT])
        ok = not failed and not refused
        if not ok:
            self._m.commit_failures.inc()
            error = next(iter(failed.values()), None) or str(first_error)
            self._events.emit("commit_failed", mode="share", partitions=sorted(failed),
                              refused_acknowledgements=refused, error=error)
        return AckResult(committed, ok)
