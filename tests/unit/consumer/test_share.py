"""The share-group mode (``--group-type share``): config, acknowledgements, store rows, flags and
a whole replica life against a fake ShareConsumer that enforces explicit acknowledgement (no
broker; the real one runs in tests/integration/test_consumer_share.py)."""

from __future__ import annotations

import io
import signal
from typing import Any, Callable

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Message, TopicPartition

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.errors import ConfigError
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.eventlog import EventLog, read_events
from spark_consumer.metrics import ReplicaMetrics
from spark_consumer.options import DEFAULT_DIMENSION, parse_options
from spark_consumer.replica import Replica, ReplicaParts
from spark_consumer.share import (Ack, DeliveryCountSink, plan_acknowledgements,
                                  share_consumer_config)
from spark_consumer.store import SHARE_STORE_SCHEMA, STORE_SCHEMA, ParquetStore, read_store

from .fakes import FakeMessage, SignalClock, event_values, stats_json

REQUIRED = ["--bootstrap", "127.0.0.1:9092", "--store", "/tmp/store"]
#: Settings librdkafka 2.16.0 refuses when building a ShareConsumer (ValueError).
REFUSED_BY_SHARE_CONSUMER = (
    "auto.offset.reset", "group.protocol", "enable.auto.commit", "enable.auto.offset.store",
    "session.timeout.ms", "heartbeat.interval.ms", "group.instance.id",
    "partition.assignment.strategy", "group.remote.assignor", "isolation.level",
    "enable.partition.eof", "queued.max.messages.kbytes", "fetch.queue.backoff.ms",
    "fetch.error.backoff.ms", "on_commit")


def records(spec: list[tuple[int, int, int]], *, first_seq: int = 0,
            bad: frozenset[int] = frozenset()) -> list[Message]:
    """Real ``confluent_kafka.Message`` objects for ``[(partition, offset, delivery_count)]``;
    the indexes in ``bad`` carry a 3-byte value that cannot be decoded."""
    values = event_values(len(spec), first_seq=first_seq)
    return [Message(topic="events", partition=p, offset=o, delivery_count=dc,
                    value=b"bad" if i in bad else v)
            for i, ((p, o, dc), v) in enumerate(zip(spec, values))]


class FakeShareConsumer:
    """Serves scripted polls and, as the real one in explicit mode, refuses a poll while a
    record of the previous poll is unacknowledged. ``commits`` holds, per ``commit_sync``, the
    ``(partition, offset, ack type)`` acknowledged since the previous one."""

    def __init__(self, polls: list[list[Any]], clock: FakeClock):
        self.polls, self.clock = polls, clock
        self.outstanding: set[tuple[int, int]] = set()
        self.pending: list[tuple[int, int, int]] = []
        self.commits: list[list[tuple[int, int, int]]] = []
        self.polled = 0
        self.closed = False
        self.topics: list[str] = []
        self.on_poll: Callable[["FakeShareConsumer"], None] | None = None
        self.on_ack: Callable[[Any, int], None] | None = None
        self.log: list[str] = []

    def subscribe(self, topics: list[str]) -> None:
        self.topics = topics

    def poll(self, timeout: float = -1) -> list[Any]:
        if self.outstanding:
            raise RuntimeError(f"IllegalStateException: {len(self.outstanding)} records of the "
                               "previous poll are not acknowledged")
        self.polled += 1
        if self.on_poll is not None:
            self.on_poll(self)
        if self.polls:
            batch = self.polls.pop(0)
            self.outstanding = {(m.partition(), m.offset()) for m in batch if m.error() is None}
            return batch
        self.clock.advance(timeout)
        return []

    def acknowledge(self, message: Any, ack_type: int = 1) -> None:
        key = (message.partition(), message.offset())
        assert key in self.outstanding, f"{key} is not in flight"
        assert isinstance(ack_type, int) and ack_type in (1, 2, 3)
        self.outstanding.discard(key)
        self.pending.append((*key, ack_type))
        if self.on_ack is not None:
            self.on_ack(message, ack_type)

    def commit_sync(self, timeout: float = 60) -> dict[Any, Any]:
        done, self.pending = self.pending, []
        self.commits.append(done)
        return {TopicPartition("events", p): None for p in sorted({p for p, _, _ in done})}

    def close(self) -> None:
        assert not self.outstanding, "every fetched record is acknowledged before close()"
        self.closed = True
        self.log.append("consumer.close")


class RecordingEngine:
    """The arrow engine, noting ``stop`` in a shared log (to check the engine stops last)."""

    name = "arrow"

    def __init__(self, log: list[str], fail: bool = False):
        self.inner = make_engine("arrow", load_dimension(DEFAULT_DIMENSION))
        self.log, self.fail = log, fail

    def start(self):
        self.inner.start()
        return self

    def enrich(self, table):
        if self.fail:
            raise RuntimeError("engine broke")
        return self.inner.enrich(table)

    def stop(self) -> None:
        self.log.append("engine.stop")
        self.inner.stop()


def _share_replica(tmp_path, consumer: FakeShareConsumer, clock: FakeClock, *extra: str,
                   fail_engine: bool = False) -> tuple[Replica, list]:
    opts = parse_options(["--bootstrap", "x:1", "--store", str(tmp_path / "store"),
                          "--engine", "arrow", "--replica-id", "r-1", "--process-ms", "10",
                          "--inflight", "2", "--event-log", str(tmp_path / "events.jsonl"),
                          "--group-type", "share", *extra], env={})
    resets: list[tuple[str, str, str]] = []
    confs: list[dict] = []
    parts = ReplicaParts(
        opts=opts, engine=RecordingEngine(consumer.log, fail_engine),
        events=EventLog("r-1", opts.event_log, clock, echo=io.StringIO()),
        metrics=ReplicaMetrics(clock), store=ParquetStore(opts.store, "r-1", "1"), clock=clock,
        make_consumer=lambda conf: pytest.fail("a share replica builds no group Consumer"),
        make_share_consumer=lambda conf: confs.append(conf) or consumer,
        set_share_offset_reset=lambda *a: resets.append(a), serve_http=False)
    replica = Replica(parts)
    if isinstance(clock, SignalClock):
        clock.replica = replica
    return replica, [resets, confs]


def _stop_at_poll(replica: Replica, n: int) -> Callable[[FakeShareConsumer], None]:
    def hook(c: FakeShareConsumer) -> None:
        if c.polled > n:
            replica._on_signal(signal.SIGTERM, None)
    return hook


def _events(tmp_path) -> list[dict]:
    return read_events(tmp_path / "events.jsonl")


def _metric(replica: Replica, name: str, labels: dict | None = None) -> float | None:
    return replica.p.metrics.registry.get_sample_value(name, labels)


# -- config ------------------------------------------------------------------------------------
def test_the_share_config_is_explicit_and_holds_nothing_a_share_consumer_refuses() -> None:
    from confluent_kafka import ShareConsumer

    opts = parse_options([*REQUIRED, "--group-type", "share", "--max-batch", "700",
                          "--replica-id", "r-7", "--group", "g1"], env={})
    conf = share_consumer_config(opts)
    assert conf["share.acknowledgement.mode"] == "explicit"
    assert (conf["group.id"], conf["client.id"], conf["max.poll.records"]) == ("g1", "r-7", 700)
    assert conf["max.poll.interval.ms"] >= 300_000
    assert [k for k in REFUSED_BY_SHARE_CONSUMER if k in conf] == []
    ShareConsumer(conf).close()  # librdkafka 2.16.0 accepts every key (no broker needed)
    with pytest.raises(ValueError, match="auto.offset.reset"):
        ShareConsumer({**conf, "auto.offset.reset": "earliest"})


# -- acknowledgement decisions -----------------------------------------------------------------
def test_written_records_are_accepted_the_rest_released_and_undecodable_ones_rejected() -> None:
    batch = records([(0, i, 1) for i in range(6)], bad=frozenset({1, 4}))
    A, R, X = Ack.ACCEPT, Ack.RELEASE, Ack.REJECT
    assert plan_acknowledgements(batch, 4) == [A, X, A, A, X, A]
    assert plan_acknowledgements(batch, 2) == [A, X, A, R, X, R]  # a drain's written prefix
    assert plan_acknowledgements(batch, 0) == [R, X, R, R, X, R]
    assert plan_acknowledgements(batch, None) == [R, X, R, R, X, R]  # the batch failed
    assert plan_acknowledgements([], None) == []
    assert [int(a) for a in Ack] == [1, 2, 3]  # the protocol's AcknowledgeType values


def test_the_ack_values_are_confluent_kafkas() -> None:
    from confluent_kafka import AcknowledgeType

    assert {a.name: int(a) for a in Ack} == {t.name: int(t) for t in AcknowledgeType}


# -- store rows --------------------------------------------------------------------------------
def test_delivery_counts_reach_the_store_rows_and_consumer_rows_stay_as_they_were(tmp_path) -> None:
    engine = make_engine("arrow", load_dimension(DEFAULT_DIMENSION)).start()
    from spark_consumer.records import decode_messages

    batch = records([(0, 5, 1), (1, 7, 3), (0, 6, 2)], bad=frozenset({2}))
    enriched = engine.enrich(decode_messages(batch, 1).records)
    sink = DeliveryCountSink(ParquetStore(tmp_path / "share", "r-1", "1"))
    sink.expect(batch)
    path = sink.write(enriched, [10, 11])
    table = pq.read_table(path)
    assert table.schema == SHARE_STORE_SCHEMA
    assert table.column("delivery_count").to_pylist() == [1, 3]
    assert table.column("offset").to_pylist() == [5, 7]
    plain = pq.read_table(ParquetStore(tmp_path / "plain", "r-1", "1").write(enriched, [10, 11]))
    assert plain.schema == STORE_SCHEMA and "delivery_count" not in plain.column_names
    # Readers of the store's columns read both kinds; the share schema reads a consumer store.
    assert read_store(tmp_path / "share").num_rows == 2
    assert read_store(tmp_path / "plain", SHARE_STORE_SCHEMA).column(
        "delivery_count").to_pylist() == [None, None]


# -- flags -------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, env, expected", [
    pytest.param(["--group-type", "queue"], {},
                 "--group-type: 'queue' is not one of consumer, share; pass one of those",
                 id="bad-group-type"),
    pytest.param([], {"LAGSCALE_GROUP_TYPE": "Share"},
                 "--group-type: 'Share' is not one of consumer, share (from LAGSCALE_GROUP_TYPE); "
                 "pass one of those", id="bad-group-type-env"),
    pytest.param(["--group-type", "share", "--share-offset-reset", "oldest"], {},
                 "--share-offset-reset: 'oldest' is not one of earliest, latest; pass one of "
                 "those", id="bad-offset-reset"),
    pytest.param(["--group-type", "share", "--instance-id", "pod-0"], {},
                 "--instance-id: 'pod-0' is not allowed with --group-type share (share groups "
                 "have no static membership); drop --instance-id or pass --group-type consumer",
                 id="instance-id-with-share"),
    pytest.param(["--group-type", "share", "--session-timeout", "30"], {},
                 "--session-timeout: '30' is not allowed with --group-type share (share-group "
                 "session timeouts are broker settings); drop --session-timeout or pass "
                 "--group-type consumer", id="session-timeout-with-share"),
    pytest.param(["--commit", "auto"], {"LAGSCALE_GROUP_TYPE": "share"},
                 "--commit: 'auto' is not allowed with --group-type share (a share replica "
                 "acknowledges each batch and commits it synchronously); pass --commit manual or "
                 "--group-type consumer", id="commit-auto-with-share-from-env"),
])
def test_bad_share_flags_name_flag_value_and_allowed_values(argv, env, expected) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options([*REQUIRED, *argv], env=env)
    assert info.value.problems == [expected]


def test_share_flags_default_and_parse() -> None:
    plain = parse_options(REQUIRED, env={})
    assert (plain.group_type, plain.share_offset_reset) == ("consumer", "earliest")
    opts = parse_options([*REQUIRED, "--share-offset-reset", "latest", "--commit", "manual",
                          "--balancer", "range"], env={"LAGSCALE_GROUP_TYPE": "share"})
    assert (opts.group_type, opts.share_offset_reset, opts.commit) == ("share", "latest", "manual")


# -- a replica's life --------------------------------------------------------------------------
def test_a_share_replica_accepts_after_the_write_commits_and_drains(tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([records([(0, 0, 1), (1, 0, 1), (0, 1, 2)]),
                                  records([(1, 1, 1), (1, 2, 4)], first_seq=3)], clock)
    replica, (resets, confs) = _share_replica(tmp_path, consumer, clock, "--log-batches", "true")
    consumer.on_poll = _stop_at_poll(replica, 3)
    in_store_at_ack: list[bool] = []

    def stored() -> set[tuple[int, int]]:
        table = read_store(tmp_path / "store")
        return set(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))

    consumer.on_ack = lambda msg, ack: in_store_at_ack.append(
        (msg.partition(), msg.offset()) in stored())
    assert replica.run() == 0
    assert resets == [("x:1", "enrich", "earliest")]
    assert confs[0]["share.acknowledgement.mode"] == "explicit" and "stats_cb" in confs[0]
    assert consumer.commits == [[(0, 0, 1), (1, 0, 1), (0, 1, 1)], [(1, 1, 1), (1, 2, 1)]]
    assert in_store_at_ack == [True] * 5  # ACCEPT only once the batch is in the store
    assert consumer.closed and consumer.topics == ["events"]
    assert consumer.log == ["consumer.close", "engine.stop"]  # the engine stops last
    store = read_store(tmp_path / "store", SHARE_STORE_SCHEMA)
    assert sorted(zip(store.column("offset").to_pylist(), store.column("partition").to_pylist(),
                      store.column("delivery_count").to_pylist())) == [
        (0, 0, 1), (0, 1, 1), (1, 0, 2), (1, 1, 1), (2, 1, 4)]
    events = _events(tmp_path)
    names = [e["event"] for e in events]
    assert names[:5] == ["started", "metrics_listening", "engine_ready", "share_offset_reset",
                         "subscribed"]
    assert names[5:8] == ["joined", "ready", "first_record"]
    assert names[-4:] == ["sigterm", "drained", "closed", "exited"]
    assert events[0]["group_type"] == "share" and events[0]["share_offset_reset"] == "earliest"
    assert events[5]["via"] == "poll"
    batches = [e for e in events if e["event"] == "batch"]
    assert [b["redelivered"] for b in batches] == [1, 1]
    assert batches[0]["acknowledged"] == {"accept": 3, "release": 0, "reject": 0}
    assert _metric(replica, "replica_redelivered_records_total") == 2
    assert _metric(replica, "records_committed_total") == 5
    assert _metric(replica, "replica_acknowledged_records_total", {"type": "accept"}) == 5
    assert _metric(replica, "records_processed_total") == 5


def test_undecodable_records_are_rejected_and_the_others_accepted(tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([records([(0, i, 1) for i in range(4)], bad=frozenset({2}))],
                                 clock)
    replica, _ = _share_replica(tmp_path, consumer, clock)
    consumer.on_poll = _stop_at_poll(replica, 2)
    assert replica.run() == 0
    assert consumer.commits == [[(0, 0, 1), (0, 1, 1), (0, 2, 3), (0, 3, 1)]]
    assert read_store(tmp_path / "store").column("offset").to_pylist() == [0, 1, 3]
    assert _metric(replica, "records_malformed_total") == 1
    assert _metric(replica, "replica_acknowledged_records_total", {"type": "reject"}) == 1


def test_a_failed_batch_is_released_and_the_replica_exits_one_after_closing(tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([records([(0, 0, 1), (0, 1, 1)], bad=frozenset({1}))], clock)
    replica, _ = _share_replica(tmp_path, consumer, clock, fail_engine=True)
    assert replica.run() == 1
    assert consumer.commits == [[(0, 0, 2), (0, 1, 3)]]  # RELEASE the record, REJECT the bad one
    assert read_store(tmp_path / "store").num_rows == 0
    assert consumer.closed and consumer.log == ["consumer.close", "engine.stop"]
    events = _events(tmp_path)
    errors = [e for e in events if e["event"] == "error"]
    assert errors[0]["where"] == "batch" and "engine broke" in errors[0]["error"]
    assert [e["event"] for e in events][-3:] == ["drained", "closed", "exited"]
    assert events[-1]["code"] == 1
    assert _metric(replica, "records_committed_total") == 0


def test_sigterm_mid_batch_accepts_the_written_prefix_and_releases_the_rest(tmp_path) -> None:
    # --max-batch 6: a poll of 10 records is two batches (6, 4); SIGTERM during the second
    # write wave (2 records each) of the first one.
    clock = SignalClock(at_s=0.02)
    consumer = FakeShareConsumer([records([(0, i, 1) for i in range(10)])], clock)
    replica, _ = _share_replica(tmp_path, consumer, clock, "--max-batch", "6")
    assert replica.run() == 0
    assert consumer.polled == 1  # stopped fetching
    assert consumer.commits == [
        [(0, 0, 1), (0, 1, 1), (0, 2, 1), (0, 3, 1), (0, 4, 2), (0, 5, 2)],  # the cut batch
        [(0, i, 2) for i in range(6, 10)]]  # the next batch: released unprocessed
    assert read_store(tmp_path / "store").column("offset").to_pylist() == [0, 1, 2, 3]
    events = _events(tmp_path)
    assert [e["event"] for e in events][-5:] == ["sigterm", "batch_cut", "drained", "closed",
                                                 "exited"]
    cut, drained = events[-4], events[-3]
    assert (cut["messages"], cut["messages_done"]) == (6, 4)
    assert cut["acknowledged"] == {"accept": 4, "release": 2, "reject": 0}
    assert drained["buffered_dropped"] == 4 and events[-1]["code"] == 0
    assert consumer.log == ["consumer.close", "engine.stop"]


def test_a_poll_larger_than_max_batch_runs_as_several_batches_before_the_next_poll(
        tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([records([(0, i, 1) for i in range(5)]),
                                  records([(0, 5, 1)], first_seq=5)], clock)
    replica, _ = _share_replica(tmp_path, consumer, clock, "--max-batch", "2",
                                "--log-batches", "true")
    consumer.on_poll = _stop_at_poll(replica, 2)
    assert replica.run() == 0
    assert [len(c) for c in consumer.commits] == [2, 2, 1, 1]
    batches = [e for e in _events(tmp_path) if e["event"] == "batch"]
    assert [b["messages"] for b in batches] == [2, 2, 1, 1]
    assert read_store(tmp_path / "store").num_rows == 6


def test_trigger_interval_spaces_batch_starts(tmp_path) -> None:
    clock = FakeClock()
    polls = [records([(0, i, 1)], first_seq=i) for i in range(4)]
    consumer = FakeShareConsumer(polls, clock)
    replica, _ = _share_replica(tmp_path, consumer, clock, "--trigger-interval", "2",
                                "--log-batches", "true", "--batch-wait-ms", "300")
    consumer.on_poll = _stop_at_poll(replica, 4)
    assert replica.run() == 0
    starts = [b["started_monotonic_s"] for b in _events(tmp_path) if b["event"] == "batch"]
    assert len(starts) == 4
    assert [round(b - a, 3) for a, b in zip(starts, starts[1:])] == [2.0, 2.0, 2.0]


def test_statistics_showing_the_member_in_the_group_make_it_ready(tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([], clock)
    replica, (_, confs) = _share_replica(tmp_path, consumer, clock)
    ready: list[bool] = []

    def hook(c: FakeShareConsumer) -> None:
        confs[0]["stats_cb"](stats_json("up", "init" if c.polled < 3 else "steady",
                                        assignment_size=0))
        ready.append(replica.readiness()[0])
        if c.polled > 3:
            replica._on_signal(signal.SIGTERM, None)

    consumer.on_poll = hook
    assert replica.run() == 0
    assert ready == [False, False, True, True]  # joined at the 3rd poll's statistics
    assert replica.readiness() == (False, "r-1: draining")
    joined = [e for e in _events(tmp_path) if e["event"] == "joined"]
    assert [(j["via"], j["group_type"]) for j in joined] == [("stats", "share")]


def test_error_messages_are_reported_and_never_acknowledged(tmp_path) -> None:
    from confluent_kafka import KafkaError

    clock = FakeClock()
    err = FakeMessage(0, -1, None, error=KafkaError(KafkaError._TRANSPORT, "broker down"))
    consumer = FakeShareConsumer([[err, *records([(0, 0, 1)])]], clock)
    replica, _ = _share_replica(tmp_path, consumer, clock)
    consumer.on_poll = _stop_at_poll(replica, 2)
    assert replica.run() == 0
    assert consumer.commits == [[(0, 0, 1)]]
    assert [e["event"] for e in _events(tmp_path)].count("kafka_error") == 1


def test_a_failed_offset_reset_stops_the_replica_before_it_joins(tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([], clock)
    replica, _ = _share_replica(tmp_path, consumer, clock)

    def refuse(*args: str) -> None:
        raise RuntimeError("KafkaError{code=INVALID_CONFIG}")

    replica.p.set_share_offset_reset = refuse
    assert replica.run() == 1
    assert consumer.polled == 0 and consumer.topics == []
    errors = [e for e in _events(tmp_path) if e["event"] == "error"]
    assert errors[0]["where"] == "share_offset_reset"


def test_consumer_mode_writes_no_share_fields(tmp_path) -> None:
    from .fakes import FakeConsumer, messages

    from .test_replica import _replica, _stop_after

    consumer = FakeConsumer(partitions=[0], batches=[messages([(0, 0)])])
    replica = _replica(tmp_path, consumer, FakeClock())
    consumer.on_consume = hook = _stop_after(2)
    hook.replica = replica
    assert replica.run() == 0
    events = _events(tmp_path)
    assert "group_type" not in events[0]
    assert "share_offset_reset" not in [e["event"] for e in events]
    assert _metric(replica, "replica_redelivered_records_total") is None
    files = list((tmp_path / "store").rglob("*.parquet"))
    assert [pq.read_schema(f) == STORE_SCHEMA for f in files] == [True]


def test_a_poll_that_raises_ends_the_replica_with_exit_one_after_closing(tmp_path) -> None:
    clock = FakeClock()
    consumer = FakeShareConsumer([], clock)
    replica, _ = _share_replica(tmp_path, consumer, clock)
    assert replica.readiness() == (False, "r-1: engine arrow starting")

    def broken(c: FakeShareConsumer) -> None:
        assert replica.readiness() == (False, "r-1: waiting to join the share group")
        raise RuntimeError("KafkaException: fatal")

    consumer.on_poll = broken
    assert replica.run() == 1
    events = _events(tmp_path)
    assert [e["where"] for e in events if e["event"] == "error"] == ["poll"]
    assert [e["event"] for e in events][-3:] == ["drained", "closed", "exited"]
    assert consumer.log == ["consumer.close", "engine.stop"]
