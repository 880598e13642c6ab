"""Topic, offset, lag and group-assignment helpers over confluent-kafka's AdminClient.

:class:`KafkaAdmin` holds one AdminClient (and, per consumer group whose committed offsets it
reads, one Consumer that never joins the group); the module-level functions are one-shot
shortcuts. Its methods may be called from several threads at once (the autoscaler, the lag
exporter's scrapes); :meth:`KafkaAdmin.close` destroys the clients on the calling thread once the
calls in flight have returned, so no client is used after it is destroyed, or destroyed by the
garbage collector on a thread of librdkafka's own, which aborts the process
(confluentinc/confluent-kafka-python#2129).
:meth:`KafkaAdmin.group_offsets` returns ``{partition: (committed_offset, log_end_offset)}``,
read the way KEDA's kafka scaler reads it (committed offsets of the group, then the latest
offset of each partition); the autoscaler reads it through
:class:`pytest_lagscale.sources.broker.BrokerLagSource`.

Source: confluent-kafka-python ``AdminClient`` (create_topics, list_offsets,
describe_consumer_groups); kedacore/keda v2.21.0 pkg/scalers/kafka_scaler.go (getConsumerOffsets,
getLagForPartition).
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
                                  NewTopic, OffsetSpec, ResourceType)

from ..contract.errors import BrokerError
from .client_log import librdkafka_config, serve_logs

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "events"
DEFAULT_PARTITIONS = 24
OFFSET_INVALID = -1001  # librdkafka's "no committed offset"
#: Errors that clear by themselves right after topic changes (leader election of new
#: partitions, coordinator loading) even where librdkafka does not flag them retriable.
_TRANSIENT_CODES = frozenset({
    KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
    # retriable in Apache Kafka (clients/.../common/protocol/Errors.java: both exceptions
    # extend RetriableException) but not flagged so by librdkafka: right after partitions are
    # added, a ListOffsets can reach a broker that has not yet seen the new leader epoch
    KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH,
})
#: ``{partition: (committed_offset, log_end_offset)}``; committed -1 = none committed,
#: log_end None = missing from the latest-offset response.
GroupOffsets = dict[int, tuple[int, int | None]]
_T = TypeVar("_T")

#: The KafkaAdmins whose :meth:`~KafkaAdmin.close` kept its clients (a call was still in flight):
#: held here, so the garbage collector never destroys those clients (see :func:`clients_kept`).
_KEPT: list["KafkaAdmin"] = []


def clients_kept() -> int:
    """How many KafkaAdmins of this process kept their clients at close because a call was
    still in flight (a broker that died or stopped answering). Their clients are never
    destroyed: rd_kafka_destroy with a request pending can wait forever
    (confluentinc/librdkafka#1640), so a process holding any ends without destroying them
    (:func:`pytest_lagscale.cli.main` exits with ``os._exit`` once its output is flushed)."""
    return len(_KEPT)


def _in_call(method: Callable[..., _T]) -> Callable[..., _T]:
    """Run a :class:`KafkaAdmin` method as a call in flight, which :meth:`KafkaAdmin.close`
    waits for; after close it raises BrokerError instead of touching a destroyed client."""

    @functools.wraps(method)
    def call(self: "KafkaAdmin", *args: Any, **kwargs: Any) -> _T:
        with self._calls:
            if self._closed:
                raise BrokerError(f"kafka admin of {self.bootstrap_servers}: closed; "
                                  f"{method.__name__} needs a new KafkaAdmin")
            self._in_flight += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            with self._calls:
                self._in_flight -= 1
                self._calls.notify_all()

    return call


@dataclass(frozen=True)
class MemberAssignment:
    """One member of a consumer group and the partitions it owns right now.

    Attributes:
        member_id: broker-assigned member id.
        client_id: the client's ``client.id``.
        group_instance_id: static membership id, or None.
        partitions: sorted partition numbers of the requested topic it owns.
        host: the client's host as the broker saw it (``/127.0.0.1``).
    """

    member_id: str
    client_id: str
    group_instance_id: str | None
    partitions: tuple[int, ...]
    host: str = ""


@dataclass(frozen=True)
class GroupState:
    """A consumer group's state and assignment.

    Attributes:
        state: ``STABLE``, ``PREPARING_REBALANCE``, ``COMPLETING_REBALANCE``, ``EMPTY``, ...
        protocol: ``classic`` or ``consumer`` (KIP-848).
        assignor: the partition assignor in use (``range``, ``cooperative-sticky``, ``uniform``).
        members: one entry per member.
    """

    state: str
    protocol: str
    assignor: str
    members: tuple[MemberAssignment, ...]


class KafkaAdmin:
    """Administrative operations against one cluster.

    Args:
        bootstrap_servers: ``host:port[,...]``.
        client_config: extra librdkafka settings (SASL/TLS for external clusters).
        timeout_s: per-request timeout in seconds.

    Every method raises :class:`BrokerError` naming the topic or group when the broker
    rejects the request or does not answer within ``timeout_s``, or after :meth:`close`.
    A context manager: leaving the block closes it.
    """

    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, str] | None = None,
                 timeout_s: float = 30.0):
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self._client_config = {"bootstrap.servers": bootstrap_servers,
                               **dict(client_config or {}), **librdkafka_config()}
        self._client = AdminClient(self._client_config)
        self._readers: dict[str, Consumer] = {}
        self._calls = threading.Condition()
        self._in_flight = 0
        self._closed = False

    def __enter__(self) -> "KafkaAdmin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout_s: float | None = None) -> None:
        """Destroy the clients on this thread once no call is in flight; idempotent.

        Calls started afterwards raise BrokerError. A call still in flight after ``timeout_s``
        seconds (default: twice the request timeout, the longest a retried call takes) keeps
        the clients, with a warning, rather than destroying them under that call; they are
        never destroyed (:func:`clients_kept`).
        """
        with self._calls:
            if self._closed:
                return
            self._closed = True
            idle = self._calls.wait_for(lambda: self._in_flight == 0,
                                        2 * self.timeout_s if timeout_s is None else timeout_s)
        if not idle:
            log.warning("kafka admin of %s: %d call(s) still in flight; its clients are not "
                        "destroyed now", self.bootstrap_servers, self._in_flight)
            _KEPT.append(self)
            return
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()
        self._client.__exit__(None, None, None)  # rd_kafka_destroy, here and now

    # -- topics --------------------------------------------------------------------------
    @_in_call
    def create_topic(self, topic: str = DEFAULT_TOPIC, partitions: int = DEFAULT_PARTITIONS,
                     *, config: Mapping[str, str] | None = None, exist_ok: bool = False) -> None:
        """Create ``topic`` with ``partitions`` partitions (replication factor 1).

        Raises:
            BrokerError: the topic exists (unless ``exist_ok``) or creation failed.
        """
        if partitions < 1:
            raise BrokerError(f"partitions: {partitions!r} is below 1; use >= 1")
        new = NewTopic(topic, num_partitions=partitions, replication_factor=1,
                       config=dict(config or {}))
        future = self._client.create_topics([new], operation_timeout=self.timeout_s)[topic]
        try:
            future.result(timeout=self.timeout_s)
        except KafkaException as exc:
            if exist_ok and exc.args[0].name() == "TOPIC_ALREADY_EXISTS":
                return
            raise BrokerError(f"topic {topic!r}: create with {partitions} partitions failed: "
                              f"{exc.args[0].str()}") from exc
        self._wait_partitions(topic, partitions)

    @_in_call
    def increase_partitions(self, topic: str, new_total: int) -> None:
        """Grow ``topic`` to ``new_total`` partitions (a new total, not an increment).

        Raises:
            BrokerError: ``new_total`` is not above the current count, or the broker refused.
        """
        current = self.partition_count(topic)
        if new_total <= current:
            raise BrokerError(f"topic {topic!r}: new partition total {new_total!r} must exceed "
                              f"the current {current}; partitions can only be increased")
        future = self._client.create_partitions([NewPartitions(topic, new_total)],
                                                operation_timeout=self.timeout_s)[topic]
        try:
            future.result(timeout=self.timeout_s)
        except KafkaException as exc:
            raise BrokerError(f"topic {topic!r}: growing to {new_total} partitions failed: "
                              f"{exc.args[0].str()}") from exc
        self._wait_partitions(topic, new_total)

    @_in_call
    def partition_count(self, topic: str) -> int:
        """Number of partitions of ``topic``; raises BrokerError if it does not exist."""
        md = self._client.list_topics(topic=topic, timeout=self.timeout_s).topics.get(topic)
        if md is None or md.error is not None:
            why = md.error.str() if md is not None and md.error else "not found"
            raise BrokerError(f"topic {topic!r}: {why}; create it first")
        return len(md.partitions)

    @_in_call
    def delete_topic(self, topic: str) -> None:
        """Delete ``topic`` (used by tests to reuse a broker)."""
        try:
            self._client.delete_topics([topic], operation_timeout=self.timeout_s)[topic].result()
        except KafkaException as exc:
            raise BrokerError(f"topic {topic!r}: delete failed: {exc.args[0].str()}") from exc

    # -- offsets -------------------------------------------------------------------------
    @_in_call
    def end_offsets(self, topic: str, which: Literal["latest", "earliest"] = "latest"
                    ) -> dict[int, int]:
        """Log-end (``latest``) or log-start (``earliest``) offset per partition of ``topic``."""
        spec = OffsetSpec.latest() if which == "latest" else OffsetSpec.earliest()
        request = {TopicPartition(topic, p): spec for p in range(self.partition_count(topic))}

        def attempt() -> dict[int, int]:
            futures = self._client.list_offsets(request, request_timeout=self.timeout_s)
            return {tp.partition: f.result().offset for tp, f in futures.items()}

        return self._retry_retriable(attempt, f"topic {topic!r}: list_offsets({which})")

    @_in_call
    def committed_offsets(self, group: str, topic: str) -> dict[int, int]:
        """Committed offset of ``group`` per partition of ``topic``; -1 where none committed.

        Read by a Consumer of ``group`` that never joins it (``Consumer.committed``), not by
        ``AdminClient.list_consumer_group_offsets``: librdkafka's admin handle has no consumer
        group, and an OffsetFetch answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE makes
        it ask that missing group to find the coordinator again: a NULL dereference (address
        0x58) that kills the whole process from librdkafka's ``rdk:main`` thread, with no
        Python stack (confluentinc/librdkafka#5040, open in librdkafka 2.16). A broker starved
        of CPU answers so, as when the local control plane starts on 2 cores. A Consumer's
        handle has the group, and the same answer is a retriable error.
        """
        parts = [TopicPartition(topic, p) for p in range(self.partition_count(topic))]
        reader = self._offset_reader(group)
        result = self._retry_retriable(lambda: reader.committed(parts, timeout=self.timeout_s),
                                       f"group {group!r}: committed offsets of {topic!r}",
                                       reader)
        out: dict[int, int] = {}
        for tp in result:
            if tp.error is not None:
                raise BrokerError(f"group {group!r}: committed offset of {topic}[{tp.partition}] "
                                  f"failed: {tp.error.str()}")
            out[tp.partition] = -1 if tp.offset < 0 else tp.offset
        return out

    def group_offsets(self, group: str, topic: str) -> GroupOffsets:
        """``{partition: (committed, log_end)}`` as KEDA's kafka scaler reads them.

        Committed offsets are read first, then log-end offsets, so a lag computed from one
        snapshot is never negative because of read order. Committed -1 means none committed.
        """
        committed = self.committed_offsets(group, topic)
        latest = self.end_offsets(topic, "latest")
        return {p: (committed.get(p, -1), latest.get(p)) for p in sorted(set(committed) | set(latest))}

    def partition_lag(self, group: str, topic: str,
                      offset_reset_policy: Literal["latest", "earliest"] = "latest"
                      ) -> dict[int, int]:
        """Per-partition lag of ``group`` exactly as KEDA's kafka scaler defines it.

        ``lag = log_end - committed``; with nothing committed (-1): ``latest`` policy counts 1,
        ``earliest`` counts the whole log-end offset; a partition missing from the latest
        offsets counts 0. Negative values are kept (KEDA does not clamp per partition).

        Source: kedacore/keda pkg/scalers/kafka_scaler.go getLagForPartition v2.20.2;
        (no scaleToZeroOnInvalidOffset, no excludePersistentLag: those live in
        control.keda.KafkaLagTrigger).
        """
        if offset_reset_policy not in ("latest", "earliest"):
            raise BrokerError(f"offsetResetPolicy: {offset_reset_policy!r} is not one of "
                              "'latest', 'earliest'")
        out = {}
        for p, (committed, log_end) in self.group_offsets(group, topic).items():
            if log_end is None:
                out[p] = 0
            elif committed == -1:
                out[p] = 1 if offset_reset_policy == "latest" else log_end
            else:
                out[p] = log_end - committed
        return out

    # -- groups --------------------------------------------------------------------------
    @_in_call
    def describe_group(self, group: str, topic: str | None = None) -> GroupState:
        """State, protocol and per-member assignment of ``group`` (optionally one topic's)."""
        desc = self._retry_retriable(
            lambda: self._client.describe_consumer_groups(
                [group], request_timeout=self.timeout_s)[group].result(timeout=self.timeout_s),
            f"group {group!r}: describe")
        members = []
        for m in desc.members:
            tps = m.assignment.topic_partitions if m.assignment else []
            parts = tuple(sorted(tp.partition for tp in tps if topic is None or tp.topic == topic))
            members.append(MemberAssignment(m.member_id, m.client_id, m.group_instance_id, parts,
                                            m.host or ""))
        protocol = getattr(getattr(desc, "type", None), "name", "CLASSIC").lower()
        state = getattr(desc.state, "name", str(desc.state))
        return GroupState(state, protocol, desc.partition_assignor or "",
                          tuple(sorted(members, key=lambda m: m.client_id)))

    @_in_call
    def group_config(self, group: str) -> dict[str, str]:
        """The group-level configs of ``group`` (``share.auto.offset.reset``,
        ``share.record.lock.duration.ms``, ...) with the broker's defaults for those not set;
        a group the broker does not know yet has the defaults too.

        Source: apache/kafka 4.3.1 ``GroupConfig`` (KIP-848, KIP-932), DescribeConfigs on a
        ``GROUP`` resource.

        Raises:
            BrokerError: the broker refused or did not answer.
        """
        resource = ConfigResource(ResourceType.GROUP, group)
        entries = self._retry_retriable(
            lambda: self._client.describe_configs([resource], request_timeout=self.timeout_s)[resource]
            .result(timeout=self.timeout_s), f"group {group!r}: describe configs")
        return {name: entry.value for name, entry in entries.items()}

    @_in_call
    def alter_group_config(self, group: str, settings: Mapping[str, str]) -> None:
        """Set group-level configs of ``group`` (IncrementalAlterConfigs, SET each key); the
        group need not exist yet. A share group reads ``share.auto.offset.reset`` when a
        share-partition is first initialized, so set it before the first member joins.

        Raises:
            BrokerError: the broker refused a key or value (its message names it).
        """
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()])
        try:
            self._client.incremental_alter_configs([resource], request_timeout=self.timeout_s)[resource] \
                .result(timeout=self.timeout_s)
        except KafkaException as exc:
            raise BrokerError(f"group {group!r}: setting {dict(settings)} failed: {exc.args[0].str()}") from exc

    def group_assignment(self, group: str, topic: str | None = None) -> dict[str, tuple[int, ...]]:
        """``{member_id: partitions}`` of ``group`` right now."""
        return {m.member_id: m.partitions for m in self.describe_group(group, topic).members}

    # -- internals -----------------------------------------------------------------------
    def _offset_reader(self, group: str) -> Consumer:
        """The Consumer that reads ``group``'s committed offsets (created on first use; it
        never subscribes, so it never joins the group, and never commits)."""
        with self._calls:
            reader = self._readers.get(group)
            if reader is None:
                reader = self._readers[group] = Consumer({
                    **self._client_config, "group.id": group, "enable.auto.commit": False,
                    # the committed offsets as an admin OffsetFetch reads them (KEDA's too)
                    "isolation.level": "read_uncommitted"})
            return reader

    def _retry_retriable(self, call, what: str, client: Any = None):  # type: ignore[no-untyped-def]
        """Run ``call`` again while it fails with a retriable error (leader moves, new
        partitions, a coordinator moving), for at most ``timeout_s``; other errors, and a
        future not done within ``timeout_s``, raise BrokerError at once."""
        import time

        deadline = time.monotonic() + self.timeout_s
        while True:
            serve_logs(self._client if client is None else client)  # -> client_log.LOGGER
            try:
                return call()
            except concurrent.futures.TimeoutError as exc:
                raise BrokerError(f"{what}: no answer within {self.timeout_s:g} s; check "
                                  f"that {self.bootstrap_servers} is up") from exc
            except KafkaException as exc:
                err = exc.args[0]
                transient = err.retriable() or err.code() in _TRANSIENT_CODES
                if not transient or time.monotonic() > deadline:
                    raise BrokerError(f"{what} failed: {err.str()}") from exc
            time.sleep(0.1)

    def _wait_partitions(self, topic: str, expected: int) -> None:
        """Wait until metadata shows ``expected`` partitions with leaders (bounded)."""
        import time

        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            md = self._client.list_topics(topic=topic, timeout=self.timeout_s).topics.get(topic)
            if (md is not None and md.error is None and len(md.partitions) == expected
                    and all(p.leader >= 0 for p in md.partitions.values())):
                return
            time.sleep(0.1)
        raise BrokerError(f"topic {topic!r}: metadata did not show {expected} partitions with "
                          f"leaders within {self.timeout_s:.0f} s")


# -- one-shot shortcuts ----------------------------------------------------------------------
def create_topic(bootstrap_servers: str, topic: str = DEFAULT_TOPIC,
                 partitions: int = DEFAULT_PARTITIONS, **kwargs: object) -> None:
    """Shortcut for :meth:`KafkaAdmin.create_topic`."""
    with KafkaAdmin(bootstrap_servers) as admin:
        admin.create_topic(topic, partitions, **kwargs)  # type: ignore[arg-type]


def end_offsets(bootstrap_servers: str, topic: str = DEFAULT_TOPIC) -> dict[int, int]:
    """Shortcut for :meth:`KafkaAdmin.end_offsets` (log-end offsets)."""
    with KafkaAdmin(bootstrap_servers) as admin:
        return admin.end_offsets(topic)


def committed_offsets(bootstrap_servers: str, group: str, topic: str = DEFAULT_TOPIC
                      ) -> dict[int, int]:
    """Shortcut for :meth:`KafkaAdmin.committed_offsets`."""
    with KafkaAdmin(bootstrap_servers) as admin:
        return admin.committed_offsets(group, topic)
