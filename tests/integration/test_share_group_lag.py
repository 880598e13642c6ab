"""Share-group lag (KIP-932, KIP-1226) against the real broker: the ``share-group`` lag source and
the share-group scaler served over KEDA's external scaler protocol (``lagscale scaler serve
--kind share-group``), both read from a live share group of real ShareConsumers."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

grpc = pytest.importorskip("grpc", reason="grpcio missing: pip install -e '.[scaler]'")
confluent_kafka = pytest.importorskip("confluent_kafka")

from pytest_lagscale.kafka.admin import KafkaAdmin  # noqa: E402
from pytest_lagscale.kafka.share_admin import ShareGroupAdmin  # noqa: E402
from pytest_lagscale.scalers.externalscaler.client import (  # noqa: E402
    ExternalScalerClient,
    ExternalScalerError,
    MetricSpecValue,
    scaled_object_ref,
)
from pytest_lagscale.scalers.persistent_lag.server import ScalerServer  # noqa: E402
from pytest_lagscale.sources import make_lag_source  # noqa: E402
from pytest_lagscale.sources.share_group import ShareGroupLagSource  # noqa: E402

pytestmark = pytest.mark.integration
PER_PARTITION = 300


@pytest.fixture
def share_topic(kafka_cluster):
    """A 2-partition topic holding 300 records in each partition; yields (admin, topic)."""
    from confluent_kafka import Producer

    topic = f"share-{uuid.uuid4().hex[:8]}"
    with KafkaAdmin(kafka_cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, 2)
        producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})
        for i in range(2 * PER_PARTITION):
            producer.produce(topic, value=b"%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        yield admin, topic


@pytest.fixture(scope="module")
def share_admin(kafka_cluster):
    """One share-group admin service (a JVM) for the module's tests."""
    with ShareGroupAdmin(kafka_cluster.bootstrap_servers) as share:
        yield share


def consume(bootstrap: str, group: str, topic: str, records: int, *, timeout_s: float = 30.0) -> int:
    """Accept ``records`` records as one member of share group ``group`` (explicit
    acknowledgement, committed), then leave; returns how many it accepted."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "max.poll.records": 50})
    consumer.subscribe([topic])
    accepted, deadline = 0, time.monotonic() + timeout_s
    try:
        while accepted < records and time.monotonic() < deadline:
            batch = consumer.poll(1.0)
            for message in batch:
                kind = AcknowledgeType.ACCEPT if accepted < records else AcknowledgeType.RELEASE
                consumer.acknowledge(message, kind)
                accepted += kind == AcknowledgeType.ACCEPT
            if len(batch):
                consumer.commit_sync(10.0)
    finally:
        consumer.close()
    return accepted


def wait_for(read: Callable[[], object], done: Callable[[object], bool], within_s: float = 20.0) -> object:
    """Call ``read`` until ``done(value)``; returns the value (fails with every value seen)."""
    seen: list[object] = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        value = read()
        if done(value):
            return value
        if not seen or seen[-1] != value:
            seen.append(value)
        time.sleep(0.25)
    pytest.fail(f"not done within {within_s} s; saw {seen}")


def test_share_lag_counts_undelivered_partitions_from_the_groups_reset(share_topic, share_admin) -> None:
    admin, topic = share_topic
    early, late = f"{topic}-early", f"{topic}-late"
    admin.alter_group_config(early, {"share.auto.offset.reset": "earliest"})
    admin.alter_group_config(late, {"share.auto.offset.reset": "latest"})

    parts = ShareGroupLagSource(admin, early, topic, share_admin=share_admin).read_partitions()
    assert {p: (v.lag_records, v.counted) for p, v in parts.items()} == {
        0: (PER_PARTITION, "reset-earliest"), 1: (PER_PARTITION, "reset-earliest")}
    latest = ShareGroupLagSource(admin, late, topic, share_admin=share_admin)
    assert latest.total_lag().lag_records == 0.0
    assert {v.counted for v in latest.read_partitions().values()} == {"reset-latest"}

    admin.alter_group_config(early, {"share.auto.offset.reset": "by_duration:PT1H"})
    unknown = ShareGroupLagSource(admin, early, topic, share_admin=share_admin)
    assert unknown.total_lag().lag_records is None, "a lag it cannot count is no value, never 0"


def test_share_lag_follows_acknowledgements_to_zero(kafka_cluster, share_topic, share_admin) -> None:
    admin, topic = share_topic
    group = f"{topic}-g"
    admin.alter_group_config(group, {"share.auto.offset.reset": "earliest"})
    source = ShareGroupLagSource(admin, group, topic, share_admin=share_admin)
    assert source.total_lag().lag_records == 2 * PER_PARTITION

    accepted = consume(kafka_cluster.bootstrap_servers, group, topic, 2 * PER_PARTITION)
    assert accepted == 2 * PER_PARTITION
    parts = wait_for(source.read_partitions, lambda v: all(p.lag_records == 0 for p in v.values()))
    assert {v.counted for v in parts.values()} == {"broker"}, parts
    # the start offset is the persisted share state's, which moves lazily (0 here after every
    # record was accepted, docs/lag-sources.md): the lag, not the start offset, is the signal
    assert all(v.start_offset is not None for v in parts.values()), parts
    reading = source.total_lag()
    assert (reading.lag_records, reading.source, reading.staleness_s) == (0.0, "share-group", 0.0)
    # the group observer's view of it: the member has left
    state = share_admin.describe_group(group, topic)
    assert (state.state, state.protocol, state.members) == ("EMPTY", "share", ())
    assert share_admin.describe_group(f"{group}-never", topic).state == "DEAD"


def test_the_registry_builds_it_and_it_stops_its_own_service(share_topic) -> None:
    admin, topic = share_topic
    group = f"{topic}-reg"
    admin.alter_group_config(group, {"share.auto.offset.reset": "earliest"})
    source = make_lag_source("share-group", admin, group, topic)
    assert source.total_lag().lag_records == 2 * PER_PARTITION
    service = source._share_admin.process
    source.close()
    assert service.poll() is not None, "close() leaves no JVM behind"


def test_scaler_answers_keda_for_a_live_share_group(kafka_cluster, share_topic) -> None:
    admin, topic = share_topic
    group = f"{topic}-keda"
    admin.alter_group_config(group, {"share.auto.offset.reset": "earliest"})
    meta = {"scalerAddress": "lagscale-share:6000", "bootstrapServers": kafka_cluster.bootstrap_servers,
            "shareGroup": group, "topic": topic, "lagThreshold": "100", "activationLagThreshold": "10"}
    ref = scaled_object_ref("consumer", "default", meta)
    metric = f"share-group-lag-{topic}"
    with ScalerServer("127.0.0.1", 0, kind="share-group") as server, ExternalScalerClient(server.address) as client:
        assert client.metric_specs(ref) == [MetricSpecValue(metric, 100.0)]
        assert client.metrics(ref, metric) == [(metric, float(2 * PER_PARTITION))]
        assert client.is_active(ref) is True

        with pytest.raises(ExternalScalerError) as bad:
            client.metric_specs(scaled_object_ref("consumer", "default", {**meta, "lagThreshold": "0",
                                                                          "consumerGroup": group}))
        assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "'lagThreshold': got '0'" in bad.value.details and "'consumerGroup'" in bad.value.details
        with pytest.raises(ExternalScalerError) as wrong:
            client.metrics(ref, "s0-" + metric)
        assert wrong.value.code == grpc.StatusCode.INVALID_ARGUMENT

        consume(kafka_cluster.bootstrap_servers, group, topic, 2 * PER_PARTITION - 5)
        values = wait_for(lambda: client.metrics(ref, metric)[0][1], lambda v: v == 5.0)
        assert values == 5.0
        assert client.is_active(ref) is False, "5 records of lag is under activationLagThreshold 10"
        service = server.servicer.source_factory._admins[kafka_cluster.bootstrap_servers][1].process
    assert service.poll() is not None, "stopping the server stops its share-group admin service"


def test_scaler_process_serves_share_group_and_exits_cleanly(kafka_cluster, share_topic, share_admin) -> None:
    admin, topic = share_topic
    group = f"{topic}-proc"
    admin.alter_group_config(group, {"share.auto.offset.reset": "earliest"})
    proc = subprocess.Popen([sys.executable, "-m", "pytest_lagscale.cli", "scaler", "serve", "--port", "0",
                             "--kind", "share-group"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert first.startswith("listening on 127.0.0.1:"), first
        ref = scaled_object_ref("c", "default", {"bootstrapServers": kafka_cluster.bootstrap_servers,
                                                 "shareGroup": group, "topic": topic, "lagThreshold": "50"})
        with ExternalScalerClient(first.removeprefix("listening on ")) as client:
            assert client.metrics(ref, f"share-group-lag-{topic}") == [(f"share-group-lag-{topic}", 600.0)]
            assert client.is_active(ref) is True
        # its own service only: the other xdist worker may be starting this module's at any time
        started = share_admin_pids(parent=proc.pid)
        assert started, "the scaler process started no share-group admin service"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "stopped (SIGTERM)" in out
    left = [pid for pid in started if is_share_admin(pid)]
    assert not left, f"share-admin JVMs left behind: {left}"


def share_admin_pids(parent: int) -> list[str]:
    """Pids of the running share-group admin services that process ``parent`` started."""
    argv = ["pgrep", "-P", str(parent), "-f", "ShareGroupAdmin.java"]
    return subprocess.run(argv, capture_output=True, text=True).stdout.split()


def is_share_admin(pid: str) -> bool:
    """Whether ``pid`` is still a share-group admin service (gone or a zombie: False; a pid
    reused by another such service within the test would read True)."""
    try:
        return b"ShareGroupAdmin.java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
