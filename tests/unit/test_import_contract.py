"""The documented direction of dependencies holds (docs/architecture.md "Layout"): the
import-linter contracts in pyproject.toml, function-level imports included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_every_import_contract_is_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_inversion_breaks_the_layers_contract(tmp_path: Path) -> None:
    """The check can fail: config importing experiment (a layer above it) is reported."""
    for name in ("pytest_lagscale", "spark_consumer"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    read = tmp_path / "pytest_lagscale" / "config" / "_read.py"
    read.write_text(read.read_text() + "\n\ndef _inverted():\n"
                    "    from ..experiment import settings  # noqa: F401\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pytest_lagscale.config._read -> pytest_lagscale.experiment.settings" in result.stdout
