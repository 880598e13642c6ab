"""Experiment 10's pure helpers: a source's row, the tolerance, the broker-first verdicts, and the
findings section built from recorded runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.analyze.lag_delay import Verdict, broker_first, source_row, tolerance_s
from pytest_lagscale.report.findings import RunDoc, experiments_of
from pytest_lagscale.report.findings_extract import EXTRACTORS

METRICS = {"reaction_time_s": 31.0, "peak_lag_records": 52_000.0, "replica_seconds": 900.0}
SIGNAL = {"aws-cloudwatch": {"steps": 40, "decisions": 3, "staleness_s_median": 14.0, "staleness_s_max": 19.9,
                             "decision_staleness_s_median": 12.0, "decision_staleness_s_max": 18.0}}


def test_source_row_takes_the_signal_of_its_trigger_type() -> None:
    row = source_row("cloudwatch", METRICS, 21.5, 64.0, SIGNAL)
    assert row == {"source": "cloudwatch", "reaction_time_s": 31.0, "detection_s": 21.5,
                   "staleness_at_decision_s": 12.0, "staleness_at_decision_max_s": 18.0,
                   "staleness_at_step_median_s": 14.0, "peak_lag_records": 52_000.0, "drain_time_s": 64.0,
                   "replica_seconds": 900.0}
    assert source_row("broker", {}, None, None, SIGNAL)["staleness_at_decision_s"] is None


@pytest.mark.parametrize(("polling", "sync", "expected"), [
    pytest.param(2, 3, 3.0, id="ci-hpa-sync-is-the-longer"), pytest.param(15, 15, 15.0, id="full")])
def test_tolerance_is_one_controller_period(polling: float, sync: float, expected: float) -> None:
    assert tolerance_s(polling, sync) == expected


def test_broker_first_verdicts() -> None:
    rows = {"broker": {"detection_s": 9.0}, "prometheus": {"detection_s": 7.0},
            "cloudwatch": {"detection_s": 5.0}, "confluent": {"detection_s": None}}
    verdicts = broker_first(rows, 3.0)
    assert [(v.source, v.passed) for v in verdicts] == [("prometheus", True), ("cloudwatch", False),
                                                      ("confluent", True)]
    assert verdicts[1].sentence() == "broker detection 9.0 s LATER than cloudwatch's 5.0 s (tolerance 3 s)"
    assert broker_first({"broker": {}, "prometheus": {"detection_s": 5.0}}, 3.0)[0].passed is False
    assert isinstance(verdicts[0], Verdict)


def run_doc(source: str, lost: int, record_table: bool) -> RunDoc:
    row = {**source_row(source, METRICS, 20.0, 60.0, SIGNAL), "lost_records": lost, "duplicated_records": 0}
    record = {"source": source, "row": row}
    if record_table:
        record.update(table={source: row}, tolerance_s=3.0, broker_first=[
            {"source": "cloudwatch", "broker_s": 8.0, "other_s": 20.0, "tolerance_s": 3.0, "passed": True}])
    return RunDoc(Path(f"/r/{source}/benchmark.json"), {"experiment": {"lag_sources": record},
                                                        "run": {"label": f"spike-ci-{source}"}})


def test_findings_section_ten() -> None:
    runs = [run_doc("broker", 0, True), run_doc("cloudwatch", 2, False)]
    assert experiments_of(runs[1]) == {10}
    extract = EXTRACTORS[10](runs)
    verdicts = {f.name: (f.value, f.verdict) for f in extract.figures}
    assert verdicts["sources with processed == produced"] == ("1 of 2", "fail")
    assert verdicts["broker detects no later than cloudwatch (+3 s)"] == ("8 s vs 20 s", "pass")
    assert [row[0] for row in extract.tables[0].rows] == ["broker", "cloudwatch"]
    assert extract.conclusion.startswith("Measured: broker detected the spike in 20 s on a signal")
    assert EXTRACTORS[10]([]).conclusion == "The lag-source runs recorded no table (experiment.lag_sources)."
