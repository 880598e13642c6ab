"""Experiment 10's ScaledObjects: scaledobject[-ci].yaml with the kafka trigger replaced by a
prometheus or aws-cloudwatch trigger, everything else identical, threshold = lagThreshold."""

from __future__ import annotations

import pytest
import yaml

from pytest_lagscale.config.bundled import manifest_path
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.experiment.lag_signal import LagSourcePlan, plan_lag_source
from pytest_lagscale.experiment.settings import RunSettings

CASES = [pytest.param(name, base, id=name) for name, base in (
    ("scaledobject-prometheus-ci", "scaledobject-ci"), ("scaledobject-cloudwatch-ci", "scaledobject-ci"),
    ("scaledobject-prometheus", "scaledobject"), ("scaledobject-cloudwatch", "scaledobject"))]


def doc(name: str) -> dict:
    return yaml.safe_load(manifest_path(name).read_text())


@pytest.mark.parametrize(("name", "base"), CASES)
def test_identical_to_the_yardstick_but_the_trigger(name: str, base: str) -> None:
    mine, yardstick = doc(name), doc(base)
    (trigger,), (kafka,) = mine["spec"].pop("triggers"), yardstick["spec"].pop("triggers")
    assert mine == yardstick
    threshold = trigger["metadata"].get("threshold") or trigger["metadata"]["targetMetricValue"]
    activation = (trigger["metadata"].get("activationThreshold")
                  or trigger["metadata"]["activationTargetMetricValue"])
    assert (threshold, activation) == (kafka["metadata"]["lagThreshold"], kafka["metadata"]["activationLagThreshold"])
    policy = build_policy(load_policy_manifest(manifest_path(name)))
    assert [t.type_name for t in policy.value_triggers] == [trigger["type"]]
    assert policy.needs_lag is False


@pytest.mark.parametrize(("name", "period_s", "window_s"), [
    pytest.param("scaledobject-cloudwatch-ci", 10.0, 60.0, id="ci-10s-60s"),
    pytest.param("scaledobject-cloudwatch", 60.0, 300.0, id="full-msk-60s-recipe-300s"),
])
def test_cloudwatch_period_and_window_start_the_stand_in(name: str, period_s: float, window_s: float) -> None:
    policy = build_policy(load_policy_manifest(manifest_path(name)))
    assert plan_lag_source(RunSettings(), policy) == LagSourcePlan("broker", True, period_s, window_s)
