"""``lagscale run`` exits 1 for a run that is not a good one (did not settle, lag unread for more
than 10 % of it), printing each reason; a good run exits 0. The run itself is a stand-in here
(``_run_one``): what is under test is the exit status the CLI derives from the result."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.experiment import cli as run_cli


@pytest.mark.parametrize("problems,code", [([], 0), (["not settled: lag 0 at minReplicaCount not "
                                                      "reached within 300 s"], 1)],
                         ids=["good-run", "unsettled-run"])
def test_the_exit_status_says_whether_the_run_saw_a_good_world(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, problems: list[str], code: int) -> None:
    monkeypatch.chdir(tmp_path)

    def fake_run_one(plan, console):
        return SimpleNamespace(settings=plan.settings, problems=problems, metrics={},
                               document=lambda: {})

    monkeypatch.setattr(run_cli, "_run_one", fake_run_one)
    result = CliRunner().invoke(app, ["run", "--profile", "spike-ci"])
    assert result.exit_code == code, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: run spike-ci: {line}" for line in problems]
