"""The per-replica PNG (experiment 4's per-pod picture), drawn from synthetic tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pytest_lagscale.report.replicas_png import write_replicas_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def matplotlib_imported() -> None:
    """Import matplotlib once (~0.8 s, a per-process cost) outside the timed test call."""
    pytest.importorskip("matplotlib", reason="matplotlib missing: pip install "
                                             "'pytest-lagscale[plot]'")
    import matplotlib.figure  # noqa: F401


def _owners() -> pd.DataFrame:
    rows = [(1.0, "r1", "assigned", 2, (0, 1)), (8.0, "r1", "revoked", 1, (0,)),
            (8.5, "r2", "assigned", 1, (1,)), (20.0, "r3", "assigned", 0, ()),
            (60.0, "r1", "left", 0, ())]
    return pd.DataFrame(rows, columns=["t_s", "replica_id", "event", "partitions", "assignment"])


def _rates() -> pd.DataFrame:
    index = pd.Index([float(t) for t in range(60)], name="t_s")
    return pd.DataFrame({"r1": [400.0] * 60, "r2": [0.0] * 9 + [400.0] * 51}, index=index)


@pytest.mark.parametrize(("replicas", "surplus", "spike"), [
    pytest.param(("r1", "r2", "r3"), ("r3",), (5.0, 50.0), id="surplus-idle-replica"),
    pytest.param(("r1", "r2"), (), None, id="no-surplus-no-spike"),
    pytest.param(tuple(f"r{i}" for i in range(1, 49)), tuple(f"r{i}" for i in range(25, 49)),
                 None, id="full-scale-48-replicas"),
])
def test_write_replicas_png(tmp_path: Path, matplotlib_imported: None, replicas: tuple,
                            surplus: tuple, spike: tuple[float, float] | None) -> None:
    path = write_replicas_png(_owners(), _rates(), tmp_path / "run" / "replicas.png",
                              replicas=replicas, surplus=surplus, partitions=2, spike=spike)
    data = path.read_bytes()
    assert path == tmp_path / "run" / "replicas.png"
    assert data[:8] == PNG_MAGIC and len(data) > 10_000


def test_empty_tables_still_draw(tmp_path: Path, matplotlib_imported: None) -> None:
    owners = _owners().iloc[0:0]
    rates = pd.DataFrame(index=pd.Index([], name="t_s", dtype="float64"))
    path = write_replicas_png(owners, rates, tmp_path / "replicas.png", replicas=())
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_module_import_does_not_load_matplotlib() -> None:
    code = ("import sys, pytest_lagscale.report.replicas_png, pytest_lagscale.analyze.replicas; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
