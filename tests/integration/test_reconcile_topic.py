"""The output-topic reconciliation on Spark's Kafka source, against the embedded broker.

An output topic filled by hand (records carrying the input-coordinate headers for a manifest's
offsets, with one duplicate and one gap injected) is reconciled in a session of its own and in
the reconcile worker; then two ``spark_consumer --sink topic`` replicas consume a produced topic
and the reconciliation of their output topic finds every input exactly once.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_lagscale.analyze.reconcile_topic import reconcile_topic
from pytest_lagscale.analyze.reconcile_worker import ReconcileWorker
from pytest_lagscale.contract.errors import BrokerError
from pytest_lagscale.contract.output_topic import INPUT_OFFSET_HEADER, input_headers
from pytest_lagscale.load.manifest import Manifest, PartitionManifest
from tests.replica_helpers import produce_events, wait_all_committed

pytestmark = pytest.mark.integration

if shutil.which("java") is None:
    pytest.skip("no java on PATH: the reconciliation job needs a JDK 17", allow_module_level=True)
pytest.importorskip("pyspark", reason="pyspark missing: pip install 'pytest-lagscale[spark]'")

RANGES = {0: (0, 49), 1: (0, 49), 2: (0, 49), 3: (10, 59)}
"""The manifest's produced ranges (inclusive): 200 records; partition 3 starts at offset 10."""
GAP, DUPLICATE = (2, 17), (1, 5)


def _manifest(ranges: dict[int, tuple[int, int]]) -> Manifest:
    parts = tuple(PartitionManifest(p, a, b, b - a + 1) for p, (a, b) in sorted(ranges.items()))
    return Manifest("events", len(parts), 1, "test", "2026-01-01T00:00:00Z", parts,
                    sum(p.count for p in parts), 0, {})


def _fill(bootstrap: str, topic: str, pairs: list[tuple[int, int]],
          raw: list[list[tuple[str, bytes]] | None] = ()) -> None:
    """Write one output record per input pair (spread over the output partitions), then one
    per ``raw`` header list (None: no headers)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5})
    for i, (partition, offset) in enumerate(pairs):
        producer.produce(topic, b"processed", partition=i % 3,
                         headers=input_headers(partition, offset))
    for headers in raw:
        producer.produce(topic, b"no input", partition=0, headers=headers)
    assert producer.flush(30) == 0


def _pairs_with_a_gap_and_a_duplicate() -> list[tuple[int, int]]:
    pairs = [(p, o) for p, (a, b) in RANGES.items() for o in range(a, b + 1) if (p, o) != GAP]
    pairs.insert(120, DUPLICATE)  # a second copy, written later than the first
    return pairs


def _assert_one_lost_one_duplicated(r) -> None:  # type: ignore[no-untyped-def]
    assert (r.produced_total, r.stored_rows_total, r.distinct_processed_total) == (200, 200, 199)
    assert (r.lost_total, r.duplicated_total, r.duplicate_rows_total, r.unexpected_total) == (
        1, 1, 1, 0)
    assert r.lost_examples == (GAP,)
    assert r.duplicated_examples == ((*DUPLICATE, 2),)
    assert r.unexpected_examples == () and r.notes == () and r.engine == "spark"


def test_an_injected_gap_and_duplicate_are_found_in_an_own_session_and_in_the_worker(
        admin, kafka_cluster, tmp_path: Path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    manifest = _manifest(RANGES).write_json(tmp_path / "manifest.json")
    admin.create_topic("processed-gap-dup", 3)
    _fill(bootstrap, "processed-gap-dup", _pairs_with_a_gap_and_a_duplicate())

    _assert_one_lost_one_duplicated(reconcile_topic(bootstrap, "processed-gap-dup", manifest,
                                                    log_path=tmp_path / "own.log"))

    every = [(p, o) for p, (a, b) in RANGES.items() for o in range(a, b + 1)]
    admin.create_topic("processed-nameless", 3)
    _fill(bootstrap, "processed-nameless", every,
          raw=[None, [(INPUT_OFFSET_HEADER, b"3")], input_headers(3, 9)[:1] + [
              (INPUT_OFFSET_HEADER, b"x")]])
    with ReconcileWorker(tmp_path / "worker.log") as worker:
        _assert_one_lost_one_duplicated(worker.reconcile_topic(bootstrap, "processed-gap-dup",
                                                               manifest))
        with pytest.raises(BrokerError, match="topic 'no-such-topic'"):
            worker.reconcile_topic(bootstrap, "no-such-topic", manifest)
        r = worker.reconcile_topic(bootstrap, "processed-nameless", manifest, examples=2)
    assert (r.produced_total, r.lost_total, r.duplicated_total) == (200, 0, 0)
    assert (r.unexpected_total, r.stored_rows_total, r.distinct_processed_total) == (3, 203, 203)
    assert r.unexpected_examples == ()  # no pair named: the records are in the note
    assert len(r.notes) == 1 and "3 records lack the lagscale-input-partition" in r.notes[0]
    assert "(first: partition 0 offset 67, partition 0 offset 68)" in r.notes[0]


def test_two_replicas_writing_to_an_output_topic_lose_and_duplicate_nothing(
        admin, replicas, kafka_cluster, tmp_path: Path) -> None:
    bootstrap, topic = kafka_cluster.bootstrap_servers, replicas.topic
    output = f"{topic}-processed"
    admin.create_topic(topic, 6)
    admin.create_topic(output, 3)
    produced = produce_events(bootstrap, topic, 3000, 6)
    flags = ("--engine", "arrow", "--sink", "topic", "--output-topic", output,
             "--process-ms", "1", "--inflight", "20", "--max-batch", "500")
    group = [replicas(f"r{i}", *flags) for i in range(2)]
    for rp in group:
        rp.wait_ready(60)
    produced += produce_events(bootstrap, topic, 3000, 6, first_seq=produced)
    wait_all_committed(admin, replicas.group, topic, group, 90)
    for rp in group:
        assert rp.stop(30) == "terminated" and rp.process.popen.returncode == 0, rp.tail()
        assert next(e for e in rp.events() if e["event"] == "started")["sink"] == "topic"
    assert not list((tmp_path / "store").rglob("*.parquet"))  # nothing went to the store
    end = admin.end_offsets(topic)  # a fresh topic: offsets 0..end-1 are what was produced
    assert sum(end.values()) == produced == 6000
    manifest = _manifest({p: (0, e - 1) for p, e in end.items()})
    r = reconcile_topic(bootstrap, output, manifest, log_path=tmp_path / "reconcile.log")
    assert (r.produced_total, r.stored_rows_total) == (6000, 6000)
    assert (r.lost_total, r.duplicated_total, r.unexpected_total) == (0, 0, 0), r
