"""``lagscale twin predict``: a committed held-out run (``tests/fixtures/heldout``: a run of the
calibration's machine that the calibration did not see) predicted within the stated band
(exit 0), a run doctored past it (exit 1), and bad input (exit 2, nothing simulated)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from typer.testing import CliRunner

from pytest_lagscale.cli import app

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
HELD_OUT = Path(__file__).resolve().parents[2] / "fixtures" / "heldout"
SPIKE = HELD_OUT / "20261128T141506Z-spike-ci"
CPU = GOLDEN / "20261123T013001Z-spike-ci-hpa-cpu-ci"


def _predict(*args: object):
    return CliRunner().invoke(app, ["twin", "predict", *map(str, args)],
                              catch_exceptions=False)


def test_a_held_out_run_is_predicted_within_the_stated_band() -> None:
    result = _predict(SPIKE, "--draws", "5")
    assert result.exit_code == 0, result.output
    assert "spike-ci: real vs twin (5 draws, calibration 6.18.44-fc-v595)" in result.output
    assert "peak_lag_records" in result.output and "revoke_to_assigned_s" in result.output
    assert "1 run(s) predicted within the twin's stated band" in result.output
    assert "+-30 % yes" in result.output and "+-6 " in result.output  # reaction, steps
    probed = _predict(SPIKE, "--draws", "2", "--machine-probe")
    assert probed.exit_code == 0, probed.output
    assert re.search(r"spike-ci: real vs twin \(2 draws, machine probe: alone start \d+\.\d\d s, "
                     r"calibration 6\.18\.44-fc-v595\)", probed.output)  # on one line


def test_a_run_three_times_slower_than_the_twin_is_outside_the_band(tmp_path: Path) -> None:
    run = tmp_path / SPIKE.name
    shutil.copytree(SPIKE, run)
    doc = json.loads((run / "benchmark.json").read_text())
    doc["metrics"]["reaction_time_s"]["value"] *= 3
    (run / "benchmark.json").write_text(json.dumps(doc))
    result = _predict(run, "--draws", "5")
    assert result.exit_code == 1, result.output
    assert "outside the stated band: spike-ci: reaction_time_s: -" in result.output


def test_bad_input_exits_2_naming_each_problem(tmp_path: Path) -> None:
    result = _predict(tmp_path / "nope", "--draws", "0")
    assert result.exit_code == 2
    assert f"error: RUN_DIR: {str(tmp_path / 'nope')!r} does not exist" in result.output
    assert "error: --draws: got 0, expected an integer in [1, 1000]" in result.output


def test_a_run_the_twin_does_not_model_exits_2_naming_the_input() -> None:
    result = _predict(CPU, "--draws", "2")
    assert result.exit_code == 2
    assert f"error: {CPU}: " in result.output
    assert "not modelled by the twin: policy 'hpa-cpu-ci' scales on CPU" in result.output
