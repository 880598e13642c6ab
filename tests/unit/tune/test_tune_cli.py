"""``lagscale tune``: exit 0 with the fronts, the best point and the files; 1 when no point
meets the SLOs; 2 with ``error:`` lines and nothing written on bad input; ``--confirm``'s
path with an injected runner."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.config.bundled import resolve_manifest
from pytest_lagscale.tune.cli import run_tune
from pytest_lagscale.tune.prepare import TuneOptions

BASE = ("--profile", "spike-ci", "--policy", "scaledobject-ci")


def _tune(*args: str | Path):
    return CliRunner().invoke(app, ["tune", *map(str, args)])


def test_prints_the_fronts_and_the_best_point_and_writes_both_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _tune(*BASE, "--slo", "drain_time_s<=300", "--space", "lagThreshold=500|5000",
                   "--draws", "1", "--out", out)
    assert result.exit_code == 0, result.output
    assert "Pareto fronts: median replica-seconds vs p95 peak lag / p95 drain" in result.output
    assert "2 points (0 invalid combinations), 2 meet every SLO" in result.output
    assert "best: #" in result.output and "drain_time_s<=300 (p95 " in result.output
    (root,) = out.iterdir()
    assert sorted(p.name for p in root.iterdir()) == ["scaledobject-ci-tuned.yaml", "tune.json"]
    assert f"tuned manifest: {root / 'scaledobject-ci-tuned.yaml'}" in result.output


def test_no_point_meeting_the_slos_exits_1_and_writes_only_the_points(tmp_path: Path) -> None:
    result = _tune(*BASE, "--slo", "drain_time_s<=1", "--space", "lagThreshold=500",
                   "--draws", "1", "--out", tmp_path)
    assert result.exit_code == 1, result.output
    assert "no point meets every SLO; nearest: #0 lagThreshold=500: drain_time_s<=1 (p95 " \
        in result.output
    (root,) = tmp_path.iterdir()
    assert [p.name for p in root.iterdir()] == ["tune.json"]


def test_bad_input_exits_2_with_every_problem_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _tune(*BASE, "--slo", "drain_tim_s<=60", "--slo", "peak_lag_records<=x",
                   "--space", "lagThreshold=100..100000:60,pollingInterval=0..4",
                   "--draws", "0", "--budget", "0", "--engine", "flink", "--out", out)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert lines[:3] == [
        "error: --draws: got 0, expected an integer in [1, 1000]; give a count in the range",
        "error: --budget: got 0, expected an integer >= 1 (grid points); give a positive count",
        "error: --engine: got 'flink', expected one of spark, arrow (the engines the twin has "
        "a calibration for); pick one of them",
    ]
    assert lines[3].startswith("error: --slo: got metric 'drain_tim_s' in 'drain_tim_s<=60', "
                               "expected one of ") and lines[3].endswith("use 'drain_time_s'")
    assert lines[4] == ("error: --slo: got value 'x' in 'peak_lag_records<=x', expected a "
                        "finite number in the metric's unit; write e.g. 'peak_lag_records<=60'")
    assert lines[5:] == [
        "error: --space: got '100..100000:60' for 'lagThreshold' in "
        "'lagThreshold=100..100000:60', expected KEY=LO..HI, KEY=LO..HI:N, KEY=A|B|C or KEY=V "
        "with whole numbers; give N in [1, 50] after ':'",
        "error: --space: 'pollingInterval=0..4': 'spec.pollingInterval': got 0, expected an "
        "integer >= 1 (seconds) in "
        f"{resolve_manifest('scaledobject-ci', '--policy')}; raise it to at "
        "least 1"]
    assert not out.exists()


def test_a_grid_over_the_budget_exits_2(tmp_path: Path) -> None:
    result = _tune(*BASE, "--slo", "drain_time_s<=60", "--space",
                   "lagThreshold=100..1000:4,scaleDown.stabilizationWindowSeconds=0..60:3",
                   "--budget", "10", "--out", tmp_path)
    assert result.exit_code == 2
    assert "error: --budget: the space has 12 points (4 lagThreshold x 3 scaleDown." \
           "stabilizationWindowSeconds), expected at most 10; raise --budget to 12 or give " \
           "fewer values per key (KEY=LO..HI:N)" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_cpu_policy_is_refused(tmp_path: Path) -> None:
    result = _tune("--profile", "spike-ci", "--policy", "hpa-cpu-ci", "--slo",
                   "drain_time_s<=60", "--space", "maxReplicaCount=4", "--out", tmp_path)
    assert result.exit_code == 2
    assert "error: --policy: " in result.output
    assert "is a HorizontalPodAutoscaler, expected a ScaledObject" in result.output


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(app, ["tune", "--help"])
    assert result.exit_code == 0
    for option in ("--profile", "--policy", "--slo", "--space", "--draws", "--budget", "--out",
                   "--confirm", "--seed", "--partitions", "--engine"):
        assert option in result.output


def _confirmed(tmp_path: Path, measured_drain: float) -> tuple[int, str, list]:
    plans = []

    class Run:
        metrics = {"drain_time_s": measured_drain, "replica_seconds": 1000.0}
        run_dir = tmp_path / "real-run"

        def check(self, name, value, threshold, passed):
            return passed

    def runner(plan):
        plans.append(plan)
        return Run()
    text = io.StringIO()
    options = TuneOptions(profile="spike-ci", policy="scaledobject-ci",
                          space=("lagThreshold=500",), slos=("drain_time_s<=300",), draws=1)
    code = run_tune(options, tmp_path / "out", True, Console(file=text, width=200), runner)
    return code, text.getvalue(), plans


def test_confirm_runs_the_tuned_manifest_once_and_prints_predicted_vs_measured(
        tmp_path: Path) -> None:
    code, text, plans = _confirmed(tmp_path, 250.0)
    assert code == 0, text
    (plan,) = plans
    assert plan.policy_config.source.endswith("scaledobject-ci-tuned.yaml")
    assert "--confirm: twin prediction vs the real run" in text
    assert "SLO drain_time_s<=300: met (measured 250.0)" in text
    (root,) = (tmp_path / "out").iterdir()
    doc = json.loads((root / "tune.json").read_text())
    assert doc["confirm"]["slos"] == [{"slo": "drain_time_s<=300", "measured": 250.0,
                                       "met": True}]


def test_confirm_missing_an_slo_exits_1(tmp_path: Path) -> None:
    code, text, _ = _confirmed(tmp_path, 400.0)
    assert code == 1
    assert "SLO drain_time_s<=300: missed (measured 400.0)" in text


def test_confirm_is_skipped_when_no_point_meets_the_slos(tmp_path: Path) -> None:
    def runner(plan):
        raise AssertionError("no real run without a feasible point")
    text = io.StringIO()
    options = TuneOptions(profile="spike-ci", policy="scaledobject-ci",
                          space=("lagThreshold=500",), slos=("drain_time_s<=1",), draws=1)
    code = run_tune(options, tmp_path, True, Console(file=text, width=200), runner)
    assert code == 1
    assert "--confirm: skipped (no point meets every SLO)" in text.getvalue()
