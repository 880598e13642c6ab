"""The embedded broker against a real JVM: start, readiness, stop, process-group cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka.admin import AdminClient

from pytest_lagscale.contract.errors import BrokerError
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.kafka.embedded import EmbeddedKafka
from pytest_lagscale.process import group_members
from pytest_lagscale.sources.broker import BrokerLagSource

pytestmark = pytest.mark.integration


def test_broker_starts_and_stops_leaving_no_process_of_its_group() -> None:
    with EmbeddedKafka(data_dir=None) as kafka:
        pgid = kafka.process.pid
        assert os.getpgid(pgid) == pgid  # its own process group
        assert group_members(pgid), "broker group has no live member while running"
        admin = KafkaAdmin(kafka.bootstrap_servers)
        admin.create_topic("probe", 3)
        assert admin.partition_count("probe") == 3  # the broker serves clients
        assert kafka.bootstrap_servers.startswith("127.0.0.1:")
        home = kafka.home
    assert kafka.process.stop_outcome == "terminated"  # SIGTERM sufficed (controlled shutdown)
    assert group_members(pgid) == []
    assert not home.exists(), "temporary data dir was not removed"


def test_broker_whose_port_another_broker_holds_starts_on_fresh_ports(monkeypatch,
                                                                       kafka_cluster) -> None:
    """Two pytest-xdist workers may be handed the same moment-ago-free port. The second broker
    must not take the first for itself (CI saw two runs share a broker that way and collide on
    one topic name): it waits for its own cluster id, and on a failed bind starts again."""
    from pytest_lagscale.kafka import embedded

    taken = int(kafka_cluster.bootstrap_servers.rsplit(":", 1)[1])
    ports = iter([taken])
    real_free_port = embedded.free_port
    monkeypatch.setattr(embedded, "free_port",
                        lambda host="127.0.0.1": next(ports, None) or real_free_port(host))
    with EmbeddedKafka() as kafka:
        assert kafka.port != taken
        assert kafka.cluster_id and kafka.cluster_id != kafka_cluster.cluster_id
        logs = sorted(p.name for p in (kafka.home / "logs").iterdir())
        assert "stdout.log.attempt-1" in logs or "server.log.attempt-1" in logs, logs
        KafkaAdmin(kafka.bootstrap_servers).create_topic("own-topic", 1)
        other = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
        assert "own-topic" not in other.list_topics(timeout=10).topics


def test_a_paused_broker_is_continued_and_stops_on_its_sigterm() -> None:
    """A broker left SIGSTOPped (a pause_broker fault, a run stopped mid-pause) gets SIGCONT
    with its SIGTERM, so its controlled shutdown runs instead of waiting for the SIGKILL (a
    process that ignores SIGTERM is killed after the grace period:
    tests/integration/test_process.py)."""
    kafka = EmbeddedKafka().start()
    try:
        kafka.process.signal(signal.SIGSTOP)
        outcome = kafka.stop(timeout_s=20.0)
    finally:
        kafka.stop()
    assert outcome == "terminated"
    assert group_members(kafka.process.pid) == []


def test_harness_interrupted_with_sigint_leaves_no_broker(tmp_path) -> None:
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import signal, sys, time
        from pytest_lagscale.kafka.embedded import EmbeddedKafka
        # Started under a pytest that a non-interactive shell put in the background (`cmd &`),
        # this child inherits an ignored SIGINT and the signal does nothing (seen: 60 s timeout);
        # a harness at a terminal has Python's default handler, as here.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with EmbeddedKafka() as k:
            print(k.process.pid, flush=True)
            time.sleep(120)
    """))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pgid = int(child.stdout.readline())
        assert group_members(pgid)
        child.send_signal(signal.SIGINT)
        assert child.wait(60) != 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    deadline = time.monotonic() + 10
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert group_members(pgid) == []


def test_topic_created_with_24_partitions_then_grown_to_48(kafka_cluster) -> None:
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic("grow-me", 24)
    assert admin.partition_count("grow-me") == 24
    admin.increase_partitions("grow-me", 48)
    assert admin.partition_count("grow-me") == 48
    assert sorted(admin.end_offsets("grow-me")) == list(range(48))
    with pytest.raises(BrokerError, match=r"topic 'grow-me': new partition total 40 must exceed "
                                          r"the current 48; partitions can only be increased"):
        admin.increase_partitions("grow-me", 40)


def test_lag_and_assignment_follow_keda_definition(kafka_cluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    bootstrap = kafka_cluster.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topic("lagged", 3)
    producer = Producer({"bootstrap.servers": bootstrap})
    for p, n in enumerate((10, 20, 30)):
        for i in range(n):
            producer.produce("lagged", b"x", partition=p)
    producer.flush(10)

    # Nothing committed: latest policy counts 1 per partition, earliest the whole log end.
    assert admin.partition_lag("g1", "lagged", "latest") == {0: 1, 1: 1, 2: 1}
    assert admin.partition_lag("g1", "lagged", "earliest") == {0: 10, 1: 20, 2: 30}

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g1",
                         "enable.auto.commit": False, "client.id": "member-a"})
    consumer.subscribe(["lagged"])
    try:
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.commit(offsets=[TopicPartition("lagged", 0, 4), TopicPartition("lagged", 2, 30)],
                        asynchronous=False)
        assert admin.group_offsets("g1", "lagged") == {0: (4, 10), 1: (-1, 20), 2: (30, 30)}
        assert admin.partition_lag("g1", "lagged", "earliest") == {0: 6, 1: 20, 2: 0}
        assert BrokerLagSource(admin, "g1", "lagged").read()[0] == (4, 10)
        state = admin.describe_group("g1", "lagged")
        assert [m.client_id for m in state.members] == ["member-a"]
        assert state.members[0].partitions == (0, 1, 2)
        assert state.protocol == "classic"
    finally:
        consumer.close()
