from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_lagscale import __version__
from pytest_lagscale.analyze import METRICS
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.report import benchjson
from pytest_lagscale.report.benchjson import (Assertion, BenchmarkRun, Inputs, Metric,
                                              build_document, load, metrics_from_flat,
                                              write_document, written_on_exit)

WHEN = datetime(2026, 8, 1, 12, 0, 5, tzinfo=timezone.utc)
INPUTS = Inputs(profile="spike-10x", policy="k8s/scaledobject.yaml", balancer="range",
                partitions=8, seed=7, scale="ci", engine="arrow",
                versions={"kafka": "4.3.1", "python": "3.12"}, broker={"mode": "embedded"})


def _doc(commit: dict | None = None, verdict: str = "pass") -> dict:
    run = BenchmarkRun(
        inputs=INPUTS,
        metrics={"reaction_time_s": Metric(42.0, "s", "lower_is_better", 0.1)},
        assertions=[Assertion("reaction_time_s < 90", 90.0, 42.0, verdict)],
        artifacts={"timeline_png": Path("run/timeline.png")},
        machine_info={"node": "n1"},
        commit_info=commit if commit is not None else {"id": "abc123", "dirty": False})
    return build_document(run, WHEN)


def test_build_document_keys_and_values() -> None:
    doc = _doc()
    assert list(doc) == ["schema_version", "lagscale_version", "datetime", "machine_info",
                         "commit_info", "inputs", "metrics", "assertions", "artifacts"]
    assert (doc["schema_version"], doc["lagscale_version"], doc["datetime"]) == (
        1, __version__, "2026-08-01T12:00:05+00:00")
    assert doc["inputs"]["versions"] == {"kafka": "4.3.1", "python": "3.12"}
    assert doc["metrics"] == {"reaction_time_s": {"value": 42.0, "unit": "s",
                                                  "direction": "lower_is_better",
                                                  "tolerance": 0.1}}
    assert doc["assertions"] == [{"name": "reaction_time_s < 90", "threshold": 90.0,
                                  "value": 42.0, "verdict": "pass"}]
    assert doc["artifacts"] == {"timeline_png": "run/timeline.png"}
    json.dumps(doc)


def test_build_document_rejects_naive_datetime() -> None:
    with pytest.raises(ValueError, match="generated_at: a naive datetime"):
        build_document(BenchmarkRun(INPUTS, {}), datetime(2026, 8, 1))


@pytest.mark.parametrize("kwargs, message", [
    pytest.param({"direction": "up"}, "direction: 'up' is not one of", id="metric-direction"),
])
def test_metric_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Metric(1.0, "s", **kwargs)


def test_assertion_verdict_validation() -> None:
    with pytest.raises(ValueError, match="verdict: 'ok' is not one of"):
        Assertion("x", 1.0, 1.0, "ok")


def test_metrics_from_flat_uses_units_directions_and_tolerances() -> None:
    metrics = metrics_from_flat({"reaction_time_s": 10.0, "drain_monotone": 1.0}, METRICS,
                                tolerances={"drain_monotone": 0.0})
    assert metrics == {
        "reaction_time_s": Metric(10.0, "s", "lower_is_better", 0.1),
        "drain_monotone": Metric(1.0, "bool", "higher_is_better", 0.0),
    }


@pytest.mark.parametrize("commit, name", [
    pytest.param({"id": "abc123", "dirty": False}, "0001_abc123_20260801T120005Z.json",
                 id="clean"),
    pytest.param({"id": "abc123", "dirty": True}, "0001_abc123_20260801T120005Z_dirty.json",
                 id="dirty"),
    pytest.param({}, "0001_unversioned_20260801T120005Z.json", id="no-commit"),
])
def test_write_document_names_file(tmp_path: Path, commit: dict, name: str) -> None:
    path = write_document(_doc(commit), tmp_path, "machine-1")
    assert path == tmp_path / "machine-1" / name
    assert load(path) == _doc(commit)


def test_write_document_counts_up(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "0007_old_20200101T000000Z.json").write_text("{}")
    assert write_document(_doc(), tmp_path, "m").name.startswith("0008_")
    assert write_document(_doc(), tmp_path, "m").name.startswith("0009_")


def test_written_on_exit_writes_even_when_the_block_fails(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        with written_on_exit(tmp_path, "m", lambda: _doc(verdict="fail")) as written:
            raise AssertionError("reaction_time_s 120 >= 90")
    [path] = written
    assert load(path)["assertions"][0]["verdict"] == "fail"


@pytest.mark.parametrize("version, filename", [
    pytest.param(1, "baseline_v1.json", id="schema-1"),
])
def test_load_each_schema_version(golden: Path, version: int, filename: str) -> None:
    doc = load(golden / filename)
    assert json.loads((golden / filename).read_text())["schema_version"] == version
    assert doc["schema_version"] == benchjson.SCHEMA_VERSION
    assert doc["metrics"]["reaction_time_s"]["value"] == 60.0


def test_every_old_version_has_an_upgrade() -> None:
    assert sorted(benchjson.CHECKS) == list(range(1, benchjson.SCHEMA_VERSION + 1))
    assert sorted(benchjson.UPGRADES) == list(range(1, benchjson.SCHEMA_VERSION))


def test_upgrade_chain_runs_registered_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # a fake v2 proves the loop: v1 is checked, upgraded, then v2 is checked
    v1 = _doc()
    monkeypatch.setattr(benchjson, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(benchjson.UPGRADES, 1, lambda d: {**d, "upgraded": True})
    monkeypatch.setitem(benchjson.CHECKS, 2, lambda d, s: None)
    doc = benchjson.upgrade(v1)
    assert (doc["schema_version"], doc["upgraded"]) == (2, True)


@pytest.mark.parametrize("content, message", [
    pytest.param('{"schema_version": 9}',
                 "'schema_version' 9 is not one of [1]; upgrade pytest-lagscale",
                 id="newer-version"),
    pytest.param('{"benchmarks": []}',
                 "'schema_version' None is not one of [1]; it is not a lagscale benchmark file",
                 id="no-version"),
    pytest.param('{"schema_version": 1}',
                 "keys ['datetime', 'machine_info', 'commit_info', 'inputs', 'metrics', "
                 "'assertions', 'artifacts'] are missing from a schema 1 document; rewrite it "
                 "with write_document", id="v1-incomplete"),
    pytest.param("[1]", "top level is list, not an object; pass a file written by "
                 "write_document", id="not-an-object"),
])
def test_load_rejects(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value) == f"{path}: {message}"


def test_load_rejects_non_json(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{")
    with pytest.raises(ConfigError, match="is not JSON"):
        load(path)


def test_wrongly_typed_fields_are_one_line_each(tmp_path) -> None:
    golden = Path(__file__).resolve().parents[2] / "golden" / "current_v1.json"
    doc = json.loads(golden.read_text())
    doc["inputs"] = 3
    doc["metrics"]["reaction_time_s"]["value"] = "fast"
    doc["metrics"]["x"] = [1]
    path = tmp_path / "typed.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as info:
        benchjson.load(path)
    assert info.value.problems == [
        f"{path}: 'inputs' is int 3; allowed: an object; rewrite it with write_document",
        f"{path}: 'metrics.reaction_time_s.value' is str 'fast'; allowed: a number or null; "
        "rewrite it with write_document",
        f"{path}: 'metrics.x' is list [1]; allowed: an object with value, unit and direction; "
        "rewrite it with write_document"]


def test_a_binary_or_unreadable_file_is_one_line(tmp_path) -> None:
    path = tmp_path / "b.json"
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte at offset 0\)"):
        benchjson.load(path)
    with pytest.raises(ConfigError, match=r"cannot be read \(File name too long\)"):
        benchjson.load(tmp_path / ("x" * 5000))
