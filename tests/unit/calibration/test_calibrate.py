"""lagscale twin calibrate: the fits recover known parameters, a synthetic run directory gives
the numbers it was built with, and bad input exits 2 with one error line per problem."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.calibration.calibrate import (
    calibrate,
    engine_samples,
    fit_cold_start,
    fit_engine,
    fit_starting_delay,
    render,
    run_dirs,
)
from pytest_lagscale.calibration.facts import read_run, run_settings
from pytest_lagscale.twin.params import parse_calibration

T0 = 1_800_000_000.0  # wall-clock seconds of the synthetic run's start


def _event(t: float, event: str, source: str = "platform", **fields) -> dict:
    return {"event": event, "source": source, "wall_ns": int((T0 + t) * 1e9),
            "monotonic_s": 1000.0 + t, **fields}


def _events() -> list[dict]:
    """r1 starts alone (5.0 s), r2 and r3 start together at 40 s (both 9.0 s), r3 leaves."""
    ev = [_event(0.0, "replica_started", replica_id="r1"),
          _event(5.0, "engine_ready", "r1", replica_id="r1"),
          _event(5.05, "subscribed", "r1", replica_id="r1"),
          _event(5.1, "assigned", "r1", replica_id="r1", partitions=[0, 1]),
          _event(5.1, "joined", "r1", replica_id="r1", partitions=[0, 1]),
          _event(10.0, "load_start", "producer"),
          _event(10.5, "first_record", "r1", replica_id="r1")]
    for rid in ("r2", "r3"):
        ev += [_event(40.0, "replica_started", replica_id=rid),
               _event(49.0, "engine_ready", rid, replica_id=rid),
               _event(49.05, "subscribed", rid, replica_id=rid)]
    ev += [_event(50.0, "revoked", "r1", replica_id="r1", partitions=[1]),
           _event(50.7, "assigned", "r2", replica_id="r2", partitions=[1]),
           _event(51.4, "first_record", "r2", replica_id="r2"),
           _event(60.0, "replica_terminating", replica_id="r3"),
           _event(60.3, "closed", "r3", replica_id="r3"),
           _event(61.2, "replica_stopped", replica_id="r3")]
    return ev


def _batches(store: Path) -> None:
    """r1: back-to-back full batches (2000 records, cycle 5.5 s: 0.5 s engine time)."""
    rows, start = [], T0 + 11.0
    for _ in range(6):
        for wave in range(200):
            written = start + 0.1 + wave * 0.025
            rows += [(int(start * 1e9), int(written * 1e9))] * 10
        start += 5.5
    frame = pd.DataFrame(rows, columns=["processed_at_ns", "written_at_ns"])
    (store / "r1").mkdir(parents=True)
    frame.to_parquet(store / "r1" / "000001.parquet")


def make_run(root: Path, name: str = "20261123T000000Z-spike-ci", **bench) -> Path:
    """A synthetic run directory of the ci spike (spark, cooperative-sticky, 2 cores); its
    benchmark.json is a schema 1 document (the one loader checks it)."""
    run = root / name
    run.mkdir(parents=True)
    doc = {"schema_version": 1, "datetime": "2026-11-23T00:00:00+00:00",
           "commit_info": {"id": "0" * 40, "dirty": False}, "metrics": {}, "assertions": [],
           "artifacts": {},
           "inputs": {"profile": "spike-ci", "policy": "scaledobject-ci", "scale": "ci",
                      "engine": "spark", "balancer": "cooperative-sticky", "partitions": 8,
                      "trigger_interval_s": 1.0,
                      "broker": {"group.consumer.heartbeat.interval.ms": "1000"}},
           "run": {"label": "spike-ci", "graceful_drain": True, "actions": []},
           "machine_info": {"cpu_count": 2, "node": "vm"}, **bench}
    (run / "benchmark.json").write_text(json.dumps(doc))
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in _events()))
    _batches(run / "store")
    return run


def test_fit_engine_recovers_the_contention_terms() -> None:
    rng = np.random.default_rng(3)
    members, starting = rng.integers(0, 8, 400), rng.integers(0, 4, 400)
    overhead = 0.2 + 0.05 * members + 0.25 * starting + rng.normal(0, 0.02, 400)
    base, per_member, per_starting, per_warming = fit_engine(np.c_[overhead, members, starting])
    assert (base, per_member, per_starting) == pytest.approx((0.2, 0.05, 0.25), abs=0.01)
    assert per_warming == 0.0  # no warming column


def test_fit_engine_drops_a_negative_term_and_falls_back_to_the_mean() -> None:
    rng = np.random.default_rng(4)
    members = rng.integers(0, 8, 200)
    overhead = 0.5 - 0.01 * members + rng.normal(0, 0.01, 200)
    base, per_member, _, _ = fit_engine(np.c_[overhead, members, np.zeros(200)])
    assert per_member == 0.0 and base == pytest.approx(overhead.mean(), abs=1e-9)
    few = np.array([[0.3, 1, 0], [0.5, 2, 0]])
    assert fit_engine(few) == (pytest.approx(0.4), 0.0, 0.0, 0.0)
    with pytest.raises(ConfigError, match="per_batch_engine_s"):
        fit_engine(np.empty((0, 3)))


def _shared_start(alone: float, cores: float, load: float, starters: int,
                  members: int) -> tuple[float, np.ndarray]:
    """A start under the model: ``starters`` starting together with ``members`` running."""
    rate = min(1.0, cores / (starters + load * members))
    duration = alone / rate
    return duration, np.array([[duration, starters, members]], dtype=float)


def test_fit_cold_start_recovers_cores_and_member_load() -> None:
    starts = [_shared_start(5.0, 1.0, 0.0, 1, 0)] * 5
    starts += [_shared_start(5.0, 1.6, 0.3, n, m) for n in (2, 4, 7) for m in (1, 4, 8)]
    fit = fit_cold_start(starts)
    assert fit["alone_s"] == 5.0 and fit["alone"] == 5
    assert fit["cores"] == pytest.approx(1.6, abs=0.021)
    assert fit["member_load"] == pytest.approx(0.3, abs=0.011)
    assert fit["jitter"] == pytest.approx(0.0, abs=0.01)
    with pytest.raises(ConfigError, match="no replica started alone"):
        fit_cold_start([_shared_start(5.0, 1.6, 0.3, 4, 1)])


def test_fit_cold_start_reads_the_contention_within_each_run() -> None:
    """Two runs of the same contention on machines 1.5x apart: the pairs of one run give
    cores and member_load; pooled as one machine the second run's speed would bias them."""
    def run(speed: float) -> list:
        starts = [_shared_start(5.0 * speed, 1.0, 0.0, 1, 0)] * 3
        return starts + [_shared_start(5.0 * speed, 1.6, 0.3, n, m) for n in (2, 4, 7)
                         for m in (1, 4)]
    fast, slow = run(1.0), run(1.5)
    index = [0] * len(fast) + [1] * len(slow)
    fit = fit_cold_start(fast + slow, index)
    assert fit["alone_s"] == 5.0 * 1.25   # the median of the six alone starts
    assert fit["cores"] == pytest.approx(1.6, abs=0.021)
    assert fit["member_load"] == pytest.approx(0.3, abs=0.011)
    pooled = fit_cold_start(fast + slow)
    assert (pooled["cores"], pooled["member_load"]) != pytest.approx((1.6, 0.3), abs=0.02)


def test_read_run_gives_the_lifecycles_handovers_and_batches(tmp_path: Path) -> None:
    facts = read_run(make_run(tmp_path))
    assert facts.lifecycles["r1"]["engine_ready"] - facts.lifecycles["r1"]["replica_started"] \
        == pytest.approx(5.0)
    assert facts.handovers_s == pytest.approx((0.7,))
    assert len(facts.batches) == 6 and set(facts.batches["records"]) == {2000}
    assert facts.counts_at(T0 + 45.0) == (1, 2)
    assert facts.counts_at(T0 + 55.0) == (3, 0)
    assert facts.counts_at(T0 + 62.0) == (2, 0)  # r3 stopped at 61.2 s
    # 5 full batches with a next: cycle 5.5 s - 200 waves x 25 ms = 0.5 s, one member
    assert engine_samples(facts) == pytest.approx(
        np.array([[0.5, 0, 0, k, 0] for k in range(1, 6)]), abs=1e-6)  # the batch: its number
    assert run_settings(facts.benchmark).profile == "spike-ci"


def test_calibrate_gives_the_numbers_the_run_was_built_with(tmp_path: Path) -> None:
    doc = calibrate([read_run(make_run(tmp_path))], "spark")
    assert doc["processing"] == {"per_batch_engine_s": 0.5, "engine_s_per_member": 0.0,
                                 "engine_s_per_starting": 0.0}
    assert doc["cold_start"]["alone_s"] == 5.0
    group = doc["group"]
    assert (group["subscribe_s"], group["drain_s"], group["exit_s"], group["heartbeat_s"]) == \
        (0.05, 0.3, 1.2, 1.0)
    assert group["round_s"] == {"cooperative": 0.7, "eager": 0.7}
    # assigned -> first_record after load_start: r2 only (0.7 s); r1 was assigned before it
    assert group["first_fetch_s"] == 0.7
    assert doc["machine"]["cores"] == 2 and doc["source_runs"] == ["20261123T000000Z-spike-ci"]
    parsed = parse_calibration(yaml.safe_load(render(doc)), source="x")
    assert parsed["per_batch_engine_s"] == 0.5 and parsed["round_s"]["eager"] == 0.7


def test_calibrate_refuses_runs_without_the_engine_or_from_two_machines(tmp_path: Path) -> None:
    one = read_run(make_run(tmp_path))
    with pytest.raises(ConfigError, match="--engine: got 'arrow'"):
        calibrate([one], "arrow")
    other = read_run(make_run(tmp_path, "20261123T000001Z-spike-ci",
                              machine_info={"cpu_count": 4, "node": "big"}))
    with pytest.raises(ConfigError, match="machine_info.cpu_count"):
        calibrate([one, other], "spark")


def test_calibrate_records_the_machine_image_and_refuses_two(tmp_path: Path) -> None:
    """The kernel release names the machine image a calibration is picked by: recorded when
    every run has one, refused when the runs ran on two."""
    info = {"cpu_count": 2, "node": "vm", "release": "6.18.44-fc-v657"}
    one = read_run(make_run(tmp_path, machine_info=info))
    assert calibrate([one], "spark")["machine"]["release"] == "6.18.44-fc-v657"
    other = read_run(make_run(tmp_path, "20261123T000001Z-spike-ci",
                              machine_info={**info, "release": "6.18.44-fc-v595"}))
    with pytest.raises(ConfigError, match="machine_info.release: got .*v595.*v657"):
        calibrate([one, other], "spark")
    unrecorded = read_run(make_run(tmp_path, "20261123T000002Z-spike-ci"))
    assert "release" not in calibrate([one, unrecorded], "spark")["machine"]


def test_run_dirs_takes_runs_and_their_parent(tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs")
    assert run_dirs([run]) == [run] == run_dirs([tmp_path / "runs"])
    with pytest.raises(ConfigError) as info:
        run_dirs([tmp_path / "missing", tmp_path / "also-missing"])
    assert len(info.value.problems) == 2


def test_cli_writes_a_calibration_the_twin_reads(tmp_path: Path) -> None:
    make_run(tmp_path / "runs")
    out = tmp_path / "cal" / "spark.yaml"
    result = CliRunner().invoke(app, ["twin", "calibrate", str(tmp_path / "runs"),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    values = parse_calibration(yaml.safe_load(out.read_text()), source=str(out))
    assert values["cold_start_alone_s"] == 5.0 and not math.isnan(values["drain_s"])
    assert out.read_text().startswith("# Calibration of the twin")


def test_kept_sources_calibrate_to_the_same_file_without_the_store(tmp_path: Path) -> None:
    """--keep-sources writes each source run's benchmark.json, events.jsonl and
    batches.parquet (no store); calibrating from the kept runs gives the same text; a bad
    option keeps nothing."""
    make_run(tmp_path / "runs")
    first, again = tmp_path / "first.yaml", tmp_path / "again.yaml"
    kept = tmp_path / "kept"
    result = CliRunner().invoke(app, ["twin", "calibrate", str(tmp_path / "runs"), "--out",
                                      str(first), "--keep-sources", str(kept)])
    assert result.exit_code == 0, result.output
    run = kept / "20261123T000000Z-spike-ci"
    assert sorted(p.name for p in run.iterdir()) == ["batches.parquet", "benchmark.json",
                                                     "events.jsonl"]
    result = CliRunner().invoke(app, ["twin", "calibrate", str(kept), "--out", str(again)])
    assert result.exit_code == 0, result.output
    assert again.read_text() == first.read_text()
    elsewhere = tmp_path / "elsewhere"
    result = CliRunner().invoke(app, ["twin", "calibrate", str(tmp_path / "runs"), "--out",
                                      str(tmp_path), "--keep-sources", str(elsewhere)])
    assert result.exit_code == 2 and "--out" in result.output and not elsewhere.exists()


def test_an_unwritable_keep_sources_exits_2_naming_it_and_writes_no_calibration(
        tmp_path: Path) -> None:
    """--keep-sources where nothing can be written (under /sys) is one error line naming the
    option, exit 2, no traceback, and no --out file."""
    make_run(tmp_path / "runs")
    out = tmp_path / "cal.yaml"
    result = CliRunner().invoke(app, ["twin", "calibrate", str(tmp_path / "runs"), "--out",
                                      str(out), "--keep-sources", "/sys/kernel/lagscale-kept"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "--keep-sources: got '/sys/kernel/lagscale-kept'" in lines[0]
    assert "cannot be written" in lines[0] and "Traceback" not in result.output
    assert not out.exists()


def test_cli_bad_input_exits_2_with_one_error_line_each(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "benchmark.json").write_text("{not json")
    result = CliRunner().invoke(app, ["twin", "calibrate", str(tmp_path / "missing"),
                                      "--engine", "flink"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 2 and "--engine: got 'flink'" in lines[0] and "RUN_DIR" in lines[1]
    result = CliRunner().invoke(app, ["twin", "calibrate", str(broken)])
    assert result.exit_code == 2 and "benchmark.json" in result.output
    assert "Traceback" not in result.output


def test_run_to_run_recovers_the_machines_spread_and_the_slope() -> None:
    """Eight runs whose machine was slower or faster (start-up factor c, engine factor 0.5 c):
    the sds, the slope and the within-run jitter come back; fewer than three runs give none."""
    from pytest_lagscale.calibration.calibrate import run_to_run

    rng = np.random.default_rng(7)
    fit = (0.4, 0.02, 0.1)
    cold, engine, factors = [], [], []
    for c in np.linspace(-0.3, 0.3, 8):
        cold.append(c + rng.normal(0.0, 0.05, 12))
        members, starting = rng.integers(0, 8, 40), rng.integers(0, 3, 40)
        predicted = fit[0] + fit[1] * members + fit[2] * starting
        engine.append(np.c_[predicted * math.exp(0.5 * c), members, starting])
        factors.append(c)
    out = run_to_run(cold, engine, fit)
    assert out["runs"] == 8
    assert out["cold_start_sd"] == pytest.approx(float(np.std(factors, ddof=1)), abs=0.03)
    assert out["engine_sd"] == pytest.approx(0.5 * float(np.std(factors, ddof=1)), abs=1e-6)
    assert out["engine_on_cold_start"] == pytest.approx(0.5, abs=0.05)
    assert out["jitter"] == pytest.approx(0.05, abs=0.02)
    assert run_to_run(cold[:2], engine[:2], fit) is None
    # a run with too few starts or batches gives no factor
    assert run_to_run([c[:1] for c in cold], engine, fit) is None


def test_calibrate_writes_run_to_run_only_from_three_runs(tmp_path: Path) -> None:
    one = calibrate([read_run(make_run(tmp_path))], "spark")
    assert "run_to_run" not in one and one["notes"]["runs_with_factors"] == 0
    parsed = parse_calibration(yaml.safe_load(render(one)), source="x")
    assert (parsed["run_cold_start_sd"], parsed["run_engine_sd"],
            parsed["run_engine_on_cold_start"]) == (0.0, 0.0, 0.0)


def test_the_probe_error_is_the_pre_load_start_against_the_runs_later_starts(
        tmp_path: Path) -> None:
    """r1 starts alone before load_start in 5.0 s; r2 and r3 start together after it in 9.0 s
    beside one member (at cores 1, member_load 0: 4.5 s alone-equivalent each): the probe reads
    the machine log(5.0 / 4.5) slower than its later starts; probe_sd needs three runs."""
    from pytest_lagscale.calibration.calibrate import probe_error, probe_sd

    facts = read_run(make_run(tmp_path))
    error = probe_error(facts, alone_s=5.0, cores=1.0, member_load=0.0)
    assert error == pytest.approx(math.log(5.0 / 4.5))
    assert probe_error(facts, alone_s=5.0, cores=1.0, member_load=1.0) == \
        pytest.approx(math.log(5.0 / 3.0))  # 9 s at 1 / (2 + 1) of a core
    assert probe_sd([error, None, 0.0]) is None
    assert probe_sd([0.1, -0.1, 0.0]) == pytest.approx(0.1)


def test_fit_warmup_recovers_a_replicas_warm_up_and_its_warm_engine_terms() -> None:
    """Samples whose k-th batch takes (0.3 + 0.05 x (members - 1)) x (1 + 1.2 e^{-(k-1)/2}):
    the grid finds the warm-up and the warm terms; without a batch column there is none."""
    from pytest_lagscale.calibration.calibrate import fit_warmup

    rng = np.random.default_rng(3)
    members, starting = rng.integers(0, 8, 600), np.zeros(600)
    batch = rng.integers(1, 30, 600)
    warm = 0.3 + 0.05 * members
    y = warm * (1 + 1.2 * np.exp(-(batch - 1) / 2.0)) + rng.normal(0, 0.01, 600)
    extra, batches, (base, per_member, per_starting, _) = fit_warmup(
        np.c_[y, members, starting, batch])
    assert (extra, batches) == (pytest.approx(1.2, abs=0.051), 2.0)
    assert base == pytest.approx(0.3, abs=0.01) and per_member == pytest.approx(0.05, abs=0.003)
    assert fit_warmup(np.c_[warm, members, starting])[:2] == (0.0, 1.0)


def _with_back_to_back_batches(facts, until_s: float, overhead_s):
    """``facts`` with replica "m"'s full batches back to back from 1 s to ``until_s`` after T0,
    each taking 5.0 s of record work plus ``overhead_s(start)``."""
    import dataclasses

    from pytest_lagscale.calibration.calibrate import MIN_BATCHES

    rows, start = [], T0 + 1.0
    while start < T0 + until_s:
        cycle = 5.0 + overhead_s(start)
        rows.append(("m", 2000, start, start + 0.1, start + cycle - 0.05, start + cycle))
        start += cycle
    assert len(rows) > MIN_BATCHES
    batches = pd.DataFrame(rows, columns=["replica_id", "records", "start_s", "write_start_s",
                                          "write_end_s", "next_start_s"])
    return dataclasses.replace(facts, batches=batches)


def test_fit_starting_delay_finds_when_a_starting_replica_begins_to_slow_batches(
        tmp_path: Path) -> None:
    """A member's back-to-back batches whose engine time is 0.3 s + 0.25 s per replica started
    3 s or more before the batch (a replica starts every 7 s and starts for 30 s): the grid
    finds 3 s, the terms and the samples counted with it."""
    import dataclasses

    facts = read_run(make_run(tmp_path))
    lives = {"m": {"replica_started": T0 - 60.0, "engine_ready": T0 - 50.0}}
    lives.update({f"s{i}": {"replica_started": T0 + 7.0 * i, "engine_ready": T0 + 7.0 * i + 30.0}
                  for i in range(40)})
    facts = dataclasses.replace(facts, lifecycles=lives)
    rng = np.random.default_rng(5)
    facts = _with_back_to_back_batches(facts, 280.0, lambda start: 0.3 + 0.25 * facts.counts_at(
        start, exclude="m", starting_delay_s=3.0)[1] + float(rng.normal(0, 0.005)))
    delay_s, per_run, (extra, _batches, (base, per_member, per_starting, _)) = \
        fit_starting_delay([facts])
    assert delay_s == 3.0 and extra == 0.0
    assert (base, per_starting) == (pytest.approx(0.3, abs=0.01), pytest.approx(0.25, abs=0.01))
    assert per_run[0][:, 2].tolist() == engine_samples(facts, 3.0)[:, 2].tolist()
    assert facts.counts_at(T0 + 8.0, starting_delay_s=3.0)[1] == 1  # s0 (8 s), not s1 (1 s)
    assert facts.counts_at(T0 + 8.0)[1] == 2


def test_fit_warming_finds_how_long_a_new_member_loads_the_others_more(tmp_path: Path) -> None:
    """A member's back-to-back batches whose engine time is 0.3 s + 0.03 s per other member +
    0.04 s more per other member whose engine was ready less than 30 s before the batch (one
    becomes ready every 12 s and stays): the grid finds 30 s and both terms; the calibration
    writes them and the twin's parameters read them back."""
    import dataclasses

    from pytest_lagscale.calibration.calibrate import fit_warming

    facts = read_run(make_run(tmp_path))
    lives = dict(facts.lifecycles)  # r1, r2, r3 (ready at 5, 49 and 49 s; r3 gone at 61.2 s)
    lives["m"] = {"replica_started": T0 - 60.0, "engine_ready": T0 - 50.0}
    lives.update({f"s{i}": {"replica_started": T0 + 12.0 * i - 8.0,
                            "engine_ready": T0 + 12.0 * i} for i in range(20)})
    facts = dataclasses.replace(facts, lifecycles=lives)
    assert facts.warming_at(T0 + 25.0, 30.0, exclude="m") == 4   # r1, s0, s1, s2
    assert facts.warming_at(T0 + 25.0, 0.0) == 0
    rng = np.random.default_rng(6)
    facts = _with_back_to_back_batches(facts, 240.0, lambda start: (
        0.3 + 0.03 * facts.counts_at(start, exclude="m")[0]
        + 0.04 * facts.warming_at(start, 30.0, exclude="m") + float(rng.normal(0, 0.003))))
    warming_s, per_run, (_extra, _batches, fit) = fit_warming([facts])
    assert warming_s == 30.0
    assert fit == pytest.approx((0.3, 0.03, 0.0, 0.04), abs=0.005)
    assert per_run[0][:, 4].tolist() == engine_samples(facts, 0.0, 30.0)[:, 4].tolist()
    doc = calibrate([facts], "spark")
    assert doc["processing"]["warming_s"] == 30.0
    assert doc["processing"]["engine_s_per_warming"] == pytest.approx(0.04, abs=0.005)
    parsed = parse_calibration(yaml.safe_load(render(doc)), source="x")
    assert (parsed["engine_warming_s"], parsed["engine_s_per_warming"]) == (
        30.0, doc["processing"]["engine_s_per_warming"])


def test_a_warming_term_without_its_window_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load(render(calibrate([read_run(make_run(tmp_path))], "spark")))
    doc["processing"]["engine_s_per_warming"] = 0.04
    with pytest.raises(ConfigError, match="processing.warming_s.*engine_s_per_warming"):
        parse_calibration(doc, source="x")
