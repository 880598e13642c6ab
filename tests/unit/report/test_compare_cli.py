"""``lagscale compare BASELINE CURRENT`` on the committed golden documents: exit 0 without a
regression, 1 with one (table and one line per regression), 2 on bad input naming the argument."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app


def _compare(*args: str | Path):
    return CliRunner().invoke(app, ["compare", *map(str, args)], env={"COLUMNS": "160"})


def test_a_regression_exits_1_with_the_table_and_one_line_each(golden: Path) -> None:
    result = _compare(golden / "baseline_v1.json", golden / "current_v1.json")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert any("reaction_time_s" in line and "+33.3%" in line and "regression" in line
               for line in lines)
    assert any("drain_time_s" in line and "improvement" in line for line in lines)
    assert any("replica_seconds_ratio" in line and "missing" in line for line in lines)
    assert any("direction_reversals" in line and "new" in line for line in lines)
    assert lines[-3:] == [
        "2 metric(s) regressed past the baseline:",
        "  reaction_time_s: 60 -> 80 s (+33.3%), worse than the 10.0% tolerance "
        "(lower_is_better)",
        "  replica_seconds_ratio: absent from the current run (baseline 1.4 ratio)",
    ]


def test_no_regression_exits_0(golden: Path) -> None:
    result = _compare(golden / "current_v1.json", golden / "current_v1.json")
    assert result.exit_code == 0, result.output
    assert "current_v1.json vs " in result.output and ": pass" in result.output
    assert result.output.splitlines()[-1] == "no regression against the baseline"


def test_the_heading_names_both_files_whole_however_long_the_paths(golden: Path,
                                                                   tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 4)
    deep.mkdir(parents=True)
    current = shutil.copy(golden / "current_v1.json", deep / "current_v1.json")
    result = _compare(golden / "current_v1.json", current)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"{current} vs {golden / 'current_v1.json'}: pass"


def test_a_run_directory_stands_for_its_benchmark_json(golden: Path, tmp_path: Path) -> None:
    shutil.copy(golden / "current_v1.json", tmp_path / "benchmark.json")
    result = _compare(golden / "baseline_v1.json", tmp_path)
    assert result.exit_code == 1, result.output


def test_machine_differences_only_warn(golden: Path, tmp_path: Path) -> None:
    doc = json.loads((golden / "baseline_v1.json").read_text())
    doc["machine_info"]["node"] = "laptop"
    (tmp_path / "other.json").write_text(json.dumps(doc))
    result = _compare(golden / "baseline_v1.json", tmp_path / "other.json")
    assert result.exit_code == 0, result.output
    assert ("warning: machine_info: the current run's machine differs from the baseline's; "
            "timings may not be comparable") in result.output


@pytest.mark.parametrize(
    ("which", "content", "message"),
    [
        pytest.param("baseline", None,
                     "error: BASELINE: '{path}' does not exist; give a benchmark JSON file or "
                     "a run directory", id="baseline-missing"),
        pytest.param("current", "not json",
                     "error: CURRENT: {path}: is not JSON (Expecting value: line 1 column 1 "
                     "(char 0)); pass a file written by write_document", id="current-not-json"),
        pytest.param("current", "[1, 2]",
                     "error: CURRENT: {path}: top level is list, not an object; pass a file "
                     "written by write_document", id="current-not-an-object"),
        pytest.param("baseline", '{"metrics": {}}',
                     "error: BASELINE: {path}: 'schema_version' None is not one of [1]; it is "
                     "not a lagscale benchmark file", id="baseline-no-schema-version"),
    ],
)
def test_bad_input_exits_2_naming_the_argument(golden: Path, tmp_path: Path, which: str,
                                               content: str | None, message: str) -> None:
    path = tmp_path / f"{which}.json"
    if content is not None:
        path.write_text(content)
    paths = {"baseline": golden / "baseline_v1.json", "current": golden / "current_v1.json",
             which: path}
    result = _compare(paths["baseline"], paths["current"])
    assert result.exit_code == 2
    assert result.output.splitlines() == [message.format(path=path)]


def test_both_bad_arguments_are_reported_at_once(tmp_path: Path) -> None:
    result = _compare(tmp_path / "a.json", tmp_path)
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: BASELINE: '{tmp_path / 'a.json'}' does not exist; give a benchmark JSON file "
        "or a run directory",
        f"error: CURRENT: '{tmp_path}' has no benchmark.json; give a benchmark JSON file or a "
        "run directory",
    ]
