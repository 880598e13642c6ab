"""``lagscale tune``'s space: the ``--space`` syntax, the grid, and a point applied to the
manifest and checked by the project's own parser."""

from __future__ import annotations

import copy

import pytest

from pytest_lagscale.config._read import load_yaml
from pytest_lagscale.config.bundled import resolve_manifest
from pytest_lagscale.config.policy import parse_policy_manifest
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.tune.space import (Axis, apply_point, grid, linear_values, log_values,
                                         parse_axis, parse_space, point_problems)

SOURCE = str(resolve_manifest("scaledobject-ci", "--policy"))


@pytest.fixture()
def doc():
    """The bundled scaledobject-ci manifest as loaded."""
    return load_yaml(SOURCE)


def test_lag_threshold_ranges_are_log_spaced_with_two_figures() -> None:
    assert log_values(100, 100000, 5) == (100, 560, 3200, 18000, 100000)
    assert log_values(50, 5000, 3) == (50, 500, 5000)
    assert log_values(7, 7, 4) == (7,)


def test_other_ranges_are_linear_whole_numbers_without_repeats() -> None:
    assert linear_values(0, 600, 5) == (0, 150, 300, 450, 600)
    assert linear_values(1, 3, 5) == (1, 2, 3)
    assert linear_values(4, 9, 1) == (4,)


@pytest.mark.parametrize(("item", "key", "values"), [
    pytest.param("lagThreshold=100..100000", "lagThreshold", (100, 560, 3200, 18000, 100000),
                 id="log-range-default-steps"),
    pytest.param("scaleDown.stabilizationWindowSeconds=0..600:3",
                 "scaleDown.stabilizationWindowSeconds", (0, 300, 600), id="range-with-steps"),
    pytest.param("maxReplicaCount=8|4|6|4", "maxReplicaCount", (4, 6, 8), id="list-sorted-once"),
    pytest.param("pollingInterval=5", "pollingInterval", (5,), id="one-value"),
    pytest.param("spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.policies[0].value"
                 "=2|4", "scaleUp.policies[0].value", (2, 4), id="full-path-prefixes-dropped"),
])
def test_axis_forms(item: str, key: str, values: tuple[int, ...]) -> None:
    axis, problems = parse_axis(item)
    assert problems == []
    assert axis == Axis(key, values, item)


@pytest.mark.parametrize(("item", "problem"), [
    pytest.param("lagThresold=1..2",
                 "--space: got key 'lagThresold' in 'lagThresold=1..2', expected one of "
                 "lagThreshold, pollingInterval, cooldownPeriod, minReplicaCount, "
                 "maxReplicaCount, scaleUp.stabilizationWindowSeconds, "
                 "scaleDown.stabilizationWindowSeconds or scaleUp|scaleDown.policies[I]."
                 "value|periodSeconds; use 'lagThreshold'", id="unknown-key-nearest"),
    pytest.param("maxReplicaCount=3..1",
                 "--space: got '3..1' for 'maxReplicaCount' in 'maxReplicaCount=3..1', expected "
                 "KEY=LO..HI, KEY=LO..HI:N, KEY=A|B|C or KEY=V with whole numbers; put the "
                 "lower bound first ('1..3')", id="reversed-range"),
    pytest.param("cooldownPeriod=0..60:0",
                 "--space: got '0..60:0' for 'cooldownPeriod' in 'cooldownPeriod=0..60:0', "
                 "expected KEY=LO..HI, KEY=LO..HI:N, KEY=A|B|C or KEY=V with whole numbers; "
                 "give N in [1, 50] after ':'", id="zero-steps"),
    pytest.param("lagThreshold=1.5|2",
                 "--space: got '1.5|2' for 'lagThreshold' in 'lagThreshold=1.5|2', expected "
                 "KEY=LO..HI, KEY=LO..HI:N, KEY=A|B|C or KEY=V with whole numbers; write whole "
                 "numbers, e.g. '100|500|5000'", id="not-whole"),
    pytest.param("lagThreshold=0..100",
                 "--space: got '0..100' for 'lagThreshold' in 'lagThreshold=0..100', expected "
                 "KEY=LO..HI, KEY=LO..HI:N, KEY=A|B|C or KEY=V with whole numbers; start a "
                 "log-spaced range at 1 or more", id="log-from-zero"),
    pytest.param("pollingInterval", "--space: got 'pollingInterval', expected KEY=LO..HI, "
                 "KEY=LO..HI:N, KEY=A|B|C or KEY=V with whole numbers; write e.g. "
                 "'lagThreshold=100..100000'", id="no-equals"),
])
def test_bad_axis_names_the_item_the_value_and_what_is_allowed(item: str, problem: str) -> None:
    assert parse_axis(item) == (None, [problem])


def test_space_checks_each_axis_end_with_the_manifest_parser_all_at_once(doc) -> None:
    with pytest.raises(ConfigError) as info:
        parse_space(["pollingInterval=0..5,lagThreshold=100..1000",
                     "scaleUp.policies[2].value=1|2", "lagThreshold=5"], doc, SOURCE)
    assert info.value.problems == [
        "--space: got 'lagThreshold' twice, expected each key once; merge the values into one "
        "item",
        f"--space: 'pollingInterval=0..5': 'spec.pollingInterval': got 0, expected an integer "
        f">= 1 (seconds) in {SOURCE}; raise it to at least 1",
        "--space: 'scaleUp.policies[2].value=1|2': 'scaleUp.policies[2].value': the manifest's "
        "scaleUp has 2 policies, expected an index in [0, 1]; use an existing policy's index",
    ]


def test_space_needs_at_least_one_key(doc) -> None:
    with pytest.raises(ConfigError) as info:
        parse_space([], doc, SOURCE)
    assert info.value.problems == ["--space: got [], expected at least one KEY=... item; give "
                                   "e.g. --space lagThreshold=100..100000"]


def test_grid_is_every_combination_last_axis_fastest() -> None:
    axes = (Axis("lagThreshold", (100, 1000), ""), Axis("pollingInterval", (1, 2, 3), ""))
    points = grid(axes)
    assert len(points) == 6
    assert points[:3] == [{"lagThreshold": 100, "pollingInterval": p} for p in (1, 2, 3)]
    assert points[-1] == {"lagThreshold": 1000, "pollingInterval": 3}


def test_a_point_changes_only_its_fields_and_parses_to_them(doc) -> None:
    before = copy.deepcopy(doc)
    point = {"lagThreshold": 2000, "maxReplicaCount": 6,
             "scaleDown.stabilizationWindowSeconds": 120, "scaleUp.policies[1].periodSeconds": 9}
    out = apply_point(doc, point)
    assert doc == before  # the input is not modified
    assert out["spec"]["triggers"][0]["metadata"]["lagThreshold"] == "2000"
    config = parse_policy_manifest(out, source=SOURCE)
    assert config.triggers[0].settings.lag_threshold == 2000
    assert config.max_replica_count == 6
    assert config.behavior.scale_down.stabilization_window_s == 120
    assert config.behavior.scale_up.policies[1].period_s == 9
    out["spec"]["triggers"][0]["metadata"]["lagThreshold"] = "500"
    out["spec"]["maxReplicaCount"] = 8
    behavior = out["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    behavior["scaleDown"]["stabilizationWindowSeconds"] = 30
    behavior["scaleUp"]["policies"][1]["periodSeconds"] = 5
    assert out == before  # nothing else changed


def test_behavior_is_created_and_default_policies_written_out_when_absent(doc) -> None:
    del doc["spec"]["advanced"]
    out = apply_point(doc, {"scaleUp.policies[0].value": 2,
                            "scaleDown.stabilizationWindowSeconds": 60})
    behavior = out["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior == {"scaleUp": {"policies": [
        {"type": "Pods", "value": 2, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60}}
    config = parse_policy_manifest(out, source=SOURCE)
    assert config.behavior.scale_up.policies[0].value == 2
    assert config.behavior.scale_down.stabilization_window_s == 60


def test_an_invalid_combination_gets_the_parsers_lines(doc) -> None:
    assert point_problems(doc, {"minReplicaCount": 9, "maxReplicaCount": 8}, SOURCE) == [
        f"'spec.minReplicaCount': got 9, expected <= spec.maxReplicaCount (8) in {SOURCE}; "
        "lower minReplicaCount or raise maxReplicaCount"]
    assert point_problems(doc, {"minReplicaCount": 2, "maxReplicaCount": 8}, SOURCE) == []


def test_lag_threshold_needs_a_kafka_trigger(doc) -> None:
    doc["spec"]["triggers"] = [{"type": "cpu", "metricType": "Utilization",
                                "metadata": {"value": "50"}}]
    assert point_problems(doc, {"lagThreshold": 100}, SOURCE) == [
        "'lagThreshold': the manifest has no kafka trigger, expected spec.triggers with type "
        "kafka (or type external with a lagThreshold); drop lagThreshold from --space"]


def test_lag_threshold_sets_the_persistent_lag_scalers_too() -> None:
    source = str(resolve_manifest("scaledobject-persistent-lag-ci", "--policy"))
    out = apply_point(load_yaml(source), {"lagThreshold": 890})
    assert out["spec"]["triggers"][0]["metadata"]["lagThreshold"] == "890"
    assert point_problems(load_yaml(source), {"lagThreshold": 890}, source) == []
