"""``lagscale run --dry-run``: every input resolved and checked, the plan printed, exit 0, and
nothing started or written; bad input still exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def test_a_dry_run_prints_the_plan_and_writes_nothing(workdir: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--profile", "partitions-ci", "--policy",
                                      "scaledobject-partitions-ci", "--engine", "arrow",
                                      "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "run: partitions-ci-scaledobject-partitions-ci-arrow"
    assert "replicas: engine arrow, balancer cooperative-sticky, trigger interval 1 s" in lines
    assert "actions: 15 s increase_partitions to=16" in lines
    assert any(line.startswith("expected duration: 60 s of load, then up to 300 s to settle")
               for line in lines)
    assert lines[-1] == "dry run: 1 run(s) planned, nothing started"
    assert list(workdir.iterdir()) == []


def test_a_dry_run_of_a_sweep_plans_each_value(workdir: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--lag-threshold", "100,1000", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert [l for l in result.output.splitlines() if l.startswith("run: ")] == [
        "run: spike-ci-lt100", "run: spike-ci-lt1000"]


def test_a_dry_run_with_bad_input_exits_2(workdir: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--profile", "spikey", "--dry-run"])
    assert result.exit_code == 2
    assert result.output.startswith("error: ") and "spike-ci" in result.output
    assert list(workdir.iterdir()) == []
