"""README.md holds exactly two set-up commands (the main job, the tests), and `.ci/run` runs the
README's test command, nothing else."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bash_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_the_readme_has_two_commands_the_main_job_and_the_tests() -> None:
    blocks = _bash_blocks()
    assert len(blocks) == 2, blocks
    assert blocks[0].startswith("scripts/bootstrap && .venv/bin/lagscale run")
    assert blocks[1].startswith("scripts/bootstrap && .venv/bin/python -X faulthandler -m pytest")
    assert "--lagscale-baseline benchmarks/baselines" in blocks[1]


def test_the_test_command_runs_the_gate_tier_with_faulthandler_on() -> None:
    sessions = _bash_blocks()[1].split(" && ")[1:]
    assert len(sessions) == 2, sessions
    assert all(s.startswith(".venv/bin/python -X faulthandler -m pytest") for s in sessions)
    assert sessions[0].endswith("-n 2 tests")
    assert " -m gate " in sessions[1] and sessions[1].endswith(" benchmarks")


def test_ci_runs_the_readme_test_command() -> None:
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.startswith("#")
             and not line.startswith(("set ", "cd "))]
    assert lines == [_bash_blocks()[1]]
