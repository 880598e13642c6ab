"""RunResult: the benchmark JSON of a run and assertions recorded before they are asserted."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_lagscale.analyze import RunSpec, measure
from pytest_lagscale.analyze.reconcile import Reconciliation
from pytest_lagscale.experiment.result import RUN_METRICS, RunResult
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.report import benchjson
from pytest_lagscale.report.benchjson import Inputs
from pytest_lagscale.report.compare import compare_documents

from ..analyze import synth

SPEC = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
               capacity_per_s=100.0)


def _result(tmp_path: Path, lost: int = 0) -> RunResult:
    timeline, events = synth.scale_out_run()
    rec = Reconciliation(produced_total=1000, stored_rows_total=1000 - lost,
                         distinct_processed_total=1000 - lost, lost_total=lost,
                         duplicated_total=0, duplicate_rows_total=0, unexpected_total=0,
                         lost_examples=((0, 1),) if lost else (), duplicated_examples=(),
                         unexpected_examples=(), engine="spark", elapsed_s=1.0)
    return RunResult(
        settings=RunSettings(Path("fixtures/profiles/spike-ci.yaml")), run_dir=tmp_path,
        spec=SPEC, measurements=measure(timeline, events, SPEC), reconciliation=rec,
        timeline=timeline, events=events,
        inputs=Inputs("spike-ci", "scaledobject-ci", "cooperative-sticky", 3, 1, "ci", "arrow"),
        extra_metrics={"lost_records": float(lost), "duplicated_records": 0.0,
                       "produced_records": 1000.0, "run_wall_time_s": 300.0},
        run_info={"topic": "events", "group": "enrich"})


def test_check_records_each_verdict_in_the_json_and_the_summary(tmp_path: Path) -> None:
    result = _result(tmp_path)
    assert result.check("reaction_time_s < 90", 19.0, 90.0, True) is True
    assert result.check("lost_records == 0", 3.0, 0.0, False) is False
    doc = benchjson.load(result.benchmark_path)
    assert doc["assertions"] == [
        {"name": "reaction_time_s < 90", "threshold": 90.0, "value": 19.0, "verdict": "pass"},
        {"name": "lost_records == 0", "threshold": 0.0, "value": 3.0, "verdict": "fail"}]
    assert doc["metrics"]["reaction_time_s"]["value"] == 19.0
    assert set(RUN_METRICS) <= set(doc["metrics"])
    assert doc["run"]["topic"] == "events" and doc["run"]["label"] == "spike-ci"
    assert doc["run"]["reconciliation"]["exact"] is True
    summary = (tmp_path / "summary.md").read_text()
    assert "| lost_records == 0 | 0 | 3 | fail |" in summary


def test_lost_records_regress_against_a_clean_baseline(tmp_path: Path) -> None:
    clean = _result(tmp_path / "a").document()
    lossy = _result(tmp_path / "b", lost=2).document()
    json.dumps(lossy)  # JSON-able as written
    comparison = compare_documents(clean, lossy)
    failed = {row.metric for row in comparison.failures}
    assert comparison.verdict == "fail" and "lost_records" in failed
