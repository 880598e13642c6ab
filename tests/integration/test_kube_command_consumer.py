"""A command consumer on ``--platform kubernetes``: the committed franz-go Deployment's pods run
by the node agent as the lab's own consumer (examples/franz-go-consumer), not as the replica
program. Checked on the real local control plane: each pod gets its own port through the
manifest's port variable, is Ready by its own ``httpGet /healthz`` probe on that port, serves
the lab's ``/metrics`` names there, consumes the run's topic as a member of the run's group, and
on a scale to 0 drains and leaves the group within its grace period (exit 0).

Skipped when the control plane's binaries or the consumer are not built (the reason names the
command that builds them).
"""

from __future__ import annotations

import subprocess
import urllib.request
import uuid

import pytest

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.kube import build
from pytest_lagscale.kube.policy import hpa_timing
from pytest_lagscale.platform.kubernetes import KubernetesDeployment
from pytest_lagscale.platform.local import template_from_deployment

from ._kube import K8S, wait_for as _wait

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kube-platform")]
ROOT = K8S.parent
RECORDS = 2_000


@pytest.fixture
def franz_go(kafka_cluster, tmp_path):
    reason = build.missing_reason()
    if reason is not None:
        pytest.skip(f"--platform kubernetes: {reason}")
    built = subprocess.run([str(ROOT / "scripts" / "build-franz-go-consumer")],
                           capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        pytest.skip(f"franz-go consumer not built: {built.stderr.strip()[-300:]}")
    suffix = uuid.uuid4().hex[:8]
    topic, group, output = f"events-{suffix}", f"enrich-{suffix}", f"processed-{suffix}"
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers, kafka_cluster.client_config)
    admin.create_topic(topic, 4)
    admin.create_topic(output, 4)
    template = template_from_deployment(
        load_deployment(K8S / "franz-go-consumer-deployment-ci.yaml"),
        kafka_cluster.bootstrap_servers,
        connection={"KAFKA_TOPIC": topic, "KAFKA_GROUP": group, "KAFKA_OUTPUT_TOPIC": output})
    platform = KubernetesDeployment(template, tmp_path)
    platform.timing = hpa_timing(load_policy_manifest(K8S / "scaledobject-ci.yaml"))
    with platform:
        yield platform, topic, group, admin
    assert all(r.process.poll() is not None for r in platform.agent._pods.values())


def test_franz_go_pods_are_ready_by_their_own_probe_consume_and_leave_the_group_on_scale_down(
        franz_go, kafka_cluster) -> None:
    from confluent_kafka import Producer

    platform, topic, group, admin = franz_go
    platform.scale(2)
    platform.wait_ready(2, within_s=120)
    replicas = platform.replicas()
    ports = {r.metrics_port for r in replicas}
    assert len(ports) == 2, "each pod has its own port"
    assert sorted(platform.metrics_targets()) == sorted(f"127.0.0.1:{p}" for p in ports)
    for replica in replicas:
        argv = replica.process.argv
        assert argv[0].endswith("franz-go-consumer"), argv
        assert f"-metrics-addr=:{replica.metrics_port}" in argv
        assert not [a for a in argv if a.startswith("--")], "no replica-program flag added"
        body = urllib.request.urlopen(f"http://127.0.0.1:{replica.metrics_port}/metrics",
                                      timeout=5).read().decode()
        assert "consume_rate" in body and "assigned_partitions" in body

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers,
                         **kafka_cluster.client_config})
    for i in range(RECORDS):
        producer.produce(topic, key=str(i).encode(), value=b"x")
    producer.flush(30)

    _wait(lambda: sum(admin.committed_offsets(group, topic).values()) >= RECORDS, 60,
          f"{RECORDS} records committed by the group {group}")

    live = [r.process for r in replicas]
    platform.scale(0)
    platform.wait_terminated(45)
    _wait(lambda: all(p.poll() is not None for p in live), 45, "both pods' processes ended")
    assert [p.poll() for p in live] == [0, 0], [p.tail(5) for p in live]
    events = list(read_events(platform.layout.source_events("platform")))
    assert {e["event"] for e in events} >= {"replica_started", "replica_ready", "replica_stopped"}
    assert [e["engine"] for e in events if e["event"] == "image_prepared"] == ["command"]
