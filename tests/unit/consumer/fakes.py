"""Fakes of the Kafka pieces a replica touches (see spark_consumer.group.GroupConsumer)."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.wire import EVENT_DTYPE, encode_events


class FakeMessage:
    """A ``confluent_kafka.Message`` stand-in."""

    def __init__(self, partition: int, offset: int, value: bytes | None, error: Any = None):
        self._p, self._o, self._v, self._e = partition, offset, value, error

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes | None:
        return self._v

    def error(self) -> Any:
        return self._e


def event_values(n: int, *, first_seq: int = 0, ts_ns: int = 1_000_000_000,
                 entity_ids: np.ndarray | None = None) -> list[bytes]:
    """``n`` encoded 280-byte events with seq first_seq.. and entity_id = seq * 7 by default."""
    ev = np.zeros(n, dtype=EVENT_DTYPE)
    ev["seq"] = np.arange(first_seq, first_seq + n, dtype=np.uint64)
    ev["entity_id"] = ev["seq"] * 7 if entity_ids is None else entity_ids
    ev["ts"] = ts_ns
    raw = encode_events(ev)
    return [raw[i * 280:(i + 1) * 280] for i in range(n)]


def messages(spec: list[tuple[int, int]], *, first_seq: int = 0) -> list[FakeMessage]:
    """Messages for ``[(partition, offset), ...]`` carrying consecutive events."""
    values = event_values(len(spec), first_seq=first_seq)
    return [FakeMessage(p, o, v) for (p, o), v in zip(spec, values)]


@dataclass
class FakeTopicPartition:
    topic: str
    partition: int
    offset: int = -1001
    error: Any = None


@dataclass
class FakeConsumer:
    """Serves scripted batches; the first consume() assigns ``partitions``.

    ``fail_commits`` makes that many next synchronous commits raise.
    """

    partitions: list[int]
    batches: list[list[FakeMessage]] = field(default_factory=list)
    clock: FakeClock | None = None
    fail_commits: int = 0
    on_consume: Callable[["FakeConsumer"], None] | None = None
    commits: list[dict[int, int]] = field(default_factory=list)
    stored: list[dict[int, int]] = field(default_factory=list)
    closed: bool = False
    callbacks: dict[str, Callable] = field(default_factory=dict)
    topics: list[str] = field(default_factory=list)
    consumed: int = 0
    positions: dict[int, int] = field(default_factory=dict)
    high_watermarks: dict[int, int] = field(default_factory=dict)
    lag_reads: int = 0

    def subscribe(self, topics: list[str], on_assign: Callable = None, on_revoke: Callable = None,
                  on_lost: Callable = None) -> None:
        self.topics = topics
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        self.consumed += 1
        if self.consumed == 1:
            self.callbacks["assign"](self, [FakeTopicPartition("t", p) for p in self.partitions])
        if self.on_consume is not None:
            self.on_consume(self)
        if self.batches:
            return self.batches.pop(0)
        if self.clock is not None:
            self.clock.advance(max(timeout, 0))
        return []

    def commit(self, message: Any = None, offsets: Any = None, asynchronous: bool = True) -> Any:
        assert asynchronous is False, "replica commits synchronously"
        if self.fail_commits:
            self.fail_commits -= 1
            raise RuntimeError("KafkaError{code=REBALANCE_IN_PROGRESS}")
        self.commits.append({tp.partition: tp.offset for tp in offsets})
        return [FakeTopicPartition(tp.topic, tp.partition, tp.offset) for tp in offsets]

    def store_offsets(self, message: Any = None, offsets: Any = None) -> None:
        self.stored.append({tp.partition: tp.offset for tp in offsets})

    def close(self) -> None:
        if self.callbacks.get("revoke") and self.partitions:
            self.callbacks["revoke"](self, [FakeTopicPartition("t", p) for p in self.partitions])
        self.closed = True

    def memberid(self) -> str:
        return "member-1"

    def position(self, partitions: list[Any]) -> list[FakeTopicPartition]:
        """``positions`` (-1001 = nothing consumed yet), as librdkafka's application position."""
        if self.closed:
            raise RuntimeError("Consumer closed")
        self.lag_reads += 1
        return [FakeTopicPartition(tp.topic, tp.partition, self.positions.get(tp.partition, -1001))
                for tp in partitions]

    def get_watermark_offsets(self, partition: Any, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int] | None:
        """``(low, high)`` from ``high_watermarks`` (-1001 = no fetch response yet; None = the
        client's None on an error); cached only."""
        assert cached, "the lag gauge must not ask the broker"
        self.lag_reads += 1
        high = self.high_watermarks.get(partition.partition, -1001)
        return None if high is None else (0 if high >= 0 else -1001, high)


def wall_ns_from(clock: FakeClock, epoch_ns: int = 2_000_000_000_000_000_000) -> Callable[[], int]:
    """A wall clock in ns that follows ``clock`` (tests never read the real time)."""
    return lambda: epoch_ns + int(clock.now() * 1e9)




def stats_json(state: str = "up", join_state: str = "steady", *, assignment_size: int = 2,
               stateage_ms: int = 5000, coordinator_rx: int | None = 10) -> str:
    """A librdkafka statistics JSON string (``stats_cb``'s argument) with a ``cgrp`` object as
    librdkafka 2.16 emits it (field ``join_state``) and the logical ``GroupCoordinator`` broker's
    response count ``rx`` (no such broker when None); trimmed of the other fields."""
    import json

    brokers = {} if coordinator_rx is None else {"GroupCoordinator": {
        "name": "GroupCoordinator", "nodeid": -1, "source": "logical", "state": "UP",
        "outbuf_cnt": 0, "waitresp_cnt": 0, "tx": coordinator_rx, "rx": coordinator_rx}}
    return json.dumps({
        "name": "r-1#consumer-1", "client_id": "r-1", "type": "consumer", "ts": 1, "time": 1,
        "replyq": 0, "rx": 100, "tx": 100, "brokers": brokers, "topics": {},
        "cgrp": {"state": state, "stateage": stateage_ms, "join_state": join_state,
                 "rebalance_age": 1000, "rebalance_cnt": 1, "rebalance_reason": "",
                 "assignment_size": assignment_size}})


class SignalClock(FakeClock):
    """A fake clock that delivers SIGTERM to the replica when it passes ``at_s``."""

    def __init__(self, at_s: float | None = None):
        super().__init__()
        self.at_s, self.replica = at_s, None

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if self.at_s is not None and self.now() >= self.at_s and self.replica is not None:
            self.at_s = None
            self.replica._on_signal(signal.SIGTERM, None)
