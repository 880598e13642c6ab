"""The policy manifest loader: kind dispatch, the lagThreshold override and the policy builder."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_lagscale.config.hpa import CpuHpaConfig
from pytest_lagscale.config.lag_per_slot import LagPerSlotConfig
from pytest_lagscale.config.policy import load_policy_manifest, parse_policy_manifest, with_lag_threshold
from pytest_lagscale.config.scaledobject import ScaledObjectConfig
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.control.policy.build import build_policy

from ._helpers import DELETE, K8S, committed, edited

KINDS = "one of {'ScaledObject', 'HorizontalPodAutoscaler', 'LagPerSlotPolicy'}"
KIND_FIX = ("use a KEDA ScaledObject, an autoscaling/v2 HorizontalPodAutoscaler or a lagscale.dev/v1alpha1 "
            "LagPerSlotPolicy")


@pytest.mark.parametrize(("name", "config_type", "policy_name"), [
    pytest.param("scaledobject-ci.yaml", ScaledObjectConfig, "keda-hpa", id="scaledobject"),
    pytest.param("hpa-cpu-ci.yaml", CpuHpaConfig, "hpa", id="cpu-hpa"),
    pytest.param("lag-per-slot-ci.yaml", LagPerSlotConfig, "lag-per-slot", id="lag-per-slot"),
])
def test_load_dispatches_on_kind_and_builds(name: str, config_type: type, policy_name: str) -> None:
    config = load_policy_manifest(K8S / name)
    assert type(config) is config_type and config.source == str(K8S / name)
    policy = build_policy(config, created_at_s=5.0)
    assert (policy.name, policy.max_replicas) == (policy_name, 8)


@pytest.mark.parametrize(("doc", "problem"), [
    pytest.param(edited(committed("scaledobject-ci.yaml"), (("kind",), "Deployment")),
                 f"'kind': got 'Deployment', expected {KINDS} in p.yaml; {KIND_FIX}", id="unknown-kind"),
    pytest.param({"apiVersion": "v1"}, f"'kind': got no value, expected {KINDS} in p.yaml; {KIND_FIX}",
                 id="missing-kind"),
    pytest.param(["ScaledObject"], f"'kind': got no value, expected {KINDS} in p.yaml; {KIND_FIX}",
                 id="not-a-mapping"),
    pytest.param(edited(committed("scaledobject-ci.yaml"), (("kind",), ["ScaledObject"])),
                 f"'kind': got ['ScaledObject'], expected {KINDS} in p.yaml; {KIND_FIX}", id="unhashable-kind"),
])
def test_unknown_kind_names_kind_value_and_allowed(doc: object, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_policy_manifest(doc, source="p.yaml")
    assert info.value.problems == [problem]


def test_kind_dispatch_reports_the_kinds_own_problems() -> None:
    doc = edited(committed("hpa-cpu-ci.yaml"), (("spec", "maxReplicas"), 0))
    with pytest.raises(ConfigError) as info:
        parse_policy_manifest(doc, source="hpa.yaml")
    assert [line.split(":")[0] for line in info.value.problems] == ["'spec.maxReplicas'"]


def test_with_lag_threshold_sets_every_kafka_trigger() -> None:
    config = with_lag_threshold(load_policy_manifest(K8S / "scaledobject-ci.yaml"), 2500)
    trigger = config.triggers[0]
    assert (trigger.kafka.lag_threshold, trigger.metadata["lagThreshold"]) == (2500, "2500")
    assert build_policy(config).lag_threshold_records == 2500


@pytest.mark.parametrize("doc", [
    pytest.param(committed("hpa-cpu-ci.yaml"), id="cpu-hpa"),
    pytest.param(edited(committed("scaledobject-ci.yaml"),
                        (("spec", "triggers"), [{"type": "cpu", "metricType": "Utilization",
                                                 "metadata": {"value": "70"}}]),
                        (("spec", "fallback"), DELETE)), id="cpu-only-scaledobject"),
])
def test_with_lag_threshold_needs_a_lag_trigger(doc: dict) -> None:
    config = parse_policy_manifest(doc, source="p.yaml")
    with pytest.raises(ConfigError) as info:
        with_lag_threshold(config, 10)
    assert info.value.problems == [("--lag-threshold: p.yaml has no kafka trigger to override; drop "
                                    "--lag-threshold or add a kafka trigger")]


def test_with_lag_threshold_on_lag_per_slot_points_at_lag_per_slot() -> None:
    with pytest.raises(ConfigError) as info:
        with_lag_threshold(parse_policy_manifest(committed("lag-per-slot-ci.yaml"), source="l.yaml"), 10)
    assert info.value.problems == [("--lag-threshold: l.yaml has no kafka trigger to override; drop "
                                    "--lag-threshold or set spec.lagPerSlot in the manifest")]


def test_build_policy_refuses_a_non_policy() -> None:
    with pytest.raises(ConfigError) as info:
        build_policy(object())  # type: ignore[arg-type]
    assert info.value.problems == [
        ("'kind': got 'object', expected one of {'ScaledObject', 'HorizontalPodAutoscaler', 'LagPerSlotPolicy'} "
         "in build_policy(); load the manifest with load_policy_manifest")]


def test_config_does_not_import_control() -> None:
    """Dependencies point one way: control imports config, never the reverse (not even when a
    manifest is loaded and its lagThreshold overridden)."""
    code = ("import sys, importlib, pkgutil, pytest_lagscale.config as c\n"
            "for m in pkgutil.walk_packages(c.__path__, 'pytest_lagscale.config.'):\n"
            "    importlib.import_module(m.name)\n"
            "from pytest_lagscale.config.bundled import resolve_manifest\n"
            "from pytest_lagscale.config.policy import load_policy_manifest, with_lag_threshold\n"
            "for name in ('scaledobject-ci', 'scaledobject-prometheus-ci', 'scaledobject-cloudwatch-ci', "
            "'hpa-cpu-ci', 'lag-per-slot-ci'):\n"
            "    config = load_policy_manifest(resolve_manifest(name, '--policy'))\n"
            "    if name.startswith('scaledobject'):\n"
            "        with_lag_threshold(config, 100)\n"
            "print(sorted(m for m in sys.modules if m.startswith('pytest_lagscale.control')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout.strip() == "[]"


def test_config_has_no_import_of_control_at_all() -> None:
    """No import statement of a config module (function-level ones included) names control."""
    import ast
    from pathlib import Path

    import pytest_lagscale.config as config

    found = []
    for path in sorted(Path(config.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [("." * node.level) + (node.module or "")] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names
                      if n.startswith(("pytest_lagscale.control", "..control")) or n == "..control"]
    assert found == []
