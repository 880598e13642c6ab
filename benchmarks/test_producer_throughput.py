"""Producer throughput: the project's load generator vs Kafka's own ``ProducerPerformance``.

Both run unthrottled, one after the other, against the same embedded broker, each into its own
fresh 8-partition topic, with the same record count, value size and producer settings
(acks=all, idempotence, linger.ms=5, batch.size=1000000, no compression, a 1 GiB client
buffer). Records are 280-byte values (``EVENT_SIZE_BYTES``: the 256-byte payload plus
entity_id, ts and seq), so the perf tool runs with ``--record-size 280``. Differences that
remain, by design: our records also carry an 8-byte key and are partitioned by it
(murmur2), the perf tool sends unkeyed records (sticky partitioner); ours counts from the first
send to the last acknowledgement, the perf tool from its first send to ``close()``.

Throughput is records/s and MB/s of values (MB = 2^20 bytes, as the perf tool reports it).
The goal, asserted here: ours >= 0.8 x the perf tool. A 50k-record warm-up goes first so that
neither run pays for the broker's JIT alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.kafka.artifacts import kafka_classpath
from pytest_lagscale.load.events import EVENT_SIZE_BYTES
from pytest_lagscale.load.producer import PRODUCER_DEFAULTS, ProduceSettings, produce_profile
from pytest_lagscale.load.profiles import parse_profile
from pytest_lagscale.process import ManagedProcess

pytestmark = [pytest.mark.integration, pytest.mark.benchmark(group="producer")]

RECORDS = 1_000_000
PARTITIONS = 8
MIN_RATIO = 0.8
UNTHROTTLED_PER_S = 10_000_000  # schedule rate far above what a client reaches: no pacing
PERF_TIMEOUT_S = 120.0
_PERF_TOTAL = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)",
                         re.MULTILINE)


@dataclass(frozen=True)
class Throughput:
    """One producer's result: records acknowledged and its rates."""

    records: int
    records_per_s: float
    mb_per_s: float


def _run_lagscale(bootstrap: str, topic: str, records: int) -> Throughput:
    KafkaAdmin(bootstrap).create_topic(topic, PARTITIONS)
    profile = parse_profile({"kind": "steady", "seed": 1, "partitions": PARTITIONS,
                             "topic": topic, "rate_per_s": UNTHROTTLED_PER_S,
                             "duration_s": records / UNTHROTTLED_PER_S})
    report = produce_profile(profile, ProduceSettings(bootstrap)).report
    assert report.acked_records == records, report
    rate = records / (report.elapsed_s + report.flush_s)
    return Throughput(records, rate, rate * EVENT_SIZE_BYTES / 2**20)


def _perf_tool_argv(bootstrap: str, topic: str, records: int) -> list[str]:
    props = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": "true",
             "linger.ms": PRODUCER_DEFAULTS["linger.ms"],
             "batch.size": PRODUCER_DEFAULTS["batch.size"], "compression.type": "none",
             "buffer.memory": PRODUCER_DEFAULTS["queue.buffering.max.kbytes"] * 1024}
    return ["java", "-Xms256m", "-Xmx2g", "-cp", kafka_classpath(),
            "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
            "--num-records", str(records), "--record-size", str(EVENT_SIZE_BYTES),
            "--throughput", "-1",
            "--command-property", *[f"{k}={v}" for k, v in props.items()]]


def _run_perf_tool(bootstrap: str, topic: str, records: int, log_dir) -> Throughput:
    KafkaAdmin(bootstrap).create_topic(topic, PARTITIONS)
    proc = ManagedProcess("producer-perf", _perf_tool_argv(bootstrap, topic, records),
                          log_path=log_dir / "producer-perf.log")
    with proc:
        code = proc.wait(PERF_TIMEOUT_S)
    output = "\n".join(proc.tail(40))
    assert code == 0, f"ProducerPerformance exited with {code}:\n{output}"
    match = _PERF_TOTAL.findall(output)[-1]
    assert int(match[0]) == records, output
    return Throughput(records, float(match[1]), float(match[2]))


@pytest.mark.gate
def test_producer_keeps_80_percent_of_kafka_producer_performance(benchmark, kafka_cluster,
                                                                 tmp_path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    _run_lagscale(bootstrap, "bench-warmup", 50_000)
    ours = benchmark.pedantic(_run_lagscale, args=(bootstrap, "bench-lagscale", RECORDS),
                              rounds=1, iterations=1)
    perf = _run_perf_tool(bootstrap, "bench-perf-tool", RECORDS, tmp_path)
    ratio = ours.records_per_s / perf.records_per_s
    verdict = "pass" if ratio >= MIN_RATIO else "fail"
    benchmark.extra_info.update({
        "inputs": {"records": RECORDS, "partitions": PARTITIONS,
                   "record_value_bytes": EVENT_SIZE_BYTES, "key_bytes_lagscale": 8,
                   "kafka": kafka_cluster.version, "producer_config": {
                       k: PRODUCER_DEFAULTS[k] for k in ("acks", "enable.idempotence",
                                                         "linger.ms", "batch.size",
                                                         "compression.type")}},
        "metrics": {
            "lagscale_records_per_s": _metric(ours.records_per_s, "records/s"),
            "lagscale_mb_per_s": _metric(ours.mb_per_s, "MB/s"),
            "perf_tool_records_per_s": _metric(perf.records_per_s, "records/s"),
            "perf_tool_mb_per_s": _metric(perf.mb_per_s, "MB/s"),
            "throughput_ratio": _metric(ratio, "ratio"),
        },
        "assertions": [{"name": "throughput_ratio >= 0.8", "threshold": MIN_RATIO,
                        "value": ratio, "verdict": verdict}],
    })
    print(f"\nlagscale producer {ours.records_per_s:,.0f} records/s ({ours.mb_per_s:.1f} MB/s); "
          f"ProducerPerformance {perf.records_per_s:,.0f} records/s ({perf.mb_per_s:.1f} MB/s); "
          f"ratio {ratio:.2f}")
    assert ratio >= MIN_RATIO, (
        f"throughput_ratio: {ratio:.2f} is below {MIN_RATIO}: lagscale "
        f"{ours.records_per_s:,.0f} records/s vs ProducerPerformance "
        f"{perf.records_per_s:,.0f} records/s")


def _metric(value: float, unit: str) -> dict[str, object]:
    return {"value": value, "unit": unit, "direction": "higher_is_better", "tolerance": 0.2}
