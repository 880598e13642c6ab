"""Concurrent batches shared by experiments: one batch per profile, identical runs once."""

from __future__ import annotations

import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.batch import ConcurrentBatches, members_of, plan_batch


def _exp9(profile: str, scale: str, folder: Path) -> dict[str, list[str]]:
    if profile not in ("spike", "bursty"):
        return {}
    return {"keda": ["--profile", profile, "--policy", "so", "--engine", "arrow"],
            "lag-per-slot": ["--profile", profile, "--policy", "lps", "--engine", "arrow"]}


def _exp10(profile: str, scale: str, folder: Path) -> dict[str, list[str]]:
    if profile != "spike":
        return {}
    return {"broker": ["--profile", profile, "--policy", "so", "--engine", "arrow"],
            "cloudwatch": ["--profile", profile, "--policy", "cw", "--engine", "spark-connect"]}


class Recorder:
    """A runner that records each batch and answers with one run directory per run."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, runs, *, bootstrap, out_dir, timeout_s):
        self.calls.append({"runs": dict(runs), "out_dir": out_dir, "timeout_s": timeout_s})
        return {name: SimpleNamespace(run_dir=out_dir / name) for name in runs}


def _batches(tmp_path: Path, remote_calls: list[int]) -> tuple[ConcurrentBatches, Recorder]:
    runner = Recorder()

    def remote() -> str:
        remote_calls.append(1)
        return "sc://127.0.0.1:15002"

    batches = ConcurrentBatches({"exp9": _exp9, "exp10": _exp10}, "127.0.0.1:9092",
                                ["--kafka-config", "a=b"], remote, runner=runner,
                                reader=lambda d: SimpleNamespace(run_dir=d))
    return batches, runner


def test_one_batch_per_profile_answers_every_experiment_and_shared_runs_run_once(
        tmp_path) -> None:
    remote_calls: list[int] = []
    batches, runner = _batches(tmp_path, remote_calls)
    exp9 = batches.runs("exp9", "spike", "ci", tmp_path)
    exp10 = batches.runs("exp10", "spike", "ci", tmp_path)
    assert len(runner.calls) == 1  # the second request is answered from the same batch
    runs = runner.calls[0]["runs"]
    assert sorted(runs) == ["exp10-cloudwatch", "exp9-keda", "exp9-lag-per-slot"]
    assert exp10["broker"] is exp9["keda"]  # one FinishedRun: both experiments' records in it
    assert runs["exp10-cloudwatch"][-4:] == ["--spark-remote", "sc://127.0.0.1:15002",
                                             "--kafka-config", "a=b"]
    assert "--spark-remote" not in runs["exp9-keda"] and remote_calls == [1]
    assert runner.calls[0]["out_dir"].name.endswith("-concurrent-spike")
    assert runner.calls[0]["timeout_s"] == 1200.0
    batches.runs("exp9", "bursty", "ci", tmp_path)
    assert len(runner.calls) == 2 and sorted(runner.calls[1]["runs"]) == [
        "exp9-keda", "exp9-lag-per-slot"]


def test_an_experiment_outside_the_batch_or_without_runs_on_the_profile_is_an_error(
        tmp_path) -> None:
    batches, runner = _batches(tmp_path, [])
    with pytest.raises(ConfigError, match=r"'exp11' defines no concurrent_members; taking "
                                          r"part: \['exp10', 'exp9'\]"):
        batches.runs("exp11", "spike", "ci", tmp_path)
    with pytest.raises(ConfigError, match=r"'exp10' has no run on profile 'bursty'"):
        batches.runs("exp10", "bursty", "ci", tmp_path)
    assert runner.calls == [] or sorted(runner.calls[0]["runs"]) == ["exp9-keda",
                                                                   "exp9-lag-per-slot"]


def test_members_come_from_modules_that_define_them_once_each() -> None:
    with_members = types.ModuleType("benchmarks.test_exp9_policies")
    with_members.concurrent_members = _exp9
    without = types.ModuleType("benchmarks.test_exp2_spike")
    assert members_of([with_members, without, with_members]) == {"exp9": _exp9}


def test_run_names_are_directory_names() -> None:
    runs, names = plan_batch({"exp9": {"a b/c": ["-x"]}})
    assert list(runs) == ["exp9-a-b-c"] and names[("exp9", "a b/c")] == "exp9-a-b-c"
