"""Loading and validating the lag-per-slot halving policy's manifest (kind LagPerSlotPolicy):
the committed files, the defaults, and every problem with its whole message."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_lagscale.config.lag_per_slot import LagPerSlotConfig, load_lag_per_slot, parse_lag_per_slot
from pytest_lagscale.contract.errors import ConfigError

from ._helpers import DELETE, K8S, committed, edited

CI = committed("lag-per-slot-ci.yaml")


def _problems(doc: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_lag_per_slot(doc, source="lps.yaml")
    return info.value.problems


@pytest.mark.parametrize(("name", "values"), [
    pytest.param("lag-per-slot.yaml", (2, 64, 50_000, 10_000, 300, 15), id="full-is-the-recipe"),
    pytest.param("lag-per-slot-ci.yaml", (2, 8, 3_333, 667, 30, 2), id="ci"),
])
def test_committed_manifests(name: str, values: tuple) -> None:
    config = load_lag_per_slot(K8S / name)
    assert (config.name, config.source) == ("lagscale-consumer-lag-per-slot", str(K8S / name))
    assert (config.min_parallelism, config.max_parallelism, config.lag_per_slot_records,
            config.scale_down_lag_records, config.cooldown_s, config.polling_interval_s) == values


def test_the_full_manifest_is_the_dataclass_defaults_the_recipes_constants() -> None:
    full = load_lag_per_slot(K8S / "lag-per-slot.yaml")
    default = LagPerSlotConfig(full.source, full.meta)
    assert replace(full, polling_interval_s=30) == default
    assert (default.min_parallelism, default.max_parallelism, default.lag_per_slot_records,
            default.scale_down_lag_records, default.cooldown_s) == (2, 64, 50_000, 10_000, 300)


def test_polling_interval_defaults_to_kedas_30_s() -> None:
    config = parse_lag_per_slot(edited(CI, (("spec", "pollingInterval"), DELETE)))
    assert config.polling_interval_s == 30


def _range(key: str, value: object, allowed: str, fix: str) -> str:
    return f"'spec.{key}': got {value!r}, expected {allowed} in lps.yaml; {fix}"


BAD = [
    # out of range
    pytest.param((("minParallelism", 0),), [_range("minParallelism", 0, "an integer >= 1 (replicas)",
                                                   "raise it to at least 1")], id="min-parallelism-0"),
    pytest.param((("maxParallelism", 0),), [
        _range("maxParallelism", 0, "an integer >= 1 (replicas)", "raise it to at least 1")], id="max-parallelism-0"),
    pytest.param((("lagPerSlot", 0),), [_range("lagPerSlot", 0, "an integer >= 1 (records)",
                                               "raise it to at least 1")], id="lag-per-slot-0"),
    pytest.param((("scaleDownLag", 0),), [_range("scaleDownLag", 0, "an integer >= 1 (records)",
                                                 "raise it to at least 1")], id="scale-down-lag-0"),
    pytest.param((("cooldownSeconds", -1),), [_range("cooldownSeconds", -1, "an integer >= 0 (seconds)",
                                                     "raise it to at least 0")], id="cooldown-negative"),
    pytest.param((("pollingInterval", 0),), [_range("pollingInterval", 0, "an integer >= 1 (seconds)",
                                                    "raise it to at least 1")], id="polling-interval-0"),
    # across fields
    pytest.param((("minParallelism", 10),), [_range("minParallelism", 10, "<= spec.maxParallelism (8) "
                                                    "(replicas)", "lower minParallelism or raise maxParallelism")],
                 id="min-above-max"),
    pytest.param((("scaleDownLag", 3_334),), [_range(
        "scaleDownLag", 3334, "<= spec.lagPerSlot (3333) (records)",
        "lower scaleDownLag or raise lagPerSlot (lag between the two holds)")], id="scale-down-lag-above-lag-per-slot"),
    # missing: the fix names the recipe's value
    pytest.param((("minParallelism", DELETE),), [_range(
        "minParallelism", "MISSING", "an integer >= 1 (replicas)",
        "add 'spec.minParallelism', e.g. 2 (the recipe's MIN_PARALLELISM)")], id="min-parallelism-missing"),
    pytest.param((("maxParallelism", DELETE),), [_range(
        "maxParallelism", "MISSING", "an integer >= 1 (replicas)",
        "add 'spec.maxParallelism', e.g. 64 (the recipe's MAX_PARALLELISM)")], id="max-parallelism-missing"),
    pytest.param((("lagPerSlot", DELETE),), [_range(
        "lagPerSlot", "MISSING", "an integer >= 1 (records)",
        "add 'spec.lagPerSlot', e.g. 50000 (the recipe's LAG_PER_SLOT)")], id="lag-per-slot-missing"),
    pytest.param((("scaleDownLag", DELETE),), [_range(
        "scaleDownLag", "MISSING", "an integer >= 1 (records)",
        "add 'spec.scaleDownLag', e.g. 10000 (the recipe's SCALE_DOWN_LAG)")], id="scale-down-lag-missing"),
    pytest.param((("cooldownSeconds", DELETE),), [_range(
        "cooldownSeconds", "MISSING", "an integer >= 0 (seconds)",
        "add 'spec.cooldownSeconds', e.g. 300 (the recipe's COOLDOWN)")], id="cooldown-missing"),
    # wrong type
    pytest.param((("lagPerSlot", "3333"),), [_range("lagPerSlot", "3333", "an integer >= 1 (records)",
                                                    "write a whole number without quotes, e.g. 1")],
                 id="lag-per-slot-quoted"),
    pytest.param((("maxParallelism", 8.5),), [_range("maxParallelism", 8.5, "an integer >= 1 (replicas)",
                                                     "write a whole number without quotes, e.g. 1")],
                 id="max-parallelism-float"),
    pytest.param((("cooldownSeconds", True),), [_range("cooldownSeconds", True, "an integer >= 0 (seconds)",
                                                       "write a whole number without quotes, e.g. 0")],
                 id="cooldown-bool"),
    pytest.param((("pollingInterval", "2s"),), [_range("pollingInterval", "2s", "an integer >= 1 (seconds)",
                                                       "write a whole number without quotes, e.g. 1")],
                 id="polling-interval-with-unit"),
    # unknown key
    pytest.param((("cooldown", 30),), ["'spec.cooldown': got 30, expected a known key of 'spec' in lps.yaml; "
                                       "rename it to 'spec.cooldownSeconds'"], id="unknown-key-suggests"),
]


@pytest.mark.parametrize(("edits", "problems"), BAD)
def test_bad_manifest(edits: tuple, problems: list[str]) -> None:
    doc = edited(CI, *((("spec", key), value) for key, value in edits))
    assert _problems(doc) == [line.replace("'MISSING'", "no value") for line in problems]


def test_all_problems_reported_at_once_in_document_order() -> None:
    doc = edited(CI, (("apiVersion",), "keda.sh/v1alpha1"), (("spec", "lagPerSlot"), DELETE),
                 (("spec", "minParallelism"), 9), (("spec", "cooldownSeconds"), "30"),
                 (("spec", "scaleDownLag"), -5))
    assert _problems(doc) == [
        "'apiVersion': got 'keda.sh/v1alpha1', expected 'lagscale.dev/v1alpha1' in lps.yaml; "
        "set apiVersion: lagscale.dev/v1alpha1",
        "'spec.lagPerSlot': got no value, expected an integer >= 1 (records) in lps.yaml; "
        "add 'spec.lagPerSlot', e.g. 50000 (the recipe's LAG_PER_SLOT)",
        "'spec.scaleDownLag': got -5, expected an integer >= 1 (records) in lps.yaml; raise it to at least 1",
        "'spec.cooldownSeconds': got '30', expected an integer >= 0 (seconds) in lps.yaml; "
        "write a whole number without quotes, e.g. 0",
        "'spec.minParallelism': got 9, expected <= spec.maxParallelism (8) (replicas) in lps.yaml; "
        "lower minParallelism or raise maxParallelism"]


@pytest.mark.parametrize(("doc", "problems"), [
    pytest.param(edited(CI, (("spec",), DELETE)), [
        "'spec': got no value, expected the LagPerSlotPolicy spec (a mapping) in lps.yaml; add a spec section"],
        id="no-spec"),
    pytest.param(edited(CI, (("spec",), [1, 2])), [
        "'spec': got [1, 2], expected a mapping in lps.yaml; write 'spec' as a YAML mapping of key: value"],
        id="spec-not-a-mapping"),
])
def test_envelope_problems(doc: dict, problems: list[str]) -> None:
    assert _problems(doc) == problems
