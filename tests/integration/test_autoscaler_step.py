"""The autoscaler's end-to-end check: a step in load on the embedded broker drives the local Deployment
of real consumer replicas up on lag and back to minReplicaCount; every HPA decision in the
controller's event log replays to the same result through ``HorizontalPodAutoscaler.decide``.

Replicas run ``--engine arrow`` so eight of them fit a 2-core CI machine; the Spark engine is
covered by the consumer's own tests.
"""

from __future__ import annotations

import threading
import time

import pytest
import yaml

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.config.scaledobject import load_scaled_object
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.platform.autoscaler import LocalAutoscaler
from pytest_lagscale.platform.local import LocalDeployment, template_from_deployment
from pytest_lagscale.sources import BrokerLagSource

pytestmark = pytest.mark.integration
TOPIC, GROUP, PARTITIONS = "events-step", "enrich-step", 8


def _produce_step(bootstrap: str, stop: threading.Event) -> int:
    """200 rec/s for 5 s, 6000 rec/s for 10 s, then 200 rec/s until stopped."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    payload, sent, started = bytes(280), 0, time.monotonic()
    while not stop.is_set():
        elapsed = time.monotonic() - started
        rate = 6000 if 5 <= elapsed < 15 else 200
        due = int(rate * 0.05)
        for _ in range(due):
            producer.produce(TOPIC, payload, key=str(sent).encode())
            sent += 1
        producer.poll(0)
        time.sleep(0.05)
    producer.flush(30)
    return sent


def test_step_in_load_scales_out_on_lag_and_back_to_min(kafka_cluster, tmp_path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topic(TOPIC, PARTITIONS)
    so = load_scaled_object("k8s/scaledobject-ci.yaml")
    template = template_from_deployment(
        load_deployment("k8s/consumer-deployment.yaml"), bootstrap,
        flag_overrides={"--topic": TOPIC, "--group": GROUP, "--engine": "arrow",
                        "--process-ms": "10", "--inflight": "10", "--drain-timeout": "10"})
    stop_load = threading.Event()
    sent: list[int] = []
    loader = threading.Thread(target=lambda: sent.append(_produce_step(bootstrap, stop_load)))
    with LocalDeployment(template, tmp_path, graceful=True) as deployment:
        deployment.scale(so.min_replica_count)
        deployment.wait_ready(so.min_replica_count, within_s=60)
        scaler = LocalAutoscaler(build_policy(so), deployment, BrokerLagSource(admin, GROUP, TOPIC),
                                 tmp_path / "controller.events.jsonl")
        with scaler.start(tick_s=0.25):
            loader.start()
            peak, deadline = 0, time.monotonic() + 240
            try:
                # Scale-out while the step lasts, then back to the floor.
                while time.monotonic() < deadline:
                    peak = max(peak, deployment.desired_replicas)
                    if peak >= 4 and deployment.desired_replicas == \
                            so.min_replica_count and _elapsed(scaler) > 40:
                        break
                    time.sleep(0.5)
            finally:
                stop_load.set()
                loader.join(60)
        final = deployment.desired_replicas
    print(f"autoscaler step: peak desired replicas {peak}, final {final}, "
          f"{len(scaler.decisions)} decisions over {_elapsed(scaler):.0f} s, sent {sent}")
    assert peak >= 4, f"no scale-out on lag: peak desired replicas {peak}"
    assert final == so.min_replica_count, f"did not return to minReplicaCount: {final}"

    syncs = [e for e in read_events(tmp_path / "controller.events.jsonl")
             if e["event"] == "hpa_sync"]
    doc = yaml.safe_load(open("k8s/scaledobject-ci.yaml"))
    replay = HorizontalPodAutoscaler(
        so.hpa_min_replicas, so.hpa_max_replicas,
        doc["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"],
        so.harness.hpa_tolerance, so.harness.hpa_downscale_stabilization_s)
    assert [replay.decide(e["now_s"], e["replicas_before"], e["proposal"]) for e in syncs] == \
        [e["replicas_after"] for e in syncs]
    reasons = {e["reason"] for e in syncs}
    assert "ScaleUpLimit" in reasons or "DesiredWithinRange" in reasons


def _elapsed(scaler: LocalAutoscaler) -> float:
    return scaler.decisions[-1].now_s - scaler.decisions[0].now_s if scaler.decisions else 0.0
