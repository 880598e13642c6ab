"""The committed baselines of the CI gate (``benchmarks/baselines/``): valid documents of ci-scale
runs from at least three samples, tolerances that catch a doubling of the gated metrics, and a
tolerance table that is the one ``lagscale baseline update`` draws from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.report import benchjson
from pytest_lagscale.report.baselines import (GATED_2X, TOLERANCES_FILE, catches_doubling,
                                              render_tolerances)
from pytest_lagscale.report.baseline_cli import MIN_SAMPLES

FOLDER = Path(__file__).resolve().parents[3] / "benchmarks" / "baselines"
FILES = sorted(FOLDER.glob("*.json"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_baseline_is_a_ci_run_of_its_label_from_enough_samples(path: Path) -> None:
    doc = benchjson.load(path)
    assert doc["baseline"]["label"] == doc["run"]["label"] == path.stem
    assert doc["inputs"]["scale"] == "ci"
    assert len(doc["baseline"]["samples"]) >= MIN_SAMPLES
    assert not any(sample["dirty"] for sample in doc["baseline"]["samples"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_gated_metrics_catch_a_doubling(path: Path) -> None:
    metrics = benchjson.load(path)["metrics"]
    gated = {name: metrics[name] for name in GATED_2X
             if name in metrics and metrics[name]["value"] is not None}
    assert gated, f"{path.name} gates none of {GATED_2X}"
    assert {name for name, entry in gated.items() if not catches_doubling(entry)} == set()
    assert metrics["lost_records"] == {"value": 0.0, "unit": "records",
                                       "direction": "lower_is_better", "tolerance": 0.0}


def test_the_tolerance_table_is_the_generated_one() -> None:
    every = {path.stem: benchjson.load(path) for path in FILES}
    assert (FOLDER / TOLERANCES_FILE).read_text() == render_tolerances(every), (
        "TOLERANCES.md is stale: rerun `lagscale baseline update` (see benchmarks/baselines/"
        "README.md)")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_no_committed_baseline_gates_a_metric_the_rule_does_not(path: Path) -> None:
    from pytest_lagscale.report.baselines import NOT_GATED

    doc = benchjson.load(path)
    gated = sorted(name for name, entry in doc["metrics"].items()
                   if name in NOT_GATED and entry["value"] is not None)
    assert gated == [], f"{path.name} still gates {gated}: run lagscale baseline regate"
    assert doc["baseline"]["rule"]["not_gated"] == sorted(NOT_GATED)
