"""HPA ``behavior`` (autoscaling/v2): validation and the API server's defaulting.

The same parser serves ``advanced.horizontalPodAutoscalerConfig.behavior`` of a ScaledObject,
``spec.behavior`` of the CPU HPA and the YAML-shaped dict given to the HPA of
``control/hpa/autoscaler.py`` (``HorizontalPodAutoscaler``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import Problems, index, join

SELECT_POLICIES = ("Max", "Min", "Disabled")
POLICY_TYPES = ("Pods", "Percent")
MAX_STABILIZATION_WINDOW_S = 3600
MAX_PERIOD_S = 1800
_RULE_KEYS = ("stabilizationWindowSeconds", "selectPolicy", "policies")
_TOLERANCE_FIX = ("remove it: per-direction tolerance needs the HPAConfigurableTolerance feature gate "
                  "(alpha in v1.33, off by default); set the global value with the annotation "
                  "'lagscale.dev/hpa-tolerance'")


@dataclass(frozen=True)
class ScalingPolicy:
    """One rate-limit policy.

    Attributes:
        type: ``Pods`` (absolute replicas) or ``Percent`` (of the replicas at period start).
        value: replicas or percent allowed to change per period (> 0).
        period_s: length of the look-back period in seconds (1..1800).
    """

    type: str
    value: int
    period_s: int


@dataclass(frozen=True)
class ScalingRules:
    """Rules for one direction after API defaulting.

    Attributes:
        stabilization_window_s: look-back window in seconds (0..3600); None only for scale-down
            when unset, meaning the controller's ``--horizontal-pod-autoscaler-downscale-
            stabilization`` value (300 s by default) applies.
        select_policy: ``Max``, ``Min`` or ``Disabled``.
        policies: at least one policy.
    """

    stabilization_window_s: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]


@dataclass(frozen=True)
class Behavior:
    """``spec.behavior`` with every field defaulted as the API server does.

    Source: kubernetes/kubernetes pkg/apis/autoscaling/v2/defaults.go
    GenerateHPAScaleUpRules/GenerateHPAScaleDownRules v1.28.0; docs/semantics.md §3.4
    """

    scale_up: ScalingRules
    scale_down: ScalingRules


DEFAULT_SCALE_UP = ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)))
DEFAULT_SCALE_DOWN = ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),))


def parse_behavior(node: Any, *, path: str = "behavior", source: str = "behavior") -> Behavior:
    """Validate a YAML-shaped behavior and fill the API defaults (§3.4).

    Args:
        node: ``{'scaleUp': {...}, 'scaleDown': {...}}`` as loaded from YAML.
        path: key path of ``node`` for messages.
        source: file or label for messages.

    Raises:
        ConfigError: every invalid field, one line each.
    """
    problems = Problems(source)
    behavior = collect_behavior(node, path, problems)
    problems.raise_if_any()
    assert behavior is not None
    return behavior


def collect_behavior(node: Any, path: str, p: Problems) -> Behavior | None:
    """Like :func:`parse_behavior` but records problems in ``p``; None when invalid."""
    data = _read.mapping(node, path, p)
    if data is None:
        return None
    p.unknown_keys(data, path, ("scaleUp", "scaleDown"))
    before = len(p.lines)
    up = _rules(data.get("scaleUp"), join(path, "scaleUp"), p, DEFAULT_SCALE_UP)
    down = _rules(data.get("scaleDown"), join(path, "scaleDown"), p, DEFAULT_SCALE_DOWN)
    if len(p.lines) != before:
        return None
    return Behavior(scale_up=up, scale_down=down)


def _rules(node: Any, path: str, p: Problems, default: ScalingRules) -> ScalingRules:
    """One direction: user fields override the defaults; a given policy list replaces them."""
    if node is None:
        return default
    data = _read.mapping(node, path, p)
    if data is None:
        return default
    p.unknown_keys(data, path, _RULE_KEYS, unsupported={"tolerance": _TOLERANCE_FIX})
    window = _read.integer(data, "stabilizationWindowSeconds", path, p,
                           default=default.stabilization_window_s, lo=0,
                           hi=MAX_STABILIZATION_WINDOW_S, unit="seconds")
    select = _read.string(data, "selectPolicy", path, p, default=default.select_policy,
                          choices=SELECT_POLICIES)
    policies = default.policies
    if "policies" in data:
        policies = _policies(data, path, p)
    return ScalingRules(window, select or default.select_policy, policies)


def _policies(data: Mapping[str, Any], path: str, p: Problems) -> tuple[ScalingPolicy, ...]:
    items = _read.sequence(data, "policies", path, p, required=True)
    if items is not None and not items:
        sub = join(path, "policies")
        p.add(sub, items, "at least one policy", f"add a policy to '{sub}' or remove the key to use the defaults")
    out = []
    for i, item in enumerate(items or ()):
        sub = index(join(path, "policies"), i)
        policy = _read.mapping(item, sub, p)
        if policy is None:
            continue
        p.unknown_keys(policy, sub, ("type", "value", "periodSeconds"))
        kind = _read.string(policy, "type", sub, p, choices=POLICY_TYPES)
        value = _read.integer(policy, "value", sub, p, lo=1,
                              unit="percent" if kind == "Percent" else "replicas")
        period = _read.integer(policy, "periodSeconds", sub, p, lo=1, hi=MAX_PERIOD_S, unit="seconds")
        if kind is not None and value is not None and period is not None:
            out.append(ScalingPolicy(kind, value, period))
    return tuple(out)


__all__ = ["Behavior", "ScalingPolicy", "ScalingRules", "DEFAULT_SCALE_UP", "DEFAULT_SCALE_DOWN",
           "parse_behavior", "collect_behavior"]
