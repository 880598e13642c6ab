"""A whole replica life against a fake consumer and a fake clock (no broker, no sockets)."""

from __future__ import annotations

import io
import json
import os
import signal

import pytest

from pytest_lagscale.contract.clock import FakeClock
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.eventlog import EventLog, read_events
from spark_consumer.metrics import ReplicaMetrics
from spark_consumer.options import DEFAULT_DIMENSION, parse_options
from spark_consumer.replica import Replica, ReplicaParts
from spark_consumer.store import ParquetStore, read_store

from .fakes import FakeConsumer, FakeTopicPartition, SignalClock, messages, stats_json


def _replica(tmp_path, consumer: FakeConsumer, clock: FakeClock, *extra: str,
             engine=None) -> Replica:
    opts = parse_options(["--bootstrap", "x:1", "--store", str(tmp_path / "store"),
                          "--engine", "arrow", "--replica-id", "r-1", "--process-ms", "10",
                          "--inflight", "2", "--event-log", str(tmp_path / "events.jsonl"),
                          *extra], env={})
    consumer.clock = clock
    parts = ReplicaParts(
        opts=opts, engine=engine or make_engine("arrow", load_dimension(DEFAULT_DIMENSION)),
        events=EventLog("r-1", opts.event_log, clock, echo=io.StringIO()),
        metrics=ReplicaMetrics(clock), store=ParquetStore(opts.store, "r-1", "1"),
        clock=clock, make_consumer=lambda conf: consumer, serve_http=False)
    replica = Replica(parts)
    if isinstance(clock, SignalClock):
        clock.replica = replica
    return replica


def _stop_after(n_consumes: int):
    def hook(consumer: FakeConsumer) -> None:
        if consumer.consumed > n_consumes:
            hook.replica._on_signal(signal.SIGTERM, None)
    return hook


def test_replica_processes_commits_drains_and_exits_zero(tmp_path) -> None:
    consumer = FakeConsumer(partitions=[0, 1], batches=[
        messages([(0, 0), (1, 0), (0, 1)]), messages([(1, 1), (1, 2)], first_seq=3)])
    replica = _replica(tmp_path, consumer, FakeClock())
    consumer.on_consume = hook = _stop_after(3)
    hook.replica = replica
    assert replica.run() == 0
    assert consumer.commits == [{0: 2, 1: 1}, {1: 3}]
    assert consumer.closed and consumer.topics == ["events"]
    assert read_store(tmp_path / "store").num_rows == 5
    names = [e["event"] for e in read_events(tmp_path / "events.jsonl")]
    assert names[:4] == ["started", "metrics_listening", "engine_ready", "subscribed"]
    assert names[4:8] == ["assigned", "joined", "ready", "first_record"]
    assert names[-5:] == ["sigterm", "drained", "revoked", "closed", "exited"]


def test_sigterm_mid_batch_commits_exactly_the_written_prefix(tmp_path) -> None:
    clock = SignalClock(at_s=0.02)  # two waves of 2 records, then SIGTERM
    consumer = FakeConsumer(partitions=[0], batches=[messages([(0, i) for i in range(10)])])
    replica = _replica(tmp_path, consumer, clock)
    assert replica.run() == 0
    assert consumer.commits == [{0: 4}]
    store = read_store(tmp_path / "store")
    assert store.column("offset").to_pylist() == [0, 1, 2, 3]
    assert consumer.consumed == 1  # stopped fetching


def test_sigterm_before_joining_exits_zero_without_a_consumer(tmp_path) -> None:
    class SlowEngine:
        name = "arrow"

        def start(self):
            replica._on_signal(signal.SIGTERM, None)
            return self

        def enrich(self, records):
            raise AssertionError("no batch expected")

        def stop(self) -> None:
            pass

    consumer = FakeConsumer(partitions=[0])
    replica = _replica(tmp_path, consumer, FakeClock(), engine=SlowEngine())
    assert replica.run() == 0
    assert consumer.consumed == 0 and not consumer.closed


def test_static_member_close_is_recorded_as_not_leaving(tmp_path) -> None:
    consumer = FakeConsumer(partitions=[0])
    replica = _replica(tmp_path, consumer, FakeClock(), "--instance-id", "replica-0")
    consumer.on_consume = hook = _stop_after(1)
    hook.replica = replica
    assert replica.run() == 0
    closed = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "closed"]
    assert closed[0]["left_group"] is False and closed[0]["static_member"] is True


def test_engine_failure_exits_one_without_committing(tmp_path) -> None:
    class BrokenEngine:
        name = "arrow"

        def start(self):
            return self

        def enrich(self, records):
            raise RuntimeError("py4j gateway gone")

        def stop(self) -> None:
            pass

    consumer = FakeConsumer(partitions=[0], batches=[messages([(0, 0)])])
    replica = _replica(tmp_path, consumer, FakeClock(), engine=BrokenEngine())
    assert replica.run() == 1
    assert consumer.commits == [] and consumer.closed
    errors = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "error"]
    assert errors[0]["where"] == "batch" and "py4j gateway gone" in errors[0]["error"]


def test_ready_needs_engine_and_first_assignment_and_ends_with_the_drain(tmp_path) -> None:
    consumer = FakeConsumer(partitions=[0])
    replica = _replica(tmp_path, consumer, FakeClock())
    gauge = replica.p.metrics.ready
    assert replica.readiness() == (False, "r-1: engine arrow starting")
    assert gauge.collect()[0].samples[0].value == 0
    states = []
    consumer.on_consume = lambda c: states.append(
        (replica.readiness()[0], gauge.collect()[0].samples[0].value)) or (
        c.consumed > 2 and replica._on_signal(signal.SIGTERM, None))
    assert replica.run() == 0
    assert states[:3] == [(True, 1), (True, 1), (True, 1)]
    assert replica.readiness() == (False, "r-1: draining")
    assert gauge.collect()[0].samples[0].value == 0  # replica_ready follows /ready


def test_event_lines_carry_wall_and_monotonic_time(tmp_path) -> None:
    echo = io.StringIO()
    clock = FakeClock(12.5)
    EventLog("r-9", tmp_path / "e.jsonl", clock, echo).emit("joined", partitions=[1])
    line = json.loads(echo.getvalue())
    assert line["event"] == "joined" and line["replica_id"] == line["source"] == "r-9"
    assert line["pid"] == os.getpid() and line["monotonic_s"] == 12.5 and line["partitions"] == [1]
    assert line["wall_time"].endswith("+00:00") and "T" in line["wall_time"]
    assert read_events(tmp_path / "e.jsonl") == [line]


@pytest.mark.parametrize("path, status", [
    pytest.param("/metrics", "200 OK", id="metrics"),
    pytest.param("/ready", "503 Service Unavailable", id="ready-before-join"),
    pytest.param("/healthz", "200 OK", id="healthz-while-starting"),
    pytest.param("/nope", "404 Not Found", id="unknown"),
])
def test_http_routes(tmp_path, path: str, status: str) -> None:
    replica = _replica(tmp_path, FakeConsumer(partitions=[0]), FakeClock())
    seen = []
    body = b"".join(replica.server._app({"PATH_INFO": path, "REQUEST_METHOD": "GET"},
                                        lambda s, h: seen.append(s)))
    assert seen == [status]
    if path == "/metrics":
        text = body.decode()
        for name in ("records_processed_total", "consume_rate", "inflight",
                     "rebalances_total", "rebalance_duration_seconds_bucket",
                     "assigned_partitions", "replica_ready", "replica_live"):
            assert f"\n{name}" in text or text.startswith(name), name


def _get(replica: Replica, path: str) -> tuple[str, str]:
    seen: list[str] = []
    body = b"".join(replica.server._app({"PATH_INFO": path, "REQUEST_METHOD": "GET"},
                                        lambda s, h: seen.append(s)))
    return seen[0], body.decode()


def _live_gauge(replica: Replica) -> float:
    return replica.p.metrics.live.collect()[0].samples[0].value


def test_healthz_turns_503_once_the_group_session_stays_broken_and_200_while_draining(
        tmp_path) -> None:
    # After the broker's 20 s SIGSTOP one replica kept no assignment and never rejoined: its
    # statistics said up / wait-join with nothing assigned. Before this rule /healthz said 200.
    clock = FakeClock()
    consumer = FakeConsumer(partitions=[0])
    replica = _replica(tmp_path, consumer, clock)
    confs: list[dict] = []
    replica.p.make_consumer = lambda conf: confs.append(conf) or consumer
    seen: list[tuple[float, bool, str, str, float]] = []

    def hook(c: FakeConsumer) -> None:
        if c.consumed == 1:  # assigned [0] in this consume(), then lost with the session
            c.callbacks["lost"](c, [FakeTopicPartition("t", 0)])
            c.partitions = []
            return
        confs[0]["stats_cb"](stats_json("up", "wait-join", assignment_size=0))
        status, body = _get(replica, "/healthz")
        seen.append((clock.now(), replica.liveness()[0], status, body, _live_gauge(replica)))
        if clock.now() > 15.0:
            replica._on_signal(signal.SIGTERM, None)

    consumer.on_consume = hook
    assert replica.run() == 0
    assert confs[0]["statistics.interval.ms"] == 1000
    healthy_until = max(t for t, live, *_ in seen if live)
    failed_from = min(t for t, live, *_ in seen if not live)
    assert healthy_until <= 10.0 < failed_from <= 10.0 + 1.0  # within one poll slice
    for t, live, status, body, gauge in seen:
        assert (status, gauge) == (("200 OK", 1.0) if live else ("503 Service Unavailable", 0.0))
        assert body.count("\n") == 1
    last = seen[-1][3]
    assert last.startswith("r-1: not live: group session broken, no healthy group moment for ")
    assert "join_state 'wait-join', 0 partitions assigned" in last
    failed = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == "liveness_failed"]
    assert len(failed) == 1 and 10.0 < failed[0]["since_healthy_s"] <= 11.0
    assert _get(replica, "/healthz") == ("200 OK", "r-1: live (draining)\n")


def test_a_slow_batch_keeps_the_replica_live(tmp_path) -> None:
    # A 40 s batch: the poll thread serves no statistics callback, the session is fine.
    clock = FakeClock()
    inner = make_engine("arrow", load_dimension(DEFAULT_DIMENSION))
    mid_batch: list[tuple[bool, str]] = []

    class SlowEngine:
        name = "arrow"

        def start(self):
            inner.start()
            return self

        def enrich(self, records):
            clock.advance(40.0)
            mid_batch.append(replica.liveness())
            return inner.enrich(records)

        def stop(self) -> None:
            inner.stop()

    consumer = FakeConsumer(partitions=[0], batches=[messages([(0, 0), (0, 1)])])
    replica = _replica(tmp_path, consumer, clock, engine=SlowEngine())
    after: list[bool] = []

    def hook(c: FakeConsumer) -> None:
        if c.consumed > 2:
            after.append(replica.liveness()[0])
            replica._on_signal(signal.SIGTERM, None)

    consumer.on_consume = hook
    assert replica.run() == 0
    assert mid_batch == [(True, "r-1: live (processing a batch)")]
    assert after == [True]  # the batch's end was a healthy moment
    names = [e["event"] for e in read_events(tmp_path / "events.jsonl")]
    assert "liveness_failed" not in names


def test_liveness_before_the_first_assignment_is_startup_business(tmp_path) -> None:
    replica = _replica(tmp_path, FakeConsumer(partitions=[0]), FakeClock())
    replica.p.clock.advance(120.0)
    assert replica.liveness() == (True, "r-1: live (engine arrow starting)")
    replica._engine_ready = True
    assert replica.liveness() == (True, "r-1: live (waiting for the first assignment)")


def test_a_commit_failed_in_a_rebalance_is_retried_while_no_batch_arrives(tmp_path) -> None:
    # The last batch's commit fails (ILLEGAL_GENERATION in a rebalance) and no record follows:
    # the replica retries the pending offsets from its idle polls, not only at close.
    consumer = FakeConsumer(partitions=[0], batches=[messages([(0, 0), (0, 1), (0, 2)])],
                            fail_commits=1)
    replica = _replica(tmp_path, consumer, FakeClock())
    seen: list[list[dict[int, int]]] = []

    def hook(c: FakeConsumer) -> None:
        if c.consumed == 8:
            seen.append(list(c.commits))
            replica._on_signal(signal.SIGTERM, None)

    consumer.on_consume = hook
    assert replica.run() == 0
    assert seen == [[{0: 3}]]  # committed before the SIGTERM, by an idle retry
    assert consumer.commits == [{0: 3}]
    names = [e["event"] for e in read_events(tmp_path / "events.jsonl")]
    assert names.count("commit_failed") == 1


def _drain_with_failed_commits(tmp_path, fail_commits: int):
    consumer = FakeConsumer(partitions=[0], batches=[messages([(0, 0), (0, 1), (0, 2)])],
                            fail_commits=fail_commits)
    replica = _replica(tmp_path, consumer, FakeClock())
    consumer.on_consume = lambda c: c.consumed == 2 and replica._on_signal(signal.SIGTERM, None)
    assert replica.run() == 0
    return consumer, read_events(tmp_path / "events.jsonl")


def test_a_drain_whose_commit_fails_serves_the_rebalance_and_commits_before_closing(
        tmp_path) -> None:
    # Seen in CI: the drain's commit failed (ILLEGAL_GENERATION), close()'s revoke retried it
    # during the rejoin (REBALANCE_IN_PROGRESS) and the next owner reprocessed the batch.
    consumer, events = _drain_with_failed_commits(tmp_path, fail_commits=3)
    assert consumer.commits == [{0: 3}]
    names = [e["event"] for e in events]
    assert names.index("drained") < names.index("commit_settled") < names.index("closed")
    settled = next(e for e in events if e["event"] == "commit_settled")
    assert settled["committed"] is True and settled["pending_offsets"] == {}
    assert "commit_abandoned" not in names


def test_a_drain_gives_up_settling_after_its_bound_and_the_revoke_abandons_the_offsets(
        tmp_path) -> None:
    consumer, events = _drain_with_failed_commits(tmp_path, fail_commits=10_000)
    assert consumer.commits == [] and consumer.closed
    settled = next(e for e in events if e["event"] == "commit_settled")
    assert settled["committed"] is False and settled["pending_offsets"] == {"0": 3}
    assert 0 < settled["waited_s"] <= 5.0 + 0.5
    abandoned = next(e for e in events if e["event"] == "commit_abandoned")
    assert abandoned["offsets"] == {"0": 3}


def test_the_sigterm_event_is_written_before_the_drain_can_start(tmp_path) -> None:
    """The stop-signal watcher is a thread of its own: a main thread that saw the stop flag
    before the sigterm line was written would write drained first (seen in CI as a drain log
    of sigterm, closed, exited). The line is written while the flag is still clear."""
    replica = _replica(tmp_path, FakeConsumer(partitions=[0]), FakeClock())
    seen: list[tuple[str, bool]] = []
    emit = replica.p.events.emit

    def recording_emit(event: str, **fields):
        seen.append((event, replica.stop_requested.is_set()))
        return emit(event, **fields)

    replica.p.events.emit = recording_emit
    replica._on_signal(signal.SIGTERM, None)
    replica._on_signal(signal.SIGTERM, None)  # once
    assert seen == [("sigterm", False)] and replica.stop_requested.is_set()
    replica._watchdog.cancel()
