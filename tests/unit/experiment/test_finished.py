"""A finished run read back from its directory (``experiment/finished.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.finished import read_finished_run


def _event(monotonic_s: float, event: str, source: str = "producer", **fields) -> str:
    return json.dumps({"event": event, "source": source, "wall_time": "2026-11-25T00:00:00+00:00",
                       "wall_ns": 1, "monotonic_s": monotonic_s, **fields})


def _run_dir(tmp_path: Path, events: list[str]) -> Path:
    doc = {"metrics": {"peak_lag_records": {"value": 900.0, "unit": "records",
                                            "direction": "lower_is_better"},
                       "reaction_time_s": {"value": None, "unit": "s",
                                           "direction": "lower_is_better"}},
           "steps": [{"t_s": 63.0, "replicas_before": 1, "replicas_after": 5}],
           "run": {"label": "spike-ci", "max_replicas": 8}, "inputs": {"partitions": 8},
           "experiment": {"replicas": {}}, "assertions": []}
    (tmp_path / "benchmark.json").write_text(json.dumps(doc))
    (tmp_path / "events.jsonl").write_text("\n".join(events) + "\n")
    pd.DataFrame({"t_s": [0.0, 1.0], "total_lag": [0, 5]}).to_parquet(
        tmp_path / "timeline.parquet")
    return tmp_path


def test_times_count_from_the_load_start_and_the_document_is_read(tmp_path: Path) -> None:
    run = read_finished_run(_run_dir(tmp_path, [
        _event(99.9, "run_phase", "runner", phase="load"), _event(100.0, "load_start"),
        _event(160.0, "spike_start", scheduled_s=60.0)]))
    assert run.events["t_s"].tolist() == pytest.approx([-0.1, 0.0, 60.0])
    assert run.metrics == {"peak_lag_records": 900.0, "reaction_time_s": None}
    assert run.steps[0]["replicas_after"] == 5 and run.run["max_replicas"] == 8
    assert run.inputs == {"partitions": 8} and len(run.timeline) == 2


def test_the_runner_load_mark_is_the_origin_without_a_load_start(tmp_path: Path) -> None:
    run = read_finished_run(_run_dir(tmp_path, [
        _event(50.0, "run_phase", "runner", phase="deploy"),
        _event(70.0, "run_phase", "runner", phase="load")]))
    assert run.events["t_s"].tolist() == [-20.0, 0.0]


def test_records_and_checks_go_into_benchmark_json(tmp_path: Path) -> None:
    run = read_finished_run(_run_dir(tmp_path, [_event(1.0, "load_start")]))
    run.record("policies", {"profile": "spike"})
    run.mark_experiment(9)
    assert run.check("processed == produced", 0, 0, True)
    doc = json.loads((tmp_path / "benchmark.json").read_text())
    assert doc["experiment"] == {"replicas": {}, "policies": {"profile": "spike"},
                                 "numbers": [9]}
    assert doc["assertions"] == [{"name": "processed == produced", "threshold": 0, "value": 0,
                                  "verdict": "pass"}]


def test_a_missing_file_or_load_mark_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing benchmark.json, timeline.parquet, "
                                          r"events.jsonl, expected the directory of a finished"):
        read_finished_run(tmp_path)
    with pytest.raises(ConfigError, match=r"events.jsonl: no load_start event and no run_phase "
                                          r"'load' mark"):
        read_finished_run(_run_dir(tmp_path, [_event(1.0, "spike_start")]))
