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
