"""A pre-registered prediction held against a run: like-for-like figures, refusal of a run of
other inputs, and ``lagscale twin hold``'s exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.contract.errors import ConfigError


def _predict_and_run(tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    """A 3-draw prediction of spike-ci and its median draw's run directory (made readable as
    a finished run: timeline.parquet beside timeline.csv)."""
    prediction = tmp_path / "prediction.json"
    result = CliRunner().invoke(app, ["simulate", "--profile", "spike-ci", "--draws", "3",
                                      "--out", str(tmp_path / "runs"), "--prediction",
                                      str(prediction), *extra])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    pd.read_csv(run_dir / "timeline.csv").to_parquet(run_dir / "timeline.parquet")
    return prediction, run_dir


def test_the_median_draw_holds_its_own_prediction(tmp_path: Path) -> None:
    from pytest_lagscale.calibration.preregistered import hold, markdown

    prediction, run_dir = _predict_and_run(tmp_path)
    rows = {r.name: r for r in hold(prediction, run_dir)}
    doc = json.loads(prediction.read_text())
    assert set(rows) == set(doc["figures"])
    for name in ("reaction_time_s", "peak_lag_records", "drain_time_s", "replica_seconds"):
        row, figure = rows[name], doc["figures"][name]
        assert row.measured is not None and isinstance(row.in_band, bool)
        # like for like: the prediction's own median and band against the run's figure
        assert (row.median, row.p5, row.p95) == (figure["median"], figure["p5"], figure["p95"])
        assert row.error == pytest.approx((row.median - row.measured) / row.measured)
        assert row.in_band == (figure["p5"] <= row.measured <= figure["p95"])
        assert abs(row.error) < 0.25, row   # the median draw: one of the draws, near the medians
    assert rows["backlog_at_switch_records"].measured is None
    assert rows["back_to_min_s"].measured > 0
    table = markdown(list(rows.values()))
    assert table.splitlines()[0].startswith("| figure | unit | predicted median")
    assert "| `scale_steps` | count |" in table


def test_a_run_of_other_inputs_is_refused(tmp_path: Path) -> None:
    from pytest_lagscale.calibration.preregistered import hold

    prediction, run_dir = _predict_and_run(tmp_path)
    doc = json.loads(prediction.read_text())
    doc["inputs"]["policy"], doc["inputs"]["engine"] = "hpa-cpu-ci", "arrow"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as raised:
        hold(other, run_dir)
    text = str(raised.value)
    assert "policy: the prediction's 'hpa-cpu-ci', the run's 'scaledobject-ci'" in text
    assert "engine: the prediction's 'arrow', the run's 'spark'" in text


def test_cli_prints_the_table_or_exits_2(tmp_path: Path) -> None:
    prediction, run_dir = _predict_and_run(tmp_path)
    ok = CliRunner().invoke(app, ["twin", "hold", str(prediction), str(run_dir), "--markdown"])
    assert ok.exit_code == 0, ok.output
    assert "| `drain_time_s` | s |" in ok.output
    bad = CliRunner().invoke(app, ["twin", "hold", str(tmp_path / "absent.json"), str(run_dir)])
    assert bad.exit_code == 2
    assert f"error: PREDICTION.json: {str(tmp_path / 'absent.json')!r} does not exist" in \
        bad.output


def test_the_findings_report_holds_each_prediction_against_its_run(tmp_path: Path) -> None:
    prediction, run_dir = _predict_and_run(tmp_path)
    other = tmp_path / "other.json"
    doc = json.loads(prediction.read_text())
    doc["inputs"]["profile"] = "bursty-ci"
    other.write_text(json.dumps(doc))
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(run_dir), "--full-scale-draws", "0",
                                      "--prediction", str(prediction), "--prediction",
                                      str(other), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "findings.md").read_text()
    section = text[text.index("## Full scale: the pre-registered prediction"):]
    assert f"### spike-ci ({run_dir.name})" in section
    assert "| drain_time_s | s |" in section
    assert "other.json); the twin was not recalibrated since. Error" in section
    assert "No run of this report has its inputs: not held." in section
    assert 'id="full-scale-held"' in (out / "findings.html").read_text()
    missing = CliRunner().invoke(app, ["report", str(run_dir), "--prediction",
                                       str(tmp_path / "nope.json"), "--out", str(out)])
    assert missing.exit_code == 2 and "error: --prediction: " in missing.output


def test_the_findings_report_holds_a_prediction_against_every_run_of_its_inputs(
        tmp_path: Path) -> None:
    """Two runs of the predicted inputs are two samples: both are held."""
    import shutil

    prediction, run_dir = _predict_and_run(tmp_path)
    second = run_dir.with_name(run_dir.name.replace("Z-", "Z-second-", 1))
    shutil.copytree(run_dir, second)
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(run_dir), str(second), "--full-scale-draws",
                                      "0", "--prediction", str(prediction), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "findings.md").read_text()
    section = text[text.index("## Full scale: the pre-registered prediction"):]
    assert f"({run_dir.name})" in section and f"({second.name})" in section
    assert section.count("| drain_time_s | s |") == 2
