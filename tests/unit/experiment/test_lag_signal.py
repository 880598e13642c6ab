"""--lag-source: the option, the plan's refusal for offset-reading policies, the CloudWatch period
and window defaults, and the staleness summary of the controller's events."""

from __future__ import annotations

import argparse

import pytest

from pytest_lagscale.config.bundled import resolve_manifest
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.lag_signal import LagSourcePlan, plan_lag_source, signal_summary
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.options import LAG_SOURCE_KINDS, OPTIONS_BY_DEST, parse_cloudwatch_period
from pytest_lagscale.sources import LAG_SOURCES


def policy(name: str):
    return build_policy(load_policy_manifest(resolve_manifest(name, "--policy")))


def test_option_kinds_are_the_registry() -> None:
    assert LAG_SOURCE_KINDS == tuple(LAG_SOURCES)
    assert OPTIONS_BY_DEST["lag_source"].default == "broker"


@pytest.mark.parametrize("text", ["7", "90", "0", "x"])
def test_cloudwatch_period_refuses_what_cloudwatch_does(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="--cloudwatch-period"):
        parse_cloudwatch_period(text)


def test_settings_check_names_lag_source() -> None:
    with pytest.raises(ConfigError) as info:
        RunSettings(lag_source="kafka").check()
    assert info.value.problems == ["--lag-source: 'kafka' is not allowed; allowed: broker, prometheus, cloudwatch, "
                                   "confluent, share-group"]


def test_a_run_refuses_share_group_lag_for_its_consumer_group() -> None:
    with pytest.raises(ConfigError) as info:
        plan_lag_source(RunSettings(lag_source="share-group"), policy("lag-per-slot-ci"))
    assert info.value.problems[0].startswith("--lag-source: 'share-group' reads a share group's lag")


def test_offset_policies_refuse_a_total_lag_source() -> None:
    with pytest.raises(ConfigError) as info:
        plan_lag_source(RunSettings(lag_source="prometheus"), policy("scaledobject-ci"))
    message = info.value.problems[0]
    assert message.startswith("--lag-source: 'prometheus' is not allowed with the policy 'scaledobject-ci'")
    assert "allowed: broker" in message
    with pytest.raises(ConfigError):
        plan_lag_source(RunSettings(lag_source="cloudwatch"), policy("scaledobject-persistent-lag-ci"))


@pytest.mark.parametrize(("settings", "expected"), [
    pytest.param(RunSettings(lag_source="cloudwatch"), LagSourcePlan("cloudwatch", True, 60.0, 300.0),
                 id="msk-and-recipe-defaults"),
    pytest.param(RunSettings(lag_source="cloudwatch", cloudwatch_period_s=10, cloudwatch_window_s=60),
                 LagSourcePlan("cloudwatch", True, 10.0, 60.0), id="options"),
    pytest.param(RunSettings(lag_source="confluent"), LagSourcePlan("confluent", False, 60.0, 300.0),
                 id="confluent-needs-no-moto"),
])
def test_lag_per_slot_takes_any_source(settings: RunSettings, expected: LagSourcePlan) -> None:
    assert plan_lag_source(settings, policy("lag-per-slot-ci")) == expected


def test_signal_summary_per_source() -> None:
    records = [
        {"event": "lag_per_slot", "source": "controller", "signal": {"source": "cloudwatch", "staleness_s": 12.0}},
        {"event": "lag_per_slot", "source": "controller", "signal": {"source": "cloudwatch", "staleness_s": 18.0}},
        {"event": "decision", "source": "controller", "signal": {"source": "cloudwatch", "staleness_s": 18.0}},
        {"event": "keda_poll", "source": "controller",
         "signal": {"triggers": {"0": {"type": "prometheus", "staleness_s": 0.4}}}},
        {"event": "keda_poll", "source": "controller", "signal": {"source": "broker", "staleness_s": None}},
        {"event": "replica_ready", "source": "platform"},
    ]
    assert signal_summary(records) == {
        "broker": {"steps": 1, "decisions": 0, "staleness_s_median": None, "staleness_s_max": None,
                   "decision_staleness_s_median": None, "decision_staleness_s_max": None},
        "cloudwatch": {"steps": 2, "decisions": 1, "staleness_s_median": 15.0, "staleness_s_max": 18.0,
                       "decision_staleness_s_median": 18.0, "decision_staleness_s_max": 18.0},
        "prometheus": {"steps": 1, "decisions": 0, "staleness_s_median": 0.4, "staleness_s_max": 0.4,
                       "decision_staleness_s_median": None, "decision_staleness_s_max": None}}
