"""``lagscale run --platform kubernetes`` refuses what it cannot run: exit 2, nothing started."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pytest_lagscale.cli import app


def _run(tmp_path: Path, *args: str, **env: str):
    return CliRunner().invoke(app, ["run", "--platform", "kubernetes", "--scale", "ci",
                                    "--profile", "spike-ci", "--out", str(tmp_path / "runs"),
                                    *args], env=env)


def test_without_the_built_control_plane_it_names_the_bootstrap_command(tmp_path: Path) -> None:
    result = _run(tmp_path, LAGSCALE_CACHE_DIR=str(tmp_path / "empty-cache"))
    assert result.exit_code == 2, result.output
    assert "--platform kubernetes: control-plane binaries not built" in result.output
    assert "scripts/bootstrap --with-kube" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_policy_that_is_not_a_scaled_object_is_refused(tmp_path: Path) -> None:
    result = _run(tmp_path, "--policy", "hpa-cpu-ci")
    assert result.exit_code == 2, result.output
    assert "only KEDA ScaledObjects run on the local control plane" in result.output
    assert not (tmp_path / "runs").exists()
