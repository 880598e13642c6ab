"""The micro-batch trigger (``--trigger-interval``) against a timed fake consumer and a fake clock."""

from __future__ import annotations

import io
import signal
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_lagscale.contract.clock import FakeClock
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.eventlog import EventLog, read_events
from spark_consumer.group import GroupConsumer, OffsetCommitter, RebalanceHandler
from spark_consumer.metrics import ReplicaMetrics
from spark_consumer.options import DEFAULT_DIMENSION, parse_options
from spark_consumer.replica import Replica, ReplicaParts
from spark_consumer.store import ParquetStore, read_store
from spark_consumer.trigger import MicroBatch, MicroBatchTrigger, TriggerSettings

from .fakes import FakeConsumer, FakeMessage, FakeTopicPartition, messages


@dataclass
class TimedConsumer(FakeConsumer):
    """Records arrive at set times; ``consume(n, timeout)`` returns once ``n`` records have
    arrived or ``timeout`` passed, as librdkafka's batch consume does, advancing the clock.

    ``arrivals`` is ``[(arrival time s, message)]`` sorted by time; ``calls`` records each
    ``consume()`` as (clock time, num_messages, timeout).
    """

    arrivals: list[tuple[float, FakeMessage]] = field(default_factory=list)
    calls: list[tuple[float, int, float]] = field(default_factory=list)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        assert self.clock is not None
        self.consumed += 1
        now = self.clock.now()
        self.calls.append((now, num_messages, timeout))
        if self.consumed == 1:
            self.callbacks["assign"](self, [FakeTopicPartition("t", p) for p in self.partitions])
        if self.on_consume is not None:
            self.on_consume(self)
        deadline = now + max(timeout, 0.0)
        first = [t for t, _ in self.arrivals[:num_messages]]
        if len(first) == num_messages and first[-1] <= deadline:
            end, n = max(now, first[-1]), num_messages
        else:
            end, n = deadline, sum(1 for t in first if t <= deadline)
        self.clock.advance(end - now)
        out = [m for _, m in self.arrivals[:n]]
        del self.arrivals[:n]
        return out


def steady(rate_per_s: float, until_s: float, partitions: int = 2) -> list[tuple[float, Any]]:
    """Records arriving every ``1 / rate_per_s`` s from then on, round-robin over partitions
    (partition p gets offsets 0, 1, ...)."""
    n = int(until_s * rate_per_s)
    spec = [(i % partitions, i // partitions) for i in range(n)]
    return [((i + 1) / rate_per_s, m) for i, m in enumerate(messages(spec))]


def _trigger(consumer: TimedConsumer, interval_s: float, max_batch: int = 10_000,
             wait_s: float = 0.1, **kw: Any) -> MicroBatchTrigger:
    consumer.clock = consumer.clock or FakeClock()
    consumer.subscribe(["t"], on_assign=lambda c, tps: None)
    return MicroBatchTrigger(consumer, TriggerSettings(interval_s, max_batch, wait_s),
                             consumer.clock, **kw)


def _run(trigger: MicroBatchTrigger, clock: FakeClock, until_s: float,
         process_s: float | list[float] = 0.3) -> list[MicroBatch]:
    """Poll until ``until_s``; each batch 'takes' ``process_s`` (one value, or one per batch)."""
    batches: list[MicroBatch] = []
    for _ in range(100_000):  # bounded: a trigger that stops moving the clock fails, not hangs
        if clock.now() >= until_s:
            return batches
        batch = trigger.poll()
        if batch is not None:
            batches.append(batch)
            costs = process_s if isinstance(process_s, list) else [process_s]
            clock.advance(costs[min(len(batches), len(costs)) - 1])
    raise AssertionError(f"the clock stuck at {clock.now()} s short of {until_s} s")


def _offsets(batches: list[MicroBatch]) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for b in batches for m in b.messages]


def test_timed_fake_implements_the_consumer_protocol() -> None:
    assert isinstance(TimedConsumer(partitions=[0]), GroupConsumer)


def test_batches_start_one_interval_apart_and_take_everything_polled_once() -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(100, 6.0))
    trigger = _trigger(consumer, interval_s=1.0)
    batches = _run(trigger, clock, until_s=5.0)
    starts = [b.started_s for b in batches]
    assert starts == pytest.approx([0.1, 1.1, 2.1, 3.1, 4.1])
    assert all(b - a >= 1.0 - 1e-9 for a, b in zip(starts, starts[1:]))
    # after a 0.3 s batch the buffer starts at the end of the next 0.1 s slice: 0.5 s after
    # the start, so the batch waited 0.6 s for its trigger
    assert [b.trigger_wait_s for b in batches[1:]] == pytest.approx([0.6] * 4)
    got = _offsets(batches)
    assert len(got) == len(set(got)) == 410  # every record that arrived by 4.1 s, once
    assert max(timeout for _, _, timeout in consumer.calls) <= 0.1  # polls are slices


def test_a_full_batch_does_not_wait_for_the_interval() -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(1000, 2.0))
    trigger = _trigger(consumer, interval_s=10.0, max_batch=50)
    batches = _run(trigger, clock, until_s=1.0, process_s=0.0)
    assert len(batches) == 20 and {len(b.messages) for b in batches} == {50}
    starts = [b.started_s for b in batches]
    assert [b - a for a, b in zip(starts, starts[1:])] == pytest.approx([0.05] * 19)
    assert all(n <= 50 for _, n, _ in consumer.calls)  # never more than the batch has room for


def test_after_a_batch_longer_than_the_interval_the_next_starts_with_the_first_records() -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(100, 6.0))
    trigger = _trigger(consumer, interval_s=1.0)
    batches = _run(trigger, clock, until_s=3.0, process_s=[2.5, 0.0])
    first, second = batches[0], batches[1]
    assert first.started_s == pytest.approx(0.1)
    assert second.started_s == pytest.approx(0.1 + 2.5 + 0.1)  # one slice after the slow batch
    assert second.trigger_wait_s == 0.0


@pytest.mark.parametrize("callback, removed", [
    pytest.param("revoke", [1], id="cooperative-revoke-keeps-the-other-partition"),
    pytest.param("lost", [1], id="lost-partition"),
    pytest.param("revoke", [0, 1], id="eager-revoke-all-then-reassign"),
])
def test_rebalance_drops_the_buffered_records_of_removed_partitions_only(
        callback: str, removed: list[int]) -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(100, 3.0))
    events, metrics = EventLog("r-1", None, clock, echo=io.StringIO()), ReplicaMetrics(clock)
    committer = OffsetCommitter(consumer, "t", "manual", metrics, events,
                                make_tp=FakeTopicPartition)
    handler = RebalanceHandler(committer, metrics, events, clock)
    trigger = MicroBatchTrigger(consumer, TriggerSettings(1.0, 10_000, 0.1), clock)
    handler.add_removed_listener(trigger.drop)
    consumer.subscribe(["t"], on_assign=handler.on_assign, on_revoke=handler.on_revoke,
                       on_lost=handler.on_lost)
    seen: dict[str, int] = {}

    def rebalance(c: TimedConsumer) -> None:  # runs inside consume(), as librdkafka's callbacks
        now = c.clock.now()
        if now < 0.75 or seen:
            return
        seen["p0"] = sum(1 for ch in trigger._chunks for m in ch.messages if m.partition() == 0)
        getattr(handler, f"on_{callback}")(c, [FakeTopicPartition("t", p) for p in removed])
        seen["left"] = trigger.buffered
        if removed == [0, 1]:  # eager: everything comes back, fetched from the committed offset
            handler.on_assign(c, [FakeTopicPartition("t", p) for p in removed])
            c.arrivals = [(max(now, t), m) for t, m in steady(100, 3.0) if m.offset() >= 5]
        else:  # the partition moved away: no more of its records
            c.arrivals = [(t, m) for t, m in c.arrivals if m.partition() not in removed]

    consumer.on_consume = rebalance
    batches = _run(trigger, clock, until_s=1.2)  # the first batch (offsets 0..4) counts as committed
    assert [b.started_s for b in batches] == pytest.approx([0.1, 1.1])
    assert seen["p0"] == 35
    got = _offsets(batches)
    assert len(got) == len(set(got)), "a record would be processed twice"
    second = {p: sorted(o for q, o in _offsets(batches[1:]) if q == p) for p in (0, 1)}
    if removed == [1]:
        assert seen["left"] == 35 and second[1] == []  # only partition 1's records were dropped
        assert second[0] == list(range(5, 55))
    else:
        assert seen["left"] == 0 and second[0] == second[1] == list(range(5, 55))


def test_interval_zero_is_one_consume_per_batch() -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(100, 2.0))
    bad = FakeMessage(0, -1, None, error="_TRANSPORT")
    consumer.arrivals.insert(3, (0.035, bad))
    errors: list[Any] = []
    trigger = _trigger(consumer, interval_s=0.0, max_batch=500, wait_s=0.25,
                       is_error=lambda m: m.error() is not None and not errors.append(m))
    batches = [trigger.poll() for _ in range(4)]
    assert consumer.calls == pytest.approx([(0.0, 500, 0.25), (0.25, 500, 0.25),
                                            (0.5, 500, 0.25), (0.75, 500, 0.25)])
    assert [len(b.messages) for b in batches] == [25, 25, 25, 25]  # the error is not a record
    assert errors == [bad] and trigger.buffered == 0
    assert [(b.poll_s, b.trigger_wait_s) for b in batches] == [(0.25, 0.0)] * 4


def test_interval_zero_with_nothing_polled_is_no_batch() -> None:
    consumer = TimedConsumer(partitions=[0], clock=FakeClock())
    trigger = _trigger(consumer, interval_s=0.0)
    assert trigger.poll() is None and consumer.consumed == 1


def test_the_flag_defaults_to_zero_and_takes_seconds() -> None:
    required = ["--bootstrap", "h:1", "--store", "/s"]
    assert parse_options(required, env={}).trigger_interval_s == 0.0
    opts = parse_options([*required, "--trigger-interval=2.5", "--batch-wait-ms=200",
                          "--max-batch=300"], env={})
    assert TriggerSettings.from_options(opts) == TriggerSettings(2.5, 300, 0.2)


def _replica(tmp_path, consumer: TimedConsumer, *extra: str) -> Replica:
    opts = parse_options(["--bootstrap", "x:1", "--store", str(tmp_path / "store"),
                          "--engine", "arrow", "--replica-id", "r-1", "--process-ms", "1",
                          "--inflight", "100", "--batch-wait-ms", "100", "--log-batches", "true",
                          "--event-log", str(tmp_path / "events.jsonl"), *extra], env={})
    clock = consumer.clock
    parts = ReplicaParts(
        opts=opts, engine=make_engine("arrow", load_dimension(DEFAULT_DIMENSION)),
        events=EventLog("r-1", opts.event_log, clock, echo=io.StringIO()),
        metrics=ReplicaMetrics(clock), store=ParquetStore(opts.store, "r-1", "1"),
        clock=clock, make_consumer=lambda conf: consumer, serve_http=False)
    return Replica(parts)


def test_sigterm_with_a_buffer_processes_and_commits_nothing_from_it(tmp_path) -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(100, 5.0))
    replica = _replica(tmp_path, consumer, "--trigger-interval", "1")

    def sigterm_at_1_5_s(c: TimedConsumer) -> None:  # inside consume(), as a real signal
        if c.clock.now() >= 1.5 and not replica.stop_requested.is_set():
            replica._on_signal(signal.SIGTERM, None)

    consumer.on_consume = sigterm_at_1_5_s
    assert replica.run() == 0
    events = read_events(tmp_path / "events.jsonl")
    batches = [e for e in events if e["event"] == "batch"]
    assert [b["records"] for b in batches] == [10, 100]  # at 0.1 s and 1.1 s
    starts = [b["started_monotonic_s"] for b in batches]
    assert starts[1] - starts[0] == pytest.approx(1.0)
    assert batches[0]["trigger_wait_s"] == 0.0 and batches[1]["trigger_wait_s"] > 0.5
    assert consumer.commits == [{0: 5, 1: 5}, {0: 55, 1: 55}]  # not one record from the buffer
    assert read_store(tmp_path / "store").num_rows == 110
    drained = next(e for e in events if e["event"] == "drained")
    assert drained["buffered_dropped"] > 0 and drained["pending_offsets"] == {}
    started = next(e for e in events if e["event"] == "started")
    assert started["trigger_interval_s"] == 1.0


def test_no_batch_is_handed_out_once_a_stop_was_requested() -> None:
    clock = FakeClock()
    consumer = TimedConsumer(partitions=[0, 1], clock=clock, arrivals=steady(100, 3.0))
    stop = []
    consumer.on_consume = lambda c: c.clock.now() >= 1.0 and stop.append(True)
    trigger = _trigger(consumer, interval_s=1.0, should_stop=lambda: bool(stop))
    batches = [b for _ in range(30) if (b := trigger.poll()) is not None]
    assert clock.now() == pytest.approx(1.1)  # the slice to the 1.1 s start ran, then no more
    assert [b.started_s for b in batches] == pytest.approx([0.1])  # 1.1 was due, stop came first
    assert trigger.buffered > 0 and trigger.discard() > 0 and trigger.buffered == 0
