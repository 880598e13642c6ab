"""``lagscale simulate``: exit 0 with the tables and a run directory; exit 2 with ``error:``
lines and nothing written on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.config.bundled import manifest_path


def _simulate(*args: str | Path):
    return CliRunner().invoke(app, ["simulate", *map(str, args)])


def test_writes_a_twin_run_directory_and_prints_the_distribution(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = _simulate("--profile", "spike-ci", "--policy", "scaledobject-ci", "--draws", "2",
                       "--seed", "5", "--out", out)
    assert result.exit_code == 0, result.output
    assert "twin: distribution over 2 draws" in result.output
    assert "replica-seconds" in result.output and "reaction_time_s" in result.output
    (run_dir,) = out.iterdir()
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "benchmark.json", "events.jsonl", "summary.md", "timeline.csv", "timeline.png"]
    doc = json.loads((run_dir / "benchmark.json").read_text())
    assert doc["run"]["platform"] == "twin"
    assert doc["inputs"]["profile"] == "spike-ci" and doc["inputs"]["policy"] == \
        "scaledobject-ci"
    assert doc["experiment"]["twin"]["draws"] == 2
    assert doc["metrics"]["lost_records"]["value"] == 0.0
    assert doc["metrics"]["reaction_time_s"]["value"] > 0


def test_bad_options_exit_2_name_each_option_and_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = _simulate("--profile", "spike-ci", "--policy", "scaledobject-ci", "--draws", "0",
                       "--seed", "-1", "--engine", "flink", "--partitions", "0", "--out", out)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert lines[:3] == [
        "error: --draws: got 0, expected an integer in [1, 1000]; give a count in the range",
        "error: --seed: got -1, expected an integer >= 0; give a non-negative seed",
        "error: --engine: got 'flink', expected one of spark, arrow (the engines the twin has "
        "a calibration for); pick one of them",
    ]
    assert any(line.startswith("error: --partitions") for line in lines[3:]), result.output
    assert not out.exists()


def test_a_cpu_policy_is_refused_with_exit_2(tmp_path: Path) -> None:
    result = _simulate("--profile", "spike-ci", "--policy", "hpa-cpu-ci", "--out", tmp_path)
    assert result.exit_code == 2
    assert "error: --policy: " in result.output and "scales on CPU" in result.output
    assert list(tmp_path.iterdir()) == []


def test_an_external_scaler_the_run_does_not_serve_is_refused_with_exit_2(
        tmp_path: Path) -> None:
    doc = yaml.safe_load(manifest_path("scaledobject-persistent-lag-ci").read_text())
    del doc["metadata"]["annotations"]["lagscale.dev/local-scaler-address"]
    policy = tmp_path / "scaledobject-remote-scaler.yaml"
    policy.write_text(yaml.safe_dump(doc))
    out = tmp_path / "runs"
    result = _simulate("--profile", "spike-ci", "--policy", policy, "--out", out)
    assert result.exit_code == 2
    assert (f"error: --policy: {str(policy)!r} spec.triggers[0] calls the external scaler "
            "'lagscale-persistent-lag-scaler.default.svc.cluster.local:6000', which the twin does "
            "not model (it runs only the persistent-lag scaler a run serves itself); set "
            "scalerAddress: 'lagscale://local' or name the address in the annotation "
            "lagscale.dev/local-scaler-address") in result.output
    assert not out.exists()


def test_a_pods_metric_policy_runs(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = _simulate("--profile", "spike-ci", "--policy", "hpa-pods-lag-ci", "--draws", "1",
                       "--out", out)
    assert result.exit_code == 0, result.output
    (run_dir,) = out.iterdir()
    doc = json.loads((run_dir / "benchmark.json").read_text())
    assert doc["inputs"]["policy"] == "hpa-pods-lag-ci"
    assert doc["metrics"]["lost_records"]["value"] == 0.0


def test_scale_full_picks_the_labs_profile_and_policy(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = _simulate("--profile", "spike", "--scale", "full", "--draws", "1", "--out", out)
    assert result.exit_code == 0, result.output
    (run_dir,) = out.iterdir()
    doc = json.loads((run_dir / "benchmark.json").read_text())
    assert doc["inputs"]["scale"] == "full" and doc["inputs"]["profile"] == "spike"
    assert doc["inputs"]["partitions"] == 24
    # the lab's 30k/s spike: a backlog of millions, far past anything a ci run holds
    assert doc["metrics"]["peak_lag_records"]["value"] > 1_000_000


def test_a_bad_scale_is_named(tmp_path: Path) -> None:
    result = _simulate("--profile", "spike", "--scale", "huge", "--out", tmp_path / "runs")
    assert result.exit_code == 2
    assert "error: --scale: got 'huge', expected one of ci, full; pick one of them" in \
        result.output
    assert not (tmp_path / "runs").exists()


def test_prediction_writes_the_preregistration_json(tmp_path: Path) -> None:
    target = tmp_path / "prediction.json"
    result = _simulate("--profile", "spike-ci", "--draws", "2", "--settle-timeout", "600",
                       "--out", tmp_path / "runs", "--prediction", target)
    assert result.exit_code == 0, result.output
    doc = json.loads(target.read_text())
    assert doc["kind"] == "lagscale twin prediction" and doc["commit"]["id"]
    assert doc["inputs"]["settings"]["settle_timeout_s"] == 600.0
    assert doc["twin"]["draws"] == 2 and doc["settled_draws"] == 2
    reaction = doc["figures"]["reaction_time_s"]
    assert reaction["draws"] == 2 and reaction["p5"] <= reaction["median"] <= reaction["p95"]
    assert doc["figures"]["backlog_at_switch_records"]["median"] is None   # no switch
    assert doc["figures"]["back_to_min_s"]["median"] > 0


def test_a_bad_settle_timeout_or_prediction_path_exits_2(tmp_path: Path) -> None:
    result = _simulate("--profile", "spike-ci", "--settle-timeout", "9000", "--out",
                       tmp_path / "runs", "--prediction", tmp_path / "absent" / "p.json")
    assert result.exit_code == 2
    assert "error: --settle-timeout: got 9000, expected seconds in [0, 7200]" in result.output
    assert "error: --prediction: " in result.output
    assert not (tmp_path / "runs").exists()


def test_machine_image_picks_that_images_calibration(tmp_path: Path) -> None:
    """--machine-image names the calibration the prediction is drawn with; an image the
    twin has no calibration of exits 2 naming the known ones, nothing written."""
    from pytest_lagscale.twin.params import machine_calibrations

    release, path = next(iter(machine_calibrations("spark").items()))
    out = tmp_path / "runs"
    result = _simulate("--profile", "spike-ci", "--draws", "1", "--machine-image", release,
                       "--out", out)
    assert result.exit_code == 0, result.output
    (run_dir,) = out.iterdir()
    doc = json.loads((run_dir / "benchmark.json").read_text())
    assert doc["experiment"]["twin"]["calibration"] == str(path)
    bad = _simulate("--profile", "spike-ci", "--machine-image", "5.0.0-nowhere", "--out",
                    tmp_path / "bad")
    assert bad.exit_code == 2
    assert f"error: --machine-image: got '5.0.0-nowhere', expected a machine image the twin " \
           f"has a calibration of: 6.18.44-fc-v595, {release}, or 'this'" in bad.output
    assert not (tmp_path / "bad").exists()


def test_machine_image_this_is_the_machine_simulate_runs_on(tmp_path: Path, monkeypatch) -> None:
    import platform

    from pytest_lagscale.twin.params import machine_calibrations

    release, path = next(iter(machine_calibrations("spark").items()))
    monkeypatch.setattr(platform, "release", lambda: release)
    result = _simulate("--profile", "spike-ci", "--draws", "1", "--machine-image", "this",
                       "--out", tmp_path / "runs")
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    twin = json.loads((run_dir / "benchmark.json").read_text())["experiment"]["twin"]
    assert twin["calibration"] == str(path)
    monkeypatch.setattr(platform, "release", lambda: "9.9.9-uncalibrated")
    bad = _simulate("--profile", "spike-ci", "--machine-image", "this", "--out", tmp_path / "b")
    assert bad.exit_code == 2
    assert "error: --machine-image: got 'this' (9.9.9-uncalibrated), expected" in bad.output
