"""Experiment 10's triggers end to end on the embedded broker: a step in load, read through KEDA's
``prometheus`` trigger (the run's Prometheus scraping the lag exporter) or its ``aws-cloudwatch``
trigger (moto's server, fed every period by the SumOffsetLag publisher), scales the local
Deployment of real consumer replicas out, and the store holds exactly what was produced.

The ScaledObjects are k8s/scaledobject-{prometheus,cloudwatch}-ci.yaml with the numbers shrunk
to a one-minute test: replicas run ``--engine arrow`` at 1,000 records/s (``--process-ms 10
--inflight 10``), so the threshold is 5,000 records per replica and pollingInterval 1 s; the
CloudWatch period is 5 s over a 30 s window (the ci manifest's 10 s / 60 s, halved again). The
trigger's addresses are the manifest's; the reader maps them to the test's services, as a run
does (:class:`~pytest_lagscale.platform.value_triggers.RunServices`).
"""

from __future__ import annotations

import importlib.util
import shutil
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.config.policy import parse_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.platform.autoscaler import LocalAutoscaler
from pytest_lagscale.platform.local import LocalDeployment, template_from_deployment
from pytest_lagscale.platform.value_triggers import RunServices, ValueTriggerReader
from pytest_lagscale.sources import BrokerLagSource
from spark_consumer.store import read_store
from tests.replica_helpers import store_counts

from ._load_step import drained, produce_step

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed; run scripts/bootstrap (apt-get install prometheus)"),
]
K8S = Path(__file__).resolve().parents[2] / "k8s"
PARTITIONS, THRESHOLD_RECORDS, CLOUDWATCH_PERIOD_S = 8, 5_000, 5


def _policy(manifest: str) -> object:
    doc = yaml.safe_load((K8S / manifest).read_text(encoding="utf-8"))
    doc["spec"]["pollingInterval"] = 1
    metadata = doc["spec"]["triggers"][0]["metadata"]
    for key in ("threshold", "targetMetricValue"):
        if key in metadata:
            metadata[key] = str(THRESHOLD_RECORDS)
    if "metricStatPeriod" in metadata:
        metadata.update(metricStatPeriod=str(CLOUDWATCH_PERIOD_S), metricCollectionTime="30")
    return build_policy(parse_policy_manifest(doc, source=f"{manifest} (test values)"))


def _step_until_scaled_out(deployment: LocalDeployment, loader: threading.Thread, stop: threading.Event) -> int:
    """Start the load, watch the desired replicas until 4 (at most 45 s), stop the load; returns
    the peak."""
    loader.start()
    peak, started = 0, time.monotonic()
    try:
        while time.monotonic() - started < 45 and peak < 4:
            peak = max(peak, deployment.desired_replicas)
            time.sleep(0.25)
    finally:
        stop.set()
        loader.join(60)
    return peak


def _wait_drained(admin: KafkaAdmin, group: str, topic: str, within_s: float = 60.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and not drained(admin, group, topic):
        time.sleep(0.5)


def _produced_processed(admin: KafkaAdmin, topic: str, store: Path) -> tuple[int, int, int]:
    """(records produced, distinct (partition, offset) pairs in the store, duplicates)."""
    table = read_store(store)
    distinct, dups = store_counts(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist()))
    return sum(admin.end_offsets(topic).values()), distinct, dups


def _template(bootstrap: str, topic: str, group: str) -> object:
    """Arrow replicas at 1,000 records/s each."""
    return template_from_deployment(
        load_deployment(K8S / "consumer-deployment.yaml"), bootstrap,
        flag_overrides={"--topic": topic, "--group": group, "--engine": "arrow",
                        "--process-ms": "10", "--inflight": "10", "--drain-timeout": "10"})


def _services(stack: ExitStack, kind: str, admin: KafkaAdmin, group: str, topic: str, tmp_path: Path) -> RunServices:
    """The run's stand-ins: Prometheus scraping the lag exporter; for cloudwatch, moto and the
    SumOffsetLag publisher (every part on ``stack`` at once)."""
    from pytest_lagscale.observe.lag_exporter import serve_lag_exporter
    from pytest_lagscale.observe.prometheus import PrometheusServer

    prometheus = stack.enter_context(PrometheusServer(tmp_path / "prometheus"))
    exporter = stack.enter_context(
        serve_lag_exporter(BrokerLagSource(admin, group, topic), group, topic))
    prometheus.set_targets("lag_exporter", [f"127.0.0.1:{exporter.port}"])
    services = RunServices(prometheus_url=prometheus.url, cluster_name="lagscale-test", group=group, topic=topic,
                           manifest_group="enrich", manifest_topic="events")
    if kind != "aws-cloudwatch":
        return services
    from pytest_lagscale.counterparts.lag_publisher import LagPublisher, PublishTarget
    from pytest_lagscale.counterparts.moto_server import CREDENTIALS, MotoServer

    moto = stack.enter_context(MotoServer(tmp_path / "moto.log"))
    publisher = LagPublisher.from_broker(admin, moto.client(), PublishTarget("lagscale-test", group, topic),
                                         period_s=CLOUDWATCH_PERIOD_S)
    stack.enter_context(publisher)
    return RunServices(**{**services.__dict__, "aws_endpoint": moto.url, "aws_credentials": CREDENTIALS})


@pytest.mark.parametrize(("kind", "manifest"), [
    pytest.param("prometheus", "scaledobject-prometheus-ci.yaml", id="prometheus"),
    pytest.param("aws-cloudwatch", "scaledobject-cloudwatch-ci.yaml", id="aws-cloudwatch",
                 marks=pytest.mark.skipif(importlib.util.find_spec("moto") is None,
                                          reason="moto[server] not installed; pip install 'pytest-lagscale[sources]'")),
])
def test_a_lag_step_read_through_the_trigger_scales_out_processing_exactly_what_was_produced(
        kafka_cluster, tmp_path: Path, kind: str, manifest: str) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = f"events-{kind}", f"enrich-{kind}"
    admin = KafkaAdmin(bootstrap)
    admin.create_topic(topic, PARTITIONS)
    policy = _policy(manifest)
    template = _template(bootstrap, topic, group)
    stop_load = threading.Event()
    delivered: list[int] = []
    loader = threading.Thread(target=lambda: delivered.append(
        produce_step(bootstrap, topic, stop_load, step_rate_per_s=4000)))
    events_path = tmp_path / "controller.events.jsonl"
    with ExitStack() as stack:
        services = _services(stack, kind, admin, group, topic, tmp_path)
        deployment = stack.enter_context(LocalDeployment(template, tmp_path, graceful=True))
        deployment.scale(1)
        deployment.wait_ready(1, within_s=60)
        scaler = LocalAutoscaler(policy, deployment, BrokerLagSource(admin, group, topic), events_path,
                                 value_triggers=ValueTriggerReader(services))
        stack.enter_context(scaler.start(tick_s=0.25))
        peak = _step_until_scaled_out(deployment, loader, stop_load)
        _wait_drained(admin, group, topic)
    produced, distinct, dups = _produced_processed(admin, topic, deployment.store_dir)
    events = list(read_events(events_path))
    decisions = [e for e in events if e["event"] == "decision" and e["desired_replicas"] > e["current_replicas"]]
    staleness = [e["signal"]["triggers"]["0"]["staleness_s"] for e in decisions]
    print(f"{kind} step: peak {peak}, decisions {[(e['current_replicas'], e['desired_replicas']) for e in decisions]}, "
          f"staleness at decision {staleness} s, produced {produced}, processed {distinct}, duplicated {dups}")

    assert peak >= 4, f"no scale-out on the step read through {kind}: peak {peak}"
    assert all(e["signal"]["triggers"]["0"]["type"] == kind for e in decisions)
    assert all(s is not None and s >= 0 for s in staleness), staleness
    if kind == "aws-cloudwatch":  # the newest complete period: at least one period old
        assert min(staleness) >= CLOUDWATCH_PERIOD_S - 0.5, staleness
    assert (produced, distinct, dups) == (delivered[0], produced, 0), "processed != produced"


@pytest.mark.skipif(importlib.util.find_spec("moto") is None,
                    reason="moto[server] not installed; pip install 'pytest-lagscale[sources]'")
def test_lag_per_slot_on_cloudwatch_scales_out_on_the_published_lag(kafka_cluster, tmp_path: Path) -> None:
    """``--lag-source cloudwatch`` at the controller: the recipe's policy (lag-per-slot-ci.yaml,
    lagPerSlot 5,000 and pollingInterval 1 for this test's 1,000 records/s replicas) decides on
    CloudWatch's SumOffsetLag as MSK publishes it, never on the broker's offsets."""
    import boto3

    from pytest_lagscale.counterparts.moto_server import CREDENTIALS
    from pytest_lagscale.sources.cloudwatch import CloudWatchLagSource, CloudWatchSettings

    bootstrap = kafka_cluster.bootstrap_servers
    topic, group = "events-lps-cloudwatch", "enrich-lps-cloudwatch"
    admin = KafkaAdmin(bootstrap)
    admin.create_topic(topic, PARTITIONS)
    doc = yaml.safe_load((K8S / "lag-per-slot-ci.yaml").read_text(encoding="utf-8"))
    doc["spec"].update(lagPerSlot=THRESHOLD_RECORDS, scaleDownLag=1_000, cooldownSeconds=8, pollingInterval=1)
    policy = build_policy(parse_policy_manifest(doc, source="lag-per-slot-ci.yaml (test values)"))
    stop_load, delivered = threading.Event(), []
    loader = threading.Thread(target=lambda: delivered.append(
        produce_step(bootstrap, topic, stop_load, step_rate_per_s=4000)))
    with ExitStack() as stack:
        services = _services(stack, "aws-cloudwatch", admin, group, topic, tmp_path)
        settings = CloudWatchSettings.from_options(group, topic, {
            "cluster_name": services.cluster_name, "endpoint_url": services.aws_endpoint,
            "period_s": CLOUDWATCH_PERIOD_S, "window_s": 30})
        source = CloudWatchLagSource(settings, client=boto3.client(
            "cloudwatch", region_name="us-east-1", endpoint_url=services.aws_endpoint, **CREDENTIALS))
        broker = BrokerLagSource(admin, group, topic)
        deployment = stack.enter_context(LocalDeployment(_template(bootstrap, topic, group), tmp_path, graceful=True))
        deployment.scale(2)
        deployment.wait_ready(2, within_s=60)
        scaler = LocalAutoscaler(policy, deployment, broker, tmp_path / "controller.events.jsonl",
                                 total_lag_source=source)
        stack.enter_context(scaler.start(tick_s=0.25))
        peak = _step_until_scaled_out(deployment, loader, stop_load)
        _wait_drained(admin, group, topic)
    produced, distinct, dups = _produced_processed(admin, topic, deployment.store_dir)
    ups = [e for e in read_events(tmp_path / "controller.events.jsonl")
           if e["event"] == "decision" and e["desired_replicas"] > e["current_replicas"]]
    print(f"lag-per-slot on cloudwatch: peak {peak}, staleness at decision "
          f"{[e['signal']['staleness_s'] for e in ups]} s, produced {produced}, processed {distinct}")

    assert peak >= 4, f"no scale-out on the published lag: peak {peak}"
    assert all(e["signal"]["source"] == "cloudwatch" and e["signal"]["staleness_s"] >= 0 for e in ups), ups
    assert (produced, distinct, dups) == (delivered[0], produced, 0), "processed != produced"

