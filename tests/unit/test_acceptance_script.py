"""scripts/acceptance refuses bad input with exit 2 before it installs, starts or writes
anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "acceptance"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=30)


def test_an_unknown_scale_is_refused_naming_the_allowed_ones(tmp_path: Path) -> None:
    done = _run("--scale", "huge", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "--scale: 'huge' is not a scale (allowed: ci, full)" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_non_empty_out_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("an earlier session")
    done = _run("--out", str(tmp_path))
    assert done.returncode == 2
    assert "exists and is not empty" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]


def test_an_unknown_argument_is_refused_with_the_usage() -> None:
    done = _run("--fast")
    assert done.returncode == 2
    assert "unknown argument '--fast'" in done.stderr
    assert "scripts/acceptance [--scale ci|full] [--out DIR]" in done.stderr
