"""``lagscale tune``'s outputs and ``--confirm``'s plumbing: the tuned manifest, ``tune.json``,
and the real run's plan and comparison with an injected runner (the real one starts a broker
and replicas, which unit tests never do)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.tune.output import (add_confirmation, confirm, confirm_plan,
                                         tune_document, write_outputs)
from pytest_lagscale.tune.prepare import TuneOptions, prepare
from pytest_lagscale.tune.search import tune


class FakeRun:
    """What ``confirm`` needs of a RunResult: ``metrics``, ``check`` and ``run_dir``."""

    def __init__(self, metrics: dict[str, float | None]):
        self.metrics = metrics
        self.run_dir = Path("/runs/fake")
        self.assertions: list[tuple[str, float | None, float | None, bool]] = []

    def check(self, name: str, value: float | None, threshold: float | None,
              passed: bool) -> bool:
        self.assertions.append((name, value, threshold, passed))
        return passed


@pytest.fixture(scope="module")
def result():
    """A finished 2-point search (lagThreshold 500 and 5000, maxReplicaCount 6), 1 draw."""
    request = prepare(TuneOptions(profile="spike-ci", policy="scaledobject-ci",
                                  space=("lagThreshold=500|5000,maxReplicaCount=6",),
                                  slos=("drain_time_s<=300",), draws=1, seed=1))
    found = tune(request)
    assert found.best is not None, found.points
    return found


def test_tuned_manifest_is_the_input_with_the_best_fields_changed(result, tmp_path) -> None:
    files = write_outputs(result, tmp_path / "out")
    assert files.root.parent == tmp_path / "out"
    assert files.root.name.endswith("-tune-scaledobject-ci")
    assert files.manifest == files.root / "scaledobject-ci-tuned.yaml"
    text = files.manifest.read_text()
    assert text.startswith("# Tuned by lagscale tune from ")
    tuned, original = yaml.safe_load(text), dict(result.request.doc)
    best = result.best.values
    assert tuned["spec"]["triggers"][0]["metadata"]["lagThreshold"] == str(best["lagThreshold"])
    assert tuned["spec"]["maxReplicaCount"] == 6
    tuned["spec"]["triggers"][0]["metadata"]["lagThreshold"] = "500"
    tuned["spec"]["maxReplicaCount"] = 8
    assert tuned == original
    config = load_policy_manifest(files.manifest)  # the project's own loader accepts it
    assert config.triggers[0].settings.lag_threshold == best["lagThreshold"]


def test_points_json_holds_every_point_and_the_inputs(result, tmp_path) -> None:
    files = write_outputs(result, tmp_path)
    doc = json.loads(files.points_json.read_text())
    assert doc == json.loads(json.dumps(tune_document(result) | {"datetime": doc["datetime"]}))
    assert doc["schema_version"] == 1 and doc["best"] == result.best.index
    assert doc["inputs"]["space"] == {"lagThreshold": [500, 5000], "maxReplicaCount": [6]}
    assert doc["inputs"]["slos"] == ["drain_time_s<=300"]
    assert doc["inputs"]["reference_lag_threshold"] == 500
    assert [p["values"] for p in doc["points"]] == [
        {"lagThreshold": 500, "maxReplicaCount": 6}, {"lagThreshold": 5000,
                                                      "maxReplicaCount": 6}]
    first = doc["points"][0]
    assert set(first["stats"]) == {"reaction_time_s", "peak_lag_records", "drain_time_s",
                                   "replica_seconds", "scale_steps"}
    assert len(first["per_draw"]) == 1 and first["simulated"] is True


def test_no_manifest_without_a_feasible_point(result, tmp_path) -> None:
    from dataclasses import replace

    files = write_outputs(replace(result, best=None), tmp_path)
    assert files.manifest is None
    assert sorted(p.name for p in files.root.iterdir()) == ["tune.json"]
    assert json.loads(files.points_json.read_text())["best"] is None


def test_confirm_plans_the_tuned_manifest_as_lagscale_run_does(result, tmp_path) -> None:
    files = write_outputs(result, tmp_path)
    plan = confirm_plan(result, files.manifest, tmp_path / "real")
    assert plan.policy_config.source == str(files.manifest)
    assert plan.lag_threshold == result.best.values["lagThreshold"]
    assert plan.replica_range == (1, 6)
    assert plan.reference_lag_threshold == 500  # drain held as in the twin
    assert plan.settings.out_dir == tmp_path / "real"
    assert plan.profile.name == "spike-ci" and plan.engine == result.request.plan.engine


def test_confirm_compares_prediction_and_measurement_and_records_the_slos(result,
                                                                         tmp_path) -> None:
    files = write_outputs(result, tmp_path)
    plans = []
    fake = FakeRun({"drain_time_s": 310.0, "replica_seconds": 900.0, "peak_lag_records": None})

    def runner(plan):
        plans.append(plan)
        return fake
    confirmation = confirm(result, files.manifest, tmp_path, runner)
    assert [p.policy_config.source for p in plans] == [str(files.manifest)]
    assert confirmation.slos == (("drain_time_s<=300", 310.0, False),)
    assert fake.assertions == [("drain_time_s<=300", 310.0, 300.0, False)]
    assert not confirmation.met
    rows = {row[0]: row[1:] for row in confirmation.rows}
    best = result.best
    assert rows["replica_seconds"] == (best.median("replica_seconds"),
                                       best.p95("replica_seconds"), 900.0)
    assert rows["peak_lag_records"][2] is None and rows["reaction_time_s"][2] is None
    add_confirmation(files, confirmation)
    doc = json.loads(files.points_json.read_text())
    assert doc["confirm"]["slos"] == [{"slo": "drain_time_s<=300", "measured": 310.0,
                                       "met": False}]
    assert doc["confirm"]["run_dir"] == "/runs/fake"
