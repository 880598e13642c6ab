"""The Kafka Streams article's policy end to end on the embedded broker: each replica exports its
own lag (``consumer_records_lag``), the run's Prometheus scrapes it, the committed
``hpa-pods-lag-ci.yaml`` HPA reads it per pod as prometheus-adapter would and scales the local
Deployment out; nothing is lost or duplicated; the gauge agrees with the broker's offsets.

Replicas run ``--engine arrow`` (as tests/integration/test_autoscaler_step.py) so eight of them fit
a 2-core CI machine. Needs the ``prometheus`` binary.
"""

from __future__ import annotations

import shutil
import statistics
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.control.hpa import MetricError, PodMetric, proposal_for_pods_metric
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.observe.prometheus import PrometheusServer
from pytest_lagscale.platform.autoscaler import LocalAutoscaler
from pytest_lagscale.platform.local import LocalDeployment, template_from_deployment
from pytest_lagscale.platform.pod_metrics import PrometheusPodMetrics
from pytest_lagscale.sources import BrokerLagSource
from spark_consumer.store import read_store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed; run scripts/bootstrap (apt-get install prometheus)"),
]
TOPIC, GROUP, PARTITIONS = "events-pods", "enrich-pods", 8
BASE_S, SPIKE_S, TAIL_S, BASE_RATE, SPIKE_RATE = 5.0, 10.0, 5.0, 200, 6000


def _produce(bootstrap: str, marks: dict[str, float]) -> int:
    """200 rec/s for 5 s, 6,000 rec/s for 10 s, 200 rec/s for 5 s; returns records acked."""
    from confluent_kafka import Producer

    acked = [0]

    def delivered(err, msg) -> None:
        if err is None:
            acked[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    payload, sent, started = bytes(280), 0, time.monotonic()
    marks["load_start"] = started
    marks["spike_start"] = started + BASE_S
    marks["spike_start_wall_ns"] = time.time_ns() + int(BASE_S * 1e9)
    while (elapsed := time.monotonic() - started) < BASE_S + SPIKE_S + TAIL_S:
        while sent < _due(elapsed):
            producer.produce(TOPIC, payload, key=str(sent).encode(), on_delivery=delivered)
            sent += 1
        producer.poll(0)
        time.sleep(0.02)
    assert producer.flush(30) == 0
    marks["load_end"] = time.monotonic()
    return acked[0]


def _due(elapsed_s: float) -> int:
    """Records the open-model schedule has sent after ``elapsed_s`` seconds."""
    spike = min(max(elapsed_s - BASE_S, 0.0), SPIKE_S)
    base = min(elapsed_s, BASE_S) + max(elapsed_s - BASE_S - SPIKE_S, 0.0)
    return int(BASE_RATE * base + SPIKE_RATE * spike)


def _scrape(port: int) -> dict[str, dict[str, float]]:
    """One replica's ``consumer_records_lag`` per partition and its sample duration."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
        text = resp.read().decode()
    lag, took = {}, {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "consumer_records_lag":
                lag[s.labels["partition"]] = s.value
            elif s.name == "consumer_records_lag_sample_seconds":
                took["s"] = s.value
    return {"lag": lag, "took": took}


def _replay(values: dict, target_milli: int, current: int) -> int | None:
    """The proposal for one ``pod_metrics`` event's values (None when the metric is invalid)."""
    pods = tuple(PodMetric(None if v is None else int(v * 1000)) for v in values.values())
    try:
        return proposal_for_pods_metric(pods, target_milli, current)
    except MetricError:
        return None


def _sample(deployment: LocalDeployment, source: BrokerLagSource) -> dict:
    """Broker offsets, then every replica's gauge, then the broker's log-end again: per
    partition the gauge is bounded by (log-end after) - (committed before the value was read)."""
    before = source.read()
    scraped = {}
    for r in deployment.replicas():
        try:
            scraped[r.replica_id] = _scrape(r.metrics_port)
        except OSError:
            continue  # starting or stopping
    after = source.read()
    return {"t": time.monotonic(), "before": before, "after": after, "scraped": scraped}


def test_hpa_scales_out_on_the_replicas_reported_lag(kafka_cluster, tmp_path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topic(TOPIC, PARTITIONS)
    config = load_policy_manifest("k8s/hpa-pods-lag-ci.yaml")
    template = template_from_deployment(
        load_deployment("k8s/consumer-deployment.yaml"), bootstrap,
        flag_overrides={"--topic": TOPIC, "--group": GROUP, "--engine": "arrow",
                        "--process-ms": "10", "--inflight": "10", "--drain-timeout": "10"})
    source = BrokerLagSource(admin, GROUP, TOPIC)
    marks: dict[str, float] = {}
    acked: list[int] = []
    loader = threading.Thread(target=lambda: acked.append(_produce(bootstrap, marks)), daemon=True)
    samples: list[dict] = []
    ready_area, started_s = 0.0, None
    with PrometheusServer(tmp_path / "prom") as prom, \
            LocalDeployment(template, tmp_path, graceful=True) as deployment:
        deployment.scale(config.min_replicas)
        deployment.wait_ready(config.min_replicas, within_s=60)
        prom.set_targets("replicas", deployment.metrics_targets())
        initial = {r.replica_id for r in deployment.replicas()}
        scaler = LocalAutoscaler(build_policy(config), deployment, None, tmp_path / "controller.events.jsonl",
                                 pod_metrics=PrometheusPodMetrics(prom.url))
        with scaler.start(tick_s=0.25, metrics_port=None):
            loader.start()
            deadline, last = time.monotonic() + 150, time.monotonic()
            started_s = last
            while time.monotonic() < deadline:
                prom.set_targets("replicas", deployment.metrics_targets())
                samples.append(_sample(deployment, source))
                now = time.monotonic()
                ready_area += deployment.ready_replicas * (now - last)
                last = now
                drained = all(c == e for c, e in samples[-1]["after"].values() if e is not None)
                if "load_end" in marks and drained and now > marks["load_end"] + 3:
                    break
                time.sleep(max(0.0, 1.0 - (time.monotonic() - now)))
            loader.join(30)
        ended_s = time.monotonic()
    # -- processed == produced ------------------------------------------------------------
    store = read_store(deployment.store_dir)
    pairs = list(zip(store.column("partition").to_pylist(), store.column("offset").to_pylist()))
    produced = acked[0]
    assert len(set(pairs)) == produced, f"lost: {produced - len(set(pairs))} of {produced}"
    assert len(pairs) == produced, f"duplicated: {len(pairs) - len(set(pairs))}"
    # -- the HPA decided on the replicas' own lag -----------------------------------------
    events = list(read_events(tmp_path / "controller.events.jsonl"))
    syncs = []
    values = None
    for e in events:
        if e["event"] == "pod_metrics":
            values = e["values"]
        elif e["event"] == "hpa_sync" and values is not None:
            syncs.append((e, values))
    assert syncs and [_replay(v, config.pods_metric.target_average_milli, e["replicas_before"])
                      for e, v in syncs] == [e["proposal"] for e, _ in syncs]
    decisions = [e for e in events if e["event"] == "decision"]
    ups = [e for e in decisions if e["desired_replicas"] > e["current_replicas"]]
    peak = max([e["desired_replicas"] for e in decisions], default=config.min_replicas)
    assert ups and peak >= 4, f"no scale-out on the reported lag: decisions {decisions}"
    # -- the gauge against the broker -----------------------------------------------------
    worst, overlaps, peak_pair = 0.0, [], (0, 0.0)
    for i, s in enumerate(samples):
        # a value is read by the replica's poll thread up to one batch (2 s here) + 1 s before the
        # scrape: bound it by the committed offsets read 3 samples (>= 3 s) earlier
        earlier = samples[max(0, i - 3)]["before"]
        reported = [p for r in s["scraped"].values() for p in r["lag"]]
        if len(reported) != len(set(reported)):
            overlaps.append({rid: sorted(r["lag"]) for rid, r in s["scraped"].items()})
        for r in s["scraped"].values():
            for p, lag in r["lag"].items():
                committed, _ = earlier[int(p)]
                _, log_end = s["after"][int(p)]
                if log_end is None:
                    continue
                bound = log_end - max(committed, 0)
                worst = max(worst, lag - bound)
        broker = sum(e - max(c, 0) for c, e in s["before"].values() if e is not None)
        own = sum(v for r in s["scraped"].values() for v in r["lag"].values())
        if broker > peak_pair[0]:
            peak_pair = (broker, own)
    # Replicas are scraped one after the other, so a partition handed over between two scrapes
    # of one sample shows under both (old owner before its revoke, new owner after its first
    # records): at most once per rebalance, i.e. per scale step.
    assert len(overlaps) <= len(decisions), f"partitions reported by two replicas: {overlaps}"
    assert worst <= 0, f"a replica reported {worst} records more than log-end minus committed"
    peak_own = max(sum(v for r in s["scraped"].values() for v in r["lag"].values()) for s in samples)
    assert peak_own >= 0.25 * peak_pair[0], f"the gauge missed the backlog: {peak_own} vs {peak_pair[0]}"
    took = [r["took"]["s"] for s in samples for r in s["scraped"].values() if r["took"]]
    spike_s = marks["spike_start"]
    first_up = min(e["monotonic_s"] for e in ups)
    new_rows = [t for t, r in zip(store.column("processed_at_ns").to_pylist(),
                                  store.column("replica_id").to_pylist()) if r not in initial]
    reaction_s = (min(new_rows) - marks["spike_start_wall_ns"]) / 1e9 if new_rows else None
    steps = [(round(e["monotonic_s"] - spike_s, 1), e["current_replicas"], e["desired_replicas"]) for e in decisions]
    print(f"pods-metric HPA: produced {produced}, processed {len(pairs)} ({len(set(pairs))} distinct); "
          f"decisions (s after spike start, from, to) {steps}; "
          f"detection {first_up - spike_s:.1f} s after the spike start, reaction (first record of a new "
          f"replica) {reaction_s} s; peak desired {peak}; "
          f"peak broker lag {peak_pair[0]} (gauge sum then {peak_pair[1]:.0f}), peak gauge sum {peak_own:.0f}; "
          f"ready replica-seconds {ready_area:.0f} over {ended_s - started_s:.0f} s; "
          f"gauge sample median {statistics.median(took) * 1e6:.0f} us, max {max(took) * 1e6:.0f} us "
          f"({len(took)} scrapes); samples with a partition under two replicas {len(overlaps)} of {len(samples)}")
