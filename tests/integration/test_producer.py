"""The load generator against a real broker: rate held, manifest == broker offsets, the wire
format, and the ``lagscale produce`` command end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.load.events import EVENT_SIZE_BYTES, EventSource, decode_events
from pytest_lagscale.load.producer import ProduceResult, ProduceSettings, produce_profile
from pytest_lagscale.load.profiles import parse_profile

# One worker under xdist: the module fixture is set up once.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("producer")]

RATE_PER_S = 20_000
SECONDS = 10


@pytest.fixture(scope="module")
def run_20k(kafka_cluster) -> tuple[ProduceResult, str]:
    """One 10 s step at 20k records/s to a fresh 8-partition topic."""
    topic = "producer-20k"
    KafkaAdmin(kafka_cluster.bootstrap_servers).create_topic(topic, 8)
    profile = parse_profile({"kind": "steady", "seed": 11, "partitions": 8, "topic": topic,
                             "duration_s": SECONDS, "rate_per_s": RATE_PER_S})
    settings = ProduceSettings(kafka_cluster.bootstrap_servers,
                               client_config=dict(kafka_cluster.client_config))
    return produce_profile(profile, settings), topic


def test_a_20k_per_s_step_is_held_within_5_percent_and_reported(run_20k) -> None:
    report = run_20k[0].report
    (step,) = report.steps
    assert step.requested_rate_per_s == RATE_PER_S
    assert step.sent_records == step.requested_records == RATE_PER_S * SECONDS
    assert step.achieved_rate_per_s == pytest.approx(RATE_PER_S, rel=0.05), report
    assert step.kept_up and report.kept_up
    assert report.acked_records == RATE_PER_S * SECONDS and report.failed_records == 0


def test_manifest_counts_equal_the_brokers_end_offsets(run_20k, kafka_cluster) -> None:
    result, topic = run_20k
    end = KafkaAdmin(kafka_cluster.bootstrap_servers).end_offsets(topic)
    manifest = result.manifest
    assert manifest.counts() == end
    assert manifest.total_acked == sum(end.values()) == RATE_PER_S * SECONDS
    for p in manifest.per_partition:
        assert (p.first_offset, p.last_offset) == (0, end[p.partition] - 1)


def test_records_on_the_wire_are_the_seeded_events_keyed_by_entity(run_20k,
                                                                   kafka_cluster) -> None:
    from confluent_kafka import Consumer

    result, topic = run_20k
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers,
                         "group.id": "producer-test", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, **dict(kafka_cluster.client_config)})
    consumer.subscribe([topic])
    values, keys = [], []
    try:
        while len(values) < result.manifest.total_acked:
            for msg in consumer.consume(10_000, timeout=5.0):
                assert msg.error() is None
                values.append(msg.value())
                keys.append(msg.key())
    finally:
        consumer.close()
    events = decode_events(values)
    assert len(values[0]) == EVENT_SIZE_BYTES
    assert keys == [int(e).to_bytes(8, "big") for e in events["entity_id"]]
    events = events[np.argsort(events["seq"])]
    expected = EventSource(11).take(len(events))
    assert np.array_equal(events["seq"], np.arange(len(events)))
    assert np.array_equal(events["entity_id"], expected["entity_id"])
    assert np.array_equal(events["payload"], expected["payload"])
    started_ns = np.datetime64(result.report.started_at.rstrip("Z"), "ns").astype(np.int64)
    assert (events["ts"] >= started_ns - 10**9).all()  # wall-clock send time, ns
    assert events["ts"].max() - events["ts"].min() == pytest.approx(SECONDS * 1e9, rel=0.05)


def test_lagscale_produce_runs_an_embedded_broker_and_writes_the_run(tmp_path: Path) -> None:
    profile = tmp_path / "tiny.yaml"
    profile.write_text("kind: step\nseed: 5\npartitions: 2\nduration_s: 3\n"
                       "baseline_rate_per_s: 100\nspike_multiplier: 5\nspike_start_s: 1\n"
                       "spike_hold_s: 1\n")
    out = tmp_path / "run"
    lagscale = Path(sys.executable).with_name("lagscale")
    proc = subprocess.run([str(lagscale), "produce", "--profile", str(profile), "--out",
                           str(out)], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "COLUMNS": "120"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "starting an embedded Kafka broker" in proc.stdout
    for label in ("baseline", "spike", "recovery"):
        assert label in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    report = json.loads((out / "report.json").read_text())
    assert manifest["total_acked"] == report["sent_records"] == 100 + 500 + 100
    assert [s["requested_rate_per_s"] for s in report["steps"]] == [100, 500, 100]
