"""The local controller scales real consumer replicas on the persistent-lag external scaler, over
gRPC, on the embedded broker: ``k8s/scaledobject-persistent-lag-ci.yaml`` as committed (its
Service address served by the run's own ``lagscale scaler serve`` child process), a spike of
load, a scale-up only once lag stayed above lagThreshold for sustainSeconds, and every produced
record processed exactly once.

Replicas run ``--engine arrow`` (1,000 records/s each: 10 in flight x 10 ms) so eight of them
fit a 2-core machine; the pattern is tests/integration/test_autoscaler_step.py's.
"""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("grpc", reason="grpcio missing: pip install -e '.[scaler]'")

from pytest_lagscale.config.deployment import load_deployment  # noqa: E402
from pytest_lagscale.config.policy import load_policy_manifest  # noqa: E402
from pytest_lagscale.control.policy.build import build_policy  # noqa: E402
from pytest_lagscale.contract.eventlog import read_events  # noqa: E402
from pytest_lagscale.experiment.runner import unprocessed_records  # noqa: E402
from pytest_lagscale.kafka.admin import KafkaAdmin  # noqa: E402
from pytest_lagscale.platform.autoscaler import LocalAutoscaler  # noqa: E402
from pytest_lagscale.platform.external import ExternalScalerReader  # noqa: E402
from pytest_lagscale.platform.local import LocalDeployment, template_from_deployment  # noqa: E402
from pytest_lagscale.scalers.persistent_lag.process import ScalerProcess  # noqa: E402
from pytest_lagscale.sources import BrokerLagSource  # noqa: E402
from spark_consumer.store import read_store  # noqa: E402
from tests.replica_helpers import store_counts  # noqa: E402

pytestmark = pytest.mark.integration
TOPIC, GROUP, PARTITIONS = "events-plag", "enrich-plag", 8
POLICY = "k8s/scaledobject-persistent-lag-ci.yaml"
SPIKE_START_S, SPIKE_END_S, LOAD_END_S = 5.0, 30.0, 40.0
BASE_PER_S, SPIKE_PER_S = 200, 4000
SUSTAIN_S, SAMPLING_S, SYNC_S = 15.0, 2.0, 3.0


def _produce(bootstrap: str, started: float, stop: threading.Event) -> int:
    """200 rec/s, 4,000 rec/s from 5 to 30 s, 200 rec/s until 40 s; returns the records acked."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    payload, sent = bytes(280), 0
    while not stop.is_set():
        elapsed = time.monotonic() - started
        if elapsed >= LOAD_END_S:
            break
        rate = SPIKE_PER_S if SPIKE_START_S <= elapsed < SPIKE_END_S else BASE_PER_S
        for _ in range(int(rate * 0.05)):
            producer.produce(TOPIC, payload, key=str(sent).encode())
            sent += 1
        producer.poll(0)
        time.sleep(0.05)
    assert producer.flush(30) == 0
    return sent


def test_controller_scales_on_the_external_scaler_over_grpc_and_loses_nothing(kafka_cluster, tmp_path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topic(TOPIC, PARTITIONS)
    policy = build_policy(load_policy_manifest(POLICY))
    assert policy.needs_local_scaler and not policy.needs_lag
    so_min = policy.min_replicas
    template = template_from_deployment(
        load_deployment("k8s/consumer-deployment.yaml"), bootstrap,
        flag_overrides={"--topic": TOPIC, "--group": GROUP, "--engine": "arrow", "--process-ms": "10",
                        "--inflight": "10", "--drain-timeout": "10"})
    lag_source = BrokerLagSource(admin, GROUP, TOPIC)
    stop_load = threading.Event()
    sent: list[int] = []
    samples: list[tuple[float, int, int | None]] = []  # (t_s, ready replicas, unprocessed records)
    with ScalerProcess(tmp_path / "scaler.log") as scaler, \
            LocalDeployment(template, tmp_path, graceful=True) as deployment:
        deployment.scale(so_min)
        deployment.wait_ready(so_min, within_s=60)
        reader = ExternalScalerReader(scaler.address, {"bootstrapServers": bootstrap, "consumerGroup": GROUP,
                                                       "topic": TOPIC})
        autoscaler = LocalAutoscaler(policy, deployment, lag_source, tmp_path / "controller.events.jsonl",
                                     external_scalers=reader)
        with autoscaler.start(tick_s=0.25, metrics_port=None):
            started, started_wall_ns = time.monotonic(), time.time_ns()
            loader = threading.Thread(target=lambda: sent.append(_produce(bootstrap, started, stop_load)))
            loader.start()
            try:
                deadline = started + 80
                while time.monotonic() < deadline:
                    t_s = time.monotonic() - started
                    lag = unprocessed_records(lag_source.read())
                    samples.append((t_s, deployment.ready_replicas, lag))
                    if t_s > LOAD_END_S and not loader.is_alive() and lag == 0:
                        break
                    time.sleep(0.5)
            finally:
                stop_load.set()
                loader.join(60)
        # the autoscaler's RealClock is time.monotonic: t = 0 is the load's start
        decisions = [(round(d.now_s - started, 1), d.replicas_before, d.replicas_after)
                     for d in autoscaler.decisions if d.replicas_after != d.replicas_before]
        polls = [d for d in autoscaler.decisions if d.event == "keda_poll"]
    produced = sent[0]
    table = read_store(tmp_path / "store")
    distinct, duplicates = store_counts(zip(table.column("partition").to_pylist(),
                                            table.column("offset").to_pylist()))

    ups = [(t, before, after) for t, before, after in decisions if after > before]
    detection_s = ups[0][0] - SPIKE_START_S if ups else None
    # DESIGN.md's reaction: spike start -> first record processed by a replica that did not exist before
    spike_wall_ns = started_wall_ns + int(SPIKE_START_S * 1e9)
    rows = list(zip(table.column("replica_id").to_pylist(), table.column("processed_at_ns").to_pylist()))
    before_spike = {r for r, at in rows if at < spike_wall_ns}
    new_rows = [at for r, at in rows if r not in before_spike]
    reaction_s = (min(new_rows) - spike_wall_ns) / 1e9 if new_rows else None
    peak_lag = max(lag or 0 for _, _, lag in samples)
    replica_seconds = sum(r * 0.5 for _, r, _ in samples)
    print(f"persistent-lag autoscale: detection {detection_s} s (spike start -> first scale-up decision), reaction "
          f"{reaction_s} s (-> first record of a new replica), peak lag "
          f"{peak_lag}, replica-seconds {replica_seconds:.0f} over {samples[-1][0]:.0f} s, scale steps {decisions}, "
          f"processed {distinct}/{produced} (duplicates {duplicates}), scaler values "
          f"{[p.triggers[0].metric_value for p in polls][::5]}")

    assert ups, f"no scale-up on the external scaler: {decisions}"
    # Persistence: lag passes lagThreshold 500 within ~0.2 s of the spike; the scaler reports a
    # scale-up only after it stayed above for sustainSeconds, seen at the next sample and poll/sync.
    assert SUSTAIN_S <= detection_s <= SUSTAIN_S + SAMPLING_S + SYNC_S + 3.0, detection_s
    assert max(after for _, _, after in decisions) >= 4, decisions
    values = [p.triggers[0].metric_value for p in polls if p.triggers[0].metric_value is not None]
    assert 500.0 in values, "no pending value (held at lagThreshold) before the persistent lag"
    assert all(p.triggers[0].error is None for p in polls), [p.triggers[0].error for p in polls if p.triggers[0].error]
    assert (distinct, duplicates) == (produced, 0), f"processed {distinct} distinct + {duplicates} dups of {produced}"
    events = read_events(tmp_path / "controller.events.jsonl")
    assert not [e for e in events if e["event"] == "external_read_failed"]
