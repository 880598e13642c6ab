"""The findings report's simulated section (:mod:`pytest_lagscale.tune.simulated`): which
runs get a full-scale prediction, how a lagThreshold override maps to full scale, and the
experiment 8 cross-check by the twin's tune search."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytest_lagscale.calibration.fidelity import Unsupported
from pytest_lagscale.config.bundled import resolve_manifest
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.report.findings import RunDoc
from pytest_lagscale.report.findings_render import simulated_view
from pytest_lagscale.tune.simulated import (Simulated, _full_settings, full_counterpart,
                                            simulate_findings, tune_check)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"


def _doc(name: str) -> dict:
    return json.loads(next(GOLDEN.glob(f"*-{name}/benchmark.json")).read_text())


def _run(doc: dict, label: str = "x") -> RunDoc:
    return RunDoc(Path(f"/nowhere/{label}/benchmark.json"), doc)


def test_full_counterparts_are_the_bundled_names_without_ci() -> None:
    names = ("spike", "spike-ci", "bursty-ci")
    assert full_counterpart("spike-ci", names) == "spike"
    assert full_counterpart("bursty-ci", names) is None
    assert full_counterpart("spike", names) == "spike"
    assert full_counterpart("mine", names) is None


def test_a_lag_threshold_override_keeps_its_ratio_to_the_committed_one() -> None:
    from pytest_lagscale.config.policy import load_policy_manifest
    from pytest_lagscale.control.policy.build import build_policy

    doc = copy.deepcopy(_doc("spike-ci"))
    ci = build_policy(load_policy_manifest(resolve_manifest(
        doc["inputs"]["policy"], "--policy"))).lag_threshold_records
    doc["inputs"]["lag_threshold"] = ci * 10
    settings = _full_settings(doc)
    full = build_policy(load_policy_manifest(settings.manifest_files()["policy"]))
    assert settings.scale == "full" and settings.profile == "spike"
    assert settings.lag_threshold == 10 * full.lag_threshold_records


def test_unmodelled_runs_raise_the_twins_reasons() -> None:
    with pytest.raises(Unsupported, match="scales on CPU"):
        _full_settings(_doc("spike-ci-hpa-cpu-ci"))
    doc = copy.deepcopy(_doc("spike-ci"))
    doc["inputs"]["profile"] = str(next(GOLDEN.glob("*-spike-ci")) / "benchmark.json")
    with pytest.raises(ConfigError):
        _full_settings(doc)


def test_draws_out_of_range_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="--full-scale-draws"):
        simulate_findings([], draws=0)


def _swept(values: list[int], slo_s: float, chosen: int | None) -> RunDoc:
    doc = copy.deepcopy(_doc("spike-ci"))
    doc["experiment"] = {"sweep": {"drain_slo_s": slo_s, "values": [
        {"lag_threshold": v} for v in values], "recommendation": {
        "lag_threshold": chosen, "drain_slo_s": slo_s}}}
    return _run(doc, "spike-ci")


def test_the_sweep_is_cross_checked_in_the_twin() -> None:
    check = tune_check([_swept([50, 500, 5000], 60.0, 500)], draws=2)
    assert check is not None and check.measured == 500
    assert sorted(check.swept) == [50, 500, 5000]
    assert len(check.grid) == 9 and check.grid[0] == 50 and check.grid[-1] == 5000
    held = [v for v, (_, ok) in check.swept.items() if ok]
    assert check.twin_largest_swept == (max(held) if held else None)
    assert check.agrees == (check.twin_largest_swept == 500)
    # an SLO no threshold can meet: nothing is picked
    hopeless = tune_check([_swept([50, 500], 1.0, None)], draws=1)
    assert hopeless.twin_largest_swept is None and hopeless.tune_best is None
    view = simulated_view(Simulated(1, "spark.yaml", {"reaction_time_s": 0.3}, tune=hopeless))
    assert "no value of the grid met the SLO" in view["tune_sentence"]


def test_no_sweep_no_cross_check() -> None:
    assert tune_check([_run(_doc("spike-ci"))]) is None
