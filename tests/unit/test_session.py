"""The session's run cache key: a lagThreshold override equal to the policy's is no override."""

from __future__ import annotations

from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.session import LagscaleSession, _settings_key


def test_the_policy_own_lag_threshold_gives_the_same_key_as_no_override() -> None:
    # scaledobject-ci.yaml (the ci default) says lagThreshold "500".
    assert _settings_key(RunSettings(lag_threshold=500)) == _settings_key(RunSettings())


def test_another_lag_threshold_gives_another_key() -> None:
    assert _settings_key(RunSettings(lag_threshold=5000)) != _settings_key(RunSettings())
    assert (_settings_key(RunSettings(lag_threshold=500, policy="scaledobject-ci"))
            == _settings_key(RunSettings(policy="scaledobject-ci")))


def test_a_sweep_value_equal_to_the_policy_reuses_the_cached_run() -> None:
    session, calls = LagscaleSession(None), []
    first = session.run(RunSettings(), "exp2", lambda: calls.append(1) or "spike run")
    again = session.run(RunSettings(lag_threshold=500), "exp8[lt500]",
                        lambda: calls.append(1) or "another run")
    assert (first, again, len(calls)) == ("spike run", "spike run", 1)


def test_a_finished_run_is_announced_once_with_its_counts_and_a_cached_one_is_not() -> None:
    from types import SimpleNamespace

    lines: list[str] = []
    session = LagscaleSession(None, announce=lines.append)
    result = SimpleNamespace(metrics={"produced_records": 98412.0, "lost_records": 0.0,
                                      "duplicated_records": None}, run_dir="runs/x")
    session.run(RunSettings(), "exp2", lambda: result)
    session.run(RunSettings(), "exp6", lambda: result)
    assert len(lines) == 1
    assert lines[0].startswith("lagscale: run 1 spike-ci done in 0 s: produced 98,412, lost 0, "
                               "duplicated not measured; run dir runs/x")


def test_a_failed_run_is_announced_with_its_error() -> None:
    import pytest

    lines: list[str] = []
    session = LagscaleSession(None, announce=lines.append)

    def boom() -> None:
        raise RuntimeError("broker died")

    with pytest.raises(RuntimeError):
        session.run(RunSettings(), "exp2", boom)
    assert lines == ["lagscale: run 1 spike-ci failed after 0 s: RuntimeError: broker died"]
