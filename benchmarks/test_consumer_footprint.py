"""Footprint of one consumer replica, per engine: cold start, memory, CPU, engine time, rate.

One replica (``--process-ms 0 --max-batch 5000 --log-batches true``) runs against the embedded
broker on its own 8-partition topic:

* cold start = process start -> ``GET /ready`` answers 200 (engine up, warm, first assignment);
* idle: 3 s after ready, the whole process tree's RSS (Python and, for Spark, the JVM; psutil)
  and its CPU over 8 s, in % of one core;
* load: a backlog is produced, then a second replica of the same group consumes it flat out
  (so the producer does not compete for the CPU); RSS under load is the peak of the tree
  sampled every 0.25 s; engine time per 5k batch is the median ``engine_s`` of the full
  5000-record batches after the first ten (from the replica's ``batch`` events); max
  records/s is the records of all batches but the first over the time between their
  completions.

A second test measures one replica's capacity at ``--process-ms 5 --inflight 10`` (nominal
2000 records/s) in 2000-record batches (floor: 0.9x nominal for Arrow, 0.7x for Spark, whose
engine time adds to each batch). Targets: ready <= 12 s for both engines; RSS under load
<= 450 MB and engine <= 120 ms per 5k batch for the Arrow engine, recorded (not asserted) for
Spark, whose measured floor was accepted instead (see :data:`RECORDED_ONLY`). Every number goes
to the benchmark JSON (``extra_info``) before asserting.
"""

from __future__ import annotations

import re
import shutil
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
import pytest

from pytest_lagscale.kafka.admin import KafkaAdmin
from spark_consumer import capacity_records_per_s
from tests.replica_helpers import (
    Periodic,
    ReplicaProcess,
    produce_events,
    wait_all_committed,
)

pytestmark = [pytest.mark.integration, pytest.mark.benchmark(group="consumer")]

PARTITIONS = 8
BACKLOG_RECORDS = {"spark": 300_000, "arrow": 300_000}
TARGETS = {"cold_start_s": 12.0, "rss_load_mb": 450.0, "engine_ms_per_5k_batch": 120.0}
# The Spark engine adds ~0.2-0.3 s per 2000-record batch to the 1 s of simulated writes.
CAPACITY_MIN_RATIO = {"arrow": 0.9, "spark": 0.7}
ENGINES = [pytest.param("spark", id="spark"), pytest.param("arrow", id="arrow")]
#: Targets not asserted for an engine: its figure is recorded (verdict "recorded") and kept in the
#: benchmark JSON for comparison runs. Spark's footprint floor on the 2-core machine (RSS under
#: load ~510-555 MB, engine 118-180 ms per 5k batch; see spark_consumer.engine.spark) was accepted
#: (docs/replica.md, "Spark footprint") in place of the consumer contract's 450 MB / 120 ms; the system-level targets of
#: benchmarks/test_spark_engines.py hold the engine to account instead.
RECORDED_ONLY: dict[str, frozenset[str]] = {
    "spark": frozenset({"rss_load_mb", "engine_ms_per_5k_batch"}),
}


@dataclass(frozen=True)
class Footprint:
    """One replica's measured footprint (units in the names)."""

    cold_start_s: float
    engine_startup_s: float
    rss_idle_mb: float
    idle_cpu_pct: float
    rss_load_mb: float
    engine_ms_per_5k_batch: float
    engine_ms_p90: float
    max_records_per_s: float
    batches: int


def _prepare_engine(engine: str) -> str | None:
    """Skip without a JDK/pyspark; for Spark, build the CDS archive (once per machine, outside
    the measurement) and return its path."""
    if engine != "spark":
        return None
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the Spark engine needs a JDK 17")
    pytest.importorskip("pyspark", reason="pyspark missing: pip install "
                                          "'pytest-lagscale[spark]'")
    from spark_consumer.engine.cds import prepare_archive

    return str(prepare_archive())


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _rss_mb(pid: int) -> float:
    total = 0
    for p in _tree(pid):
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total / 2**20


def _cpu_s(pid: int) -> float:
    total = 0.0
    for p in _tree(pid):
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            continue
    return total


class _PeakRss(Periodic):
    """Peak RSS (MB) of a process tree, sampled every ``interval_s`` seconds."""

    def __init__(self, pid: int, interval_s: float = 0.25):
        super().__init__(interval_s, name="rss-sampler")
        self.peak_mb, self._pid = 0.0, pid

    def sample(self) -> None:
        try:
            self.peak_mb = max(self.peak_mb, _rss_mb(self._pid))
        except psutil.Error:
            pass


def _start(kafka_cluster, tmp_path: Path, name: str, engine: str,
           *args: str) -> tuple[ReplicaProcess, KafkaAdmin, str]:
    topic = re.sub(r"[^A-Za-z0-9.-]+", "-", name)
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic(topic, PARTITIONS)
    rp = ReplicaProcess(f"bench-{engine}", kafka_cluster.bootstrap_servers, topic,
                        tmp_path / "store", tmp_path,
                        ["--group", f"g-{topic}", "--engine", engine, "--log-batches", "true",
                         *args])
    return rp, admin, topic


def _batch_stats(rp: ReplicaProcess, full: int, skip: int = 10) -> tuple[list[float], float, int]:
    """(engine ms of full batches after the first ``skip``, records/s, batch count)."""
    batches = [e for e in rp.events() if e["event"] == "batch"]
    engine_ms = [e["engine_s"] * 1000 for e in batches[skip:] if e["records"] == full]
    rate = 0.0
    if len(batches) >= 3:
        records = sum(e["records"] for e in batches[1:])
        rate = records / (batches[-1]["monotonic_s"] - batches[0]["monotonic_s"])
    return engine_ms, rate, len(batches)


def _cold_start(rp: ReplicaProcess) -> tuple[float, float]:
    """(process start -> /ready 200 in s, engine startup in s); the replica is started here."""
    t0 = time.monotonic()
    rp.start()
    rp.wait_ready(60)
    cold_start_s = time.monotonic() - t0
    return cold_start_s, [e for e in rp.events() if e["event"] == "engine_ready"][0]["startup_s"]


def _measure(kafka_cluster, tmp_path: Path, engine: str, name: str) -> Footprint:
    """Phase 1 (idle replica): cold start, idle RSS and CPU. Phase 2 (a second replica of the
    same group started on a produced backlog, so the producer does not share the CPU): peak
    RSS, engine time per 5k batch, records/s."""
    flags = ("--process-ms", "0", "--max-batch", "5000")
    rp, admin, topic = _start(kafka_cluster, tmp_path / "idle", name, engine, *flags)
    admin.committed_offsets(f"g-{topic}", topic)  # the broker's group coordinator is up
    try:
        cold_start_s, startup_s = _cold_start(rp)
        time.sleep(3.0)
        rss_idle = _rss_mb(rp.process.pid)
        cpu0, w0 = _cpu_s(rp.process.pid), time.monotonic()
        time.sleep(8.0)
        idle_cpu_pct = 100 * (_cpu_s(rp.process.pid) - cpu0) / (time.monotonic() - w0)
        assert rp.stop(30) == "terminated", rp.tail()
    finally:
        rp.stop(5)
    produce_events(kafka_cluster.bootstrap_servers, topic, BACKLOG_RECORDS[engine], PARTITIONS)
    loaded = ReplicaProcess(rp.replica_id, kafka_cluster.bootstrap_servers, topic,
                            tmp_path / "store", tmp_path, ["--group", f"g-{topic}",
                                                           "--engine", engine,
                                                           "--log-batches", "true", *flags])
    try:
        loaded.start()
        with _PeakRss(loaded.process.pid) as peak:
            wait_all_committed(admin, f"g-{topic}", topic, [loaded], 180)
        engine_ms, rate, batches = _batch_stats(loaded, 5000)
        assert loaded.stop(30) == "terminated", loaded.tail()
    finally:
        loaded.stop(5)
    return Footprint(round(cold_start_s, 2), startup_s, round(rss_idle, 1),
                     round(idle_cpu_pct, 2), round(peak.peak_mb, 1),
                     round(statistics.median(engine_ms), 1),
                     round(statistics.quantiles(engine_ms, n=10)[-1], 1), round(rate),
                     batches)


def _metric(value: float, unit: str, direction: str, tolerance: float = 0.2) -> dict:
    return {"value": value, "unit": unit, "direction": direction, "tolerance": tolerance}


@pytest.mark.parametrize("engine", ENGINES)
def test_replica_footprint(benchmark, kafka_cluster, tmp_path, request, engine: str) -> None:
    archive = _prepare_engine(engine)
    fp = benchmark.pedantic(_measure, args=(kafka_cluster, tmp_path, engine,
                                            request.node.name), rounds=1, iterations=1)
    checks = [("cold_start_s", fp.cold_start_s), ("rss_load_mb", fp.rss_load_mb),
              ("engine_ms_per_5k_batch", fp.engine_ms_per_5k_batch)]
    recorded = RECORDED_ONLY.get(engine, frozenset())
    assertions = [{"name": f"{key} <= {TARGETS[key]}", "threshold": TARGETS[key],
                   "value": value, "verdict": "pass" if value <= TARGETS[key] else "fail"}
                  for key, value in checks if key not in recorded]
    assertions += [{"name": key, "threshold": None, "value": value, "verdict": "recorded"}
                   for key, value in checks if key in recorded]
    benchmark.extra_info.update({
        "inputs": {"engine": engine, "partitions": PARTITIONS, "process_ms": 0,
                   "max_batch": 5000, "backlog_records": BACKLOG_RECORDS[engine],
                   "kafka": kafka_cluster.version, "cpus": psutil.cpu_count(),
                   "cds_archive": archive,
                   "load_average_1m": round(psutil.getloadavg()[0], 2)},
        # Spark starts from the class-data-sharing archive when one was prepared (see
        # spark_consumer.engine.cds); the first run on a machine builds it (~30 s).
        "metrics": {
            "cold_start_s": _metric(fp.cold_start_s, "s", "lower_is_better"),
            "engine_startup_s": _metric(fp.engine_startup_s, "s", "lower_is_better"),
            "rss_idle_mb": _metric(fp.rss_idle_mb, "MB", "lower_is_better", 0.1),
            "rss_load_mb": _metric(fp.rss_load_mb, "MB", "lower_is_better", 0.1),
            "idle_cpu_pct": _metric(fp.idle_cpu_pct, "% of one core", "lower_is_better", 1.0),
            "engine_ms_per_5k_batch": _metric(fp.engine_ms_per_5k_batch, "ms",
                                              "lower_is_better", 0.3),
            "engine_ms_p90": _metric(fp.engine_ms_p90, "ms", "lower_is_better", 0.3),
            "max_records_per_s": _metric(fp.max_records_per_s, "records/s",
                                         "higher_is_better", 0.3),
        },
        "assertions": assertions,
        "footprint": asdict(fp),
    })
    print(f"\n{engine}: {asdict(fp)}")
    failed = [a for a in assertions if a["verdict"] == "fail"]
    assert not failed, f"{engine} replica missed its footprint targets: {failed}"


def _capacity(kafka_cluster, tmp_path: Path, engine: str, name: str) -> float:
    rp, admin, topic = _start(kafka_cluster, tmp_path, name, engine, "--process-ms", "5",
                              "--inflight", "10", "--max-batch", "2000")
    admin.committed_offsets(f"g-{topic}", topic)  # the broker's group coordinator is up
    rp.start()
    try:
        rp.wait_ready(60)
        produce_events(kafka_cluster.bootstrap_servers, topic, 24_000, PARTITIONS)
        wait_all_committed(admin, f"g-{topic}", topic, [rp], 120)
        _, rate, _ = _batch_stats(rp, 2000)
    finally:
        rp.stop(30)
    return round(rate, 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_replica_capacity_at_process_ms_5_inflight_10(benchmark, kafka_cluster, tmp_path,
                                                      request, engine: str) -> None:
    _prepare_engine(engine)
    nominal = capacity_records_per_s(5.0, 10)
    rate = benchmark.pedantic(_capacity, args=(kafka_cluster, tmp_path, engine,
                                               request.node.name), rounds=1, iterations=1)
    ratio = rate / nominal
    floor = CAPACITY_MIN_RATIO[engine]
    benchmark.extra_info.update({
        "inputs": {"engine": engine, "process_ms": 5, "inflight": 10, "max_batch": 2000,
                   "records": 24_000, "nominal_records_per_s": nominal},
        "metrics": {"records_per_s": _metric(rate, "records/s", "higher_is_better", 0.1),
                    "capacity_ratio": _metric(ratio, "ratio", "higher_is_better", 0.1)},
        "assertions": [{"name": f"capacity_ratio >= {floor}", "threshold": floor,
                        "value": ratio, "verdict": "pass" if ratio >= floor else "fail"}],
    })
    print(f"\n{engine}: {rate:.0f} records/s at process-ms 5 / inflight 10 "
          f"(nominal {nominal:.0f}, ratio {ratio:.2f})")
    assert ratio >= floor, (
        f"capacity_ratio: {ratio:.2f} is below {floor} ({rate:.0f} of {nominal:.0f} "
        f"records/s, {engine} engine)")
