"""The example franz-go consumer (examples/franz-go-consumer) against the embedded broker,
measured from the broker's side only: the group observer sees both members join and one leave
on SIGTERM, and the output topic holds every input record exactly once (its input partition
and offset headers)."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.kafka.embedded import free_port
from pytest_lagscale.observe.group import GroupObserver
from pytest_lagscale.process import ManagedProcess
from pytest_lagscale.wait import probe_ready

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
RECORDS, PARTITIONS = 600, 6


@pytest.fixture(scope="module")
def consumer_binary() -> str:
    """The built consumer (scripts/build-franz-go-consumer: cached by content, built when Go is
    on PATH); the test is skipped, naming the reason, when it cannot be built."""
    out = subprocess.run([str(ROOT / "scripts" / "build-franz-go-consumer")],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0 or not out.stdout.strip():
        pytest.skip(f"franz-go consumer not built: {out.stderr.strip()[-300:]}")
    return out.stdout.strip()


@pytest.fixture
def started() -> Iterator[list[ManagedProcess]]:
    """The consumers a test starts; each is stopped (SIGTERM, then SIGKILL) afterwards."""
    processes: list[ManagedProcess] = []
    yield processes
    for process in processes:
        process.stop(timeout_s=25)


def _read_output(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    inputs, idle_since = [], time.monotonic()
    try:
        while time.monotonic() - idle_since < 3:
            msg = reader.poll(0.5)
            if msg is None or msg.error():
                continue
            idle_since = time.monotonic()
            headers = dict(msg.headers() or [])
            inputs.append((int(headers["lagscale-input-partition"]),
                           int(headers["lagscale-input-offset"])))
    finally:
        reader.close()
    return inputs


def test_two_members_drain_a_backlog_exactly_once_and_one_leaves_on_sigterm(
        kafka_cluster: Any, consumer_binary: str, started: list[ManagedProcess],
        tmp_path: Path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topic, output, group = f"fg-in-{suffix}", f"fg-out-{suffix}", f"fg-{suffix}"
    admin = KafkaAdmin(bootstrap)
    try:
        admin.create_topic(topic, PARTITIONS)
        admin.create_topic(output, PARTITIONS)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(RECORDS):
            producer.produce(topic, value=f"r{i}".encode(), partition=i % PARTITIONS)
        assert producer.flush(30) == 0
        ports = {}
        with GroupObserver(admin, group, topic, tmp_path / "group.events.jsonl",
                           interval_s=0.25) as observer:
            for name in ("a", "b"):
                ports[name] = free_port()
                started.append(ManagedProcess(
                    f"franz-go-{name}", [consumer_binary, "-topic", topic, "-group", group,
                                         "-balancer", "cooperative-sticky", "-process-ms", "20",
                                         "-max-inflight", "5", "-output-topic", output,
                                         "-drain-timeout", "20s", "-metrics-addr",
                                         f"127.0.0.1:{ports[name]}"],
                    env={"KAFKA_BOOTSTRAP": bootstrap},
                    log_path=tmp_path / f"{name}.log").start())
            deadline = time.monotonic() + 60
            while not all(probe_ready(port, "/healthz") for port in ports.values()):
                assert time.monotonic() < deadline, "the consumers never became ready"
                time.sleep(0.2)
            while len({e["member_id"] for e in observer.history.events
                       if e["event"] == "member_assigned"}) < 2:  # seen by the broker too
                assert time.monotonic() < deadline, observer.history.events
                time.sleep(0.2)
            first = started[0]
            first.signal(signal.SIGTERM)
            assert first.wait(25) == 0  # drained, committed, left the group
            deadline = time.monotonic() + 60
            while sum(admin.committed_offsets(group, topic).values()) < RECORDS:
                assert time.monotonic() < deadline, admin.committed_offsets(group, topic)
                time.sleep(0.5)
        events = [e["event"] for e in observer.history.events]
        assert "member_left" in events and observer.failures == 0
        inputs = _read_output(bootstrap, output)
        assert len(inputs) == RECORDS and len(set(inputs)) == RECORDS  # none lost, none twice
        assert sorted(set(p for p, _ in inputs)) == list(range(PARTITIONS))
    finally:
        admin.close()
