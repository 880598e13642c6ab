"""RunResult writes the scale-out decomposition as its own section of benchmark.json."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_lagscale.report import benchjson

from .test_result import _result


def test_benchmark_json_has_the_scale_out_section_and_its_metrics(tmp_path: Path) -> None:
    result = _result(tmp_path)
    result.write()
    doc = benchjson.load(result.benchmark_path)
    section = doc["scale_out"]
    assert [r["replica_id"] for r in section["replicas"]] == ["r1", "r2"]
    assert section["replicas"][1] == {
        "replica_id": "r2", "started_s": 10.5, "actuation_s": 5.5, "cold_start_s": 5.0,
        "engine_startup_s": None, "join_s": 2.5, "first_fetch_s": 1.0, "first_record_s": 19.0,
        "in_burst": True}
    assert (section["burst_replicas"], section["cold_start_median_s"]) == (2, 5.0)
    assert doc["metrics"]["cold_start_median_s"] == {
        "value": 5.0, "unit": "s", "direction": "lower_is_better", "tolerance": 1.0}
    assert doc["metrics"]["burst_load_average_max"]["value"] is None
    json.dumps(doc)  # JSON-able as written
