"""calibration/self_check.py and ``lagscale twin self-check``: the twin as its own truth, held
against its predictions with the fidelity benchmark's own assessment (a committed held-out
run's plan: ``tests/fixtures/heldout``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.calibration.fidelity import assess, figure_check, plan_for
from pytest_lagscale.calibration.self_check import BAND_MARK, option_problems, self_check
from pytest_lagscale.cli import app
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.report.benchjson import read_run_document
from pytest_lagscale.twin.run import HEADLINE, params_for, simulate, simulate_draws

SPIKE = Path(__file__).resolve().parents[2] / "fixtures" / "heldout" / "20261128T141506Z-spike-ci"


def test_a_set_is_one_truth_draw_assessed_against_the_prediction_as_the_benchmark_does() -> None:
    result = self_check([SPIKE], pairs=1, draws=3, seed=0, truth_seed=5, machine_probe=False)
    # the same set computed by hand: draw 0 on the truth seed, 3 draws on the predictions' seed
    plan = plan_for(read_run_document(SPIKE))
    params = params_for(plan)
    truth = simulate(plan, params, 5, draw=0).headline()
    predicted = simulate_draws(plan, params, 0, 3).distribution
    assertions, _ = assess([_fidelity(figure_check(f, truth[f], predicted[f]) for f in HEADLINE)])
    assert result.per_assertion == {a["name"]: float(a["verdict"] == "pass") for a in assertions}
    figures = all(a["verdict"] == "pass" for a in assertions if BAND_MARK not in a["name"])
    bands = all(a["verdict"] == "pass" for a in assertions if BAND_MARK in a["name"])
    assert (result.figure_targets_met, result.band_targets_met, result.all_targets_met) == \
        (float(figures), float(bands), float(figures and bands))
    assert result.runs == (SPIKE.name,) and result.pairs == 1 and not result.machine_probe


def test_shares_are_over_the_sets() -> None:
    result = self_check([SPIKE], pairs=2, draws=2, machine_probe=True)
    assert "spike-ci: reaction_time_s median |error| <= 0.15 (relative)" in result.per_assertion
    assert set(result.per_assertion.values()) <= {0.0, 0.5, 1.0}
    assert result.all_targets_met <= min(result.figure_targets_met, result.band_targets_met)
    assert result.as_dict()["pairs"] == 2


def test_a_set_of_k_runs_per_label_is_assessed_together() -> None:
    """runs_per_set k: set j holds truth draws jk .. jk + k - 1 of each run, assessed together
    (one median per label and figure over the k, the band over all)."""
    pooled = self_check([SPIKE], pairs=1, draws=2, machine_probe=False, runs_per_set=2)
    plan = plan_for(read_run_document(SPIKE))
    params = params_for(plan)
    predicted = simulate_draws(plan, params, 0, 2).distribution
    truths = [simulate(plan, params, 7, draw=i).headline() for i in (0, 1)]
    assertions, _ = assess([_fidelity((figure_check(f, t[f], predicted[f]) for f in HEADLINE),
                                      run=f"truth#{i}") for i, t in enumerate(truths)])
    assert pooled.per_assertion == {a["name"]: float(a["verdict"] == "pass") for a in assertions}
    assert all(a["runs"] == 2 for a in assertions if BAND_MARK not in a["name"])
    assert pooled.runs_per_set == 2 and pooled.as_dict()["runs_per_set"] == 2


def test_two_processes_give_the_shares_one_gives() -> None:
    """Each set's truth draws and predictions are seeded on their own: the shares do not depend
    on the workers (and the autouse leak check sees no worker left)."""
    one = self_check([SPIKE], pairs=3, draws=2, runs_per_set=2, workers=1)
    two = self_check([SPIKE], pairs=3, draws=2, runs_per_set=2, workers=2)
    assert two == one and len(one.per_assertion) > 5


def test_bad_options_are_named_with_their_range() -> None:
    problems = option_problems(pairs=0, draws=1001, seed=3, truth_seed=3, runs_per_set=0,
                               workers=0)
    assert problems == ["pairs: got 0, expected an integer in [1, 1000]",
                        "draws: got 1001, expected an integer in [1, 1000]",
                        "runs_per_set: got 0, expected an integer in [1, 100]",
                        "workers: got 0, expected an integer in [1, 64]",
                        "truth_seed: got 3, the predictions' seed; the real draws must not be "
                        "among the predicted ones: give another seed"]
    with pytest.raises(ConfigError) as info:
        self_check([], pairs=1)
    assert info.value.problems == ["runs: none given; give at least one run directory"]


def test_cli_prints_the_shares_and_exits_2_on_bad_input(tmp_path: Path) -> None:
    ok = CliRunner().invoke(app, ["twin", "self-check", str(SPIKE), "--pairs", "1",
                                  "--draws", "2", "--no-machine-probe"])
    assert ok.exit_code == 0, ok.output
    assert "both (the benchmark passes)" in ok.output and "machine probe off" in ok.output
    bad = CliRunner().invoke(app, ["twin", "self-check", str(tmp_path / "none"), "--pairs", "0",
                                   "--seed", "7"])
    assert bad.exit_code == 2
    assert "error: RUN_DIR:" in bad.output and "error: --pairs: got 0" in bad.output
    assert "error: --truth-seed: got 7" in bad.output and "Traceback" not in bad.output


def _fidelity(figures, run="truth"):
    from pytest_lagscale.calibration.fidelity import Fidelity

    return Fidelity(run=run, label="spike-ci", draws=3, seconds=0.0, figures=tuple(figures),
                    spans=())
