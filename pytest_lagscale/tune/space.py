"""The policy space of ``lagscale tune``: which ScaledObject fields it may change, the grid over
them, and a point applied to the manifest.

A ``--space`` option is ``KEY=LO..HI[:N]`` (N values, default :data:`DEFAULT_STEPS`; log-spaced
for ``lagThreshold``, linear otherwise, rounded to whole numbers), ``KEY=A|B|C`` (these values)
or ``KEY=V`` (one value); several keys are separated by commas or given in several options.
The keys (:data:`KEYS`, plus ``scaleUp|scaleDown.policies[I].value|periodSeconds``) are the
fields a user tunes, as written in the manifest:

==========================================  ================================================
key                                         manifest field
==========================================  ================================================
``lagThreshold``                            ``spec.triggers[*].metadata.lagThreshold`` (every
                                            kafka trigger and every external trigger that has
                                            one; a string, as KEDA wants it)
``pollingInterval``, ``cooldownPeriod``,    ``spec.<key>``
``minReplicaCount``, ``maxReplicaCount``
``scaleUp.stabilizationWindowSeconds``,     ``spec.advanced.horizontalPodAutoscalerConfig.``
``scaleDown.stabilizationWindowSeconds``    ``behavior.<direction>.stabilizationWindowSeconds``
``scaleUp.policies[0].value`` (etc.)        ``...behavior.<direction>.policies[I].<field>``
                                            (the API defaults are written out first when the
                                            manifest has no ``policies``)
==========================================  ================================================

A key may also be written with its ``spec.`` and ``advanced.horizontalPodAutoscalerConfig.
behavior.`` prefixes. Values are checked by the project's own manifest parser
(:func:`pytest_lagscale.config.policy.parse_policy_manifest`), the same checks as a real run:
:func:`parse_space` parses the manifest with each axis's lowest and highest value.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..config._problems import nearest
from ..contract.errors import ConfigError

#: Values of a ``LO..HI`` range without ``:N``.
DEFAULT_STEPS = 5
#: Most values on one axis.
MAX_STEPS = 50
#: Keys set on ``spec`` itself.
SPEC_KEYS = ("pollingInterval", "cooldownPeriod", "minReplicaCount", "maxReplicaCount")
#: Keys set in the HPA behavior of ``spec.advanced.horizontalPodAutoscalerConfig``.
BEHAVIOR_KEYS = ("scaleUp.stabilizationWindowSeconds", "scaleDown.stabilizationWindowSeconds")
#: The named keys (the policies' keys are patterns, see :data:`POLICY_KEY`).
KEYS = ("lagThreshold", *SPEC_KEYS, *BEHAVIOR_KEYS)
#: ``scaleUp.policies[0].value`` and the like.
POLICY_KEY = re.compile(r"^(scaleUp|scaleDown)\.policies\[(\d+)\]\.(value|periodSeconds)$")
#: Keys whose ranges are log-spaced.
LOG_KEYS = ("lagThreshold",)
_PREFIXES = ("spec.", "advanced.horizontalPodAutoscalerConfig.behavior.")
_BEHAVIOR_PATH = ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior")
_ALLOWED_FORMS = "KEY=LO..HI, KEY=LO..HI:N, KEY=A|B|C or KEY=V with whole numbers"


@dataclass(frozen=True)
class Axis:
    """One tuned key and its values.

    Attributes:
        key: the key as :data:`KEYS` or :data:`POLICY_KEY` names it.
        values: whole numbers, ascending, no repeats (units: the field's: records, seconds,
            replicas, percent).
        spec: the ``--space`` item it came from, for messages.
    """

    key: str
    values: tuple[int, ...]
    spec: str


def canonical_key(key: str) -> str:
    """``key`` without the ``spec.`` / ``advanced...behavior.`` prefixes."""
    for prefix in _PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


def _known(key: str) -> bool:
    return key in KEYS or POLICY_KEY.match(key) is not None


def log_values(lo: int, hi: int, steps: int) -> tuple[int, ...]:
    """``steps`` log-spaced whole numbers from ``lo`` to ``hi`` (both kept), inner ones rounded
    to 2 significant figures; ``lo`` >= 1."""
    if steps == 1 or lo == hi:
        return (lo,)
    ratio = math.log(hi / lo) / (steps - 1)
    inner = [_two_figures(lo * math.exp(ratio * i)) for i in range(1, steps - 1)]
    return tuple(sorted({lo, hi, *inner}))


def _two_figures(value: float) -> int:
    digits = max(0, int(math.floor(math.log10(value))) - 1)
    return int(round(value / 10 ** digits) * 10 ** digits)


def linear_values(lo: int, hi: int, steps: int) -> tuple[int, ...]:
    """``steps`` evenly spaced whole numbers from ``lo`` to ``hi`` (rounded, no repeats)."""
    if steps == 1 or lo == hi:
        return (lo,)
    return tuple(sorted({round(lo + (hi - lo) * i / (steps - 1)) for i in range(steps)}))


def _whole(text: str) -> int | None:
    text = text.strip().replace("_", "")
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def parse_axis(item: str) -> tuple[Axis | None, list[str]]:
    """One ``KEY=...`` item: the axis, or None and its problem lines (syntax only; the values
    are checked against the manifest by :func:`parse_space`)."""
    key, sep, body = (part.strip() for part in item.partition("="))
    if not sep or not key or not body:
        return None, [f"--space: got {item!r}, expected {_ALLOWED_FORMS}; write e.g. "
                      "'lagThreshold=100..100000'"]
    name = canonical_key(key)
    if not _known(name):
        guess = nearest(name, KEYS)
        fix = f"use {guess!r}" if guess else "use one of them"
        return None, [f"--space: got key {key!r} in {item!r}, expected one of {', '.join(KEYS)} "
                      "or scaleUp|scaleDown.policies[I].value|periodSeconds; " + fix]
    values = _values(name, body)
    if isinstance(values, str):
        return None, [f"--space: got {body!r} for {name!r} in {item!r}, expected "
                      f"{_ALLOWED_FORMS}; {values}"]
    return Axis(name, values, item), []


def _values(name: str, body: str) -> tuple[int, ...] | str:
    """The axis's values, or the fix to print."""
    match = re.fullmatch(r"(.+?)\.\.(.+?)(?::(.+))?", body)
    if match is None:
        parts = [_whole(part) for part in body.split("|")]
        if any(v is None for v in parts):
            return "write whole numbers, e.g. '100|500|5000'"
        return tuple(sorted(set(parts)))  # type: ignore[arg-type]
    lo, hi = _whole(match.group(1)), _whole(match.group(2))
    steps = _whole(match.group(3)) if match.group(3) is not None else DEFAULT_STEPS
    if lo is None or hi is None or steps is None:
        return "write whole numbers, e.g. '0..600:4'"
    if lo > hi:
        return f"put the lower bound first ('{hi}..{lo}')"
    if not 1 <= steps <= MAX_STEPS:
        return f"give N in [1, {MAX_STEPS}] after ':'"
    if name in LOG_KEYS:
        if lo < 1:
            return "start a log-spaced range at 1 or more"
        return log_values(lo, hi, steps)
    return linear_values(lo, hi, steps)


def parse_space(specs: Sequence[str], doc: Mapping[str, Any], source: str) -> tuple[Axis, ...]:
    """The axes of ``--space`` options, each value range checked against the manifest.

    Args:
        specs: the ``--space`` option values (each holds comma-separated ``KEY=...`` items).
        doc: the policy manifest as loaded (a ScaledObject mapping); not modified.
        source: its file, for messages.

    Raises:
        ConfigError: every problem at once, one line each: a bad item (option, value, allowed
            forms), an unknown key (with the nearest known one), a repeated key, or an axis end
            the manifest parser refuses (its own line, prefixed with ``--space: <item>:``).
    """
    axes, problems = [], []
    for item in (part for spec in specs for part in spec.split(",") if part.strip()):
        axis, lines = parse_axis(item.strip())
        problems += lines
        if axis is not None and any(a.key == axis.key for a in axes):
            problems.append(f"--space: got {axis.key!r} twice, expected each key once; merge "
                            f"the values into one item")
        elif axis is not None:
            axes.append(axis)
    if not axes and not problems:
        problems.append(f"--space: got {list(specs)!r}, expected at least one KEY=... item; "
                        "give e.g. --space lagThreshold=100..100000")
    for axis in axes:
        for value in sorted({axis.values[0], axis.values[-1]}):
            problems += [f"--space: {axis.spec!r}: {line}"
                         for line in point_problems(doc, {axis.key: value}, source)]
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))
    return tuple(axes)


def grid(axes: Sequence[Axis]) -> list[dict[str, int]]:
    """Every combination of the axes' values, the last axis fastest: ``{key: value}`` each."""
    keys = [a.key for a in axes]
    return [dict(zip(keys, combo)) for combo in itertools.product(*(a.values for a in axes))]


def apply_point(doc: Mapping[str, Any], point: Mapping[str, int]) -> dict[str, Any]:
    """A deep copy of the manifest ``doc`` with the point's fields set (the rest unchanged).

    Raises:
        ConfigError: the manifest has no trigger for ``lagThreshold``, or a policy index
            past the end of the direction's ``policies`` (after the API defaults).
    """
    out = copy.deepcopy(dict(doc))
    spec = out.setdefault("spec", {})
    for key, value in point.items():
        if key == "lagThreshold":
            _set_lag_threshold(spec, value)
        elif key in SPEC_KEYS:
            spec[key] = value
        elif key in BEHAVIOR_KEYS:
            direction, field_name = key.split(".")
            _rules(out, direction)[field_name] = value
        else:
            _set_policy(out, key, value)
    return out


def _set_lag_threshold(spec: dict[str, Any], value: int) -> None:
    """Every kafka trigger's ``lagThreshold``, and every external trigger's that has one (the
    persistent-lag scaler's, as ``--lag-threshold`` sets it: ``ExternalTrigger.
    with_lag_threshold``)."""
    triggers = [t for t in spec.get("triggers") or () if isinstance(t, dict)
                and (t.get("type") == "kafka" or (t.get("type") == "external"
                                                  and isinstance(t.get("metadata"), dict)
                                                  and "lagThreshold" in t["metadata"]))]
    if not triggers:
        raise ConfigError("'lagThreshold': the manifest has no kafka trigger, expected "
                          "spec.triggers with type kafka (or type external with a "
                          "lagThreshold); drop lagThreshold from --space")
    for trigger in triggers:
        trigger.setdefault("metadata", {})["lagThreshold"] = str(value)


def _rules(doc: dict[str, Any], direction: str) -> dict[str, Any]:
    """``spec.advanced.horizontalPodAutoscalerConfig.behavior.<direction>``, created empty."""
    node = doc
    for name in (*_BEHAVIOR_PATH, direction):
        node = node.setdefault(name, {})
    return node


def _set_policy(doc: dict[str, Any], key: str, value: int) -> None:
    from ..config.behavior import DEFAULT_SCALE_DOWN, DEFAULT_SCALE_UP

    direction, position, field_name = POLICY_KEY.match(key).groups()  # type: ignore[union-attr]
    rules = _rules(doc, direction)
    if "policies" not in rules:
        default = DEFAULT_SCALE_UP if direction == "scaleUp" else DEFAULT_SCALE_DOWN
        rules["policies"] = [{"type": p.type, "value": p.value, "periodSeconds": p.period_s}
                             for p in default.policies]
    policies = rules["policies"]
    if not isinstance(policies, list) or int(position) >= len(policies):
        count = len(policies) if isinstance(policies, list) else 0
        raise ConfigError(f"{key!r}: the manifest's {direction} has {count} policies, "
                          f"expected an index in [0, {count - 1}]; use an existing policy's "
                          "index")
    policies[int(position)][field_name] = value


def point_problems(doc: Mapping[str, Any], point: Mapping[str, int], source: str) -> list[str]:
    """The manifest parser's problem lines for ``doc`` with ``point`` applied (empty: valid)."""
    from ..config.policy import parse_policy_manifest

    try:
        parse_policy_manifest(apply_point(doc, point), source=source)
    except ConfigError as exc:
        return list(exc.problems)
    return []


def describe(point: Mapping[str, int]) -> str:
    """``key=value, ...`` of a point, for tables and messages."""
    return ", ".join(f"{k}={v}" for k, v in point.items())


__all__ = ["Axis", "DEFAULT_STEPS", "KEYS", "LOG_KEYS", "MAX_STEPS", "POLICY_KEY", "apply_point",
           "canonical_key", "describe", "grid", "linear_values", "log_values", "parse_axis",
           "parse_space", "point_problems"]
