"""Several ``lagscale run`` processes at once (``experiment/concurrent.py``): real processes, their
exit codes and logs reported per run, and a run past the timeout stopped with its group."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError, LagscaleError
from pytest_lagscale.experiment.concurrent import run_argv, run_concurrently
from pytest_lagscale.process import group_members

pytestmark = pytest.mark.integration


def test_the_runner_sets_the_broker_and_output_itself(tmp_path: Path) -> None:
    argv = run_argv(["--profile", "spike-ci"], "127.0.0.1:9092", tmp_path / "a")
    assert argv[1:4] == ["-m", "pytest_lagscale.cli", "run"]
    assert argv[-6:] == ["--kafka", "external", "--kafka-bootstrap", "127.0.0.1:9092", "--out",
                         str(tmp_path / "a")]
    with pytest.raises(ConfigError, match=r"run options: --kafka-bootstrap, --out are set by the "
                                          r"concurrent runner"):
        run_argv(["--out", "x", "--kafka-bootstrap=h:1"], "127.0.0.1:9092", tmp_path)


@pytest.mark.parametrize("runs, timeout_s, message", [
    pytest.param({}, 10.0, "runs: got none", id="no-runs"),
    pytest.param({"a/b": []}, 10.0, "runs: names ['a/b'] are not directory names", id="name"),
    pytest.param({"a": []}, 0.0, "timeout_s: got 0.0, expected > 0 seconds", id="timeout"),
])
def test_bad_arguments_start_nothing(tmp_path: Path, runs, timeout_s, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run_concurrently(runs, bootstrap="127.0.0.1:9092", out_dir=tmp_path, timeout_s=timeout_s)
    assert not any(tmp_path.iterdir())


def test_each_failed_run_is_named_with_its_exit_code_and_log(tmp_path: Path) -> None:
    runs = {"bad-profile": ["--profile", "no-such-profile"],
            "bad-threshold": ["--profile", "spike-ci", "--lag-threshold", "-5"]}
    with pytest.raises(LagscaleError) as info:
        run_concurrently(runs, bootstrap="127.0.0.1:9092", out_dir=tmp_path, timeout_s=120)
    message = str(info.value)
    assert message.startswith("2 of 2 concurrent run(s) failed:")
    assert "bad-profile: lagscale run exited with code 2 without a run directory" in message
    assert "bad-threshold: lagscale run exited with code 2 without a run directory" in message
    assert "error: '--profile': got 'no-such-profile'" in message
    assert "Invalid value for '--lag-threshold'" in message
    assert (tmp_path / "bad-profile.log").is_file()


def test_a_run_past_the_timeout_is_stopped_with_its_group(tmp_path: Path) -> None:
    # nothing listens on port 1: the run waits for its broker until the timeout stops it
    runs = {"waits": ["--profile", "spike-ci", "--engine", "arrow"]}
    with pytest.raises(LagscaleError, match=r"waits: still running after 5 s, stopped"):
        run_concurrently(runs, bootstrap="127.0.0.1:1", out_dir=tmp_path, timeout_s=5)
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    mine = [p for p in pids if _cmdline(p).endswith(f"--out {tmp_path / 'waits'}")]
    assert mine == [] and all(group_members(p) == [] for p in mine)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""
