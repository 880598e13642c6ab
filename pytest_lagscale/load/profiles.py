"""Traffic profiles: committed YAML (``fixtures/profiles/``) -> validated :class:`Profile` -> steps.

The schema (keys, defaults, ranges) is documented in :mod:`pytest_lagscale.load.schema`.

Example:
    >>> p = load_profile("fixtures/profiles/spike-ci.yaml")  # doctest: +SKIP
    >>> [(s.label, s.rate_per_s) for s in p.schedule()]  # doctest: +SKIP
    [('baseline', 200.0), ('spike', 2000.0), ('recovery', 200.0)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Union

import yaml

from ..contract.errors import ConfigError
from .schedule import Step
from .schema import (COMMON, FIELDS, KINDS, REQUIRED, STEP_ENTRY, Checker, check_cross,
                     check_steps_order, nearest)

_TOPIC_RE = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


@dataclass(frozen=True)
class Steady:
    """One rate for the whole run (records/s)."""

    rate_per_s: float

    def steps(self, duration_s: float) -> list[Step]:
        """The compiled schedule (one step)."""
        return [Step(0.0, duration_s, self.rate_per_s, "steady")]


@dataclass(frozen=True)
class Spike:
    """``baseline`` at R, ``spike`` at R x multiplier from start for hold seconds, then R again."""

    baseline_rate_per_s: float
    spike_multiplier: float
    spike_start_s: float
    spike_hold_s: float

    def steps(self, duration_s: float) -> list[Step]:
        """The compiled schedule (baseline, spike, recovery; empty intervals dropped)."""
        r, end = self.baseline_rate_per_s, self.spike_start_s + self.spike_hold_s
        out = [Step(0.0, self.spike_start_s, r, "baseline"),
               Step(self.spike_start_s, end, r * self.spike_multiplier, "spike"),
               Step(end, duration_s, r, "recovery")]
        return [s for s in out if s.end_s > s.start_s]


@dataclass(frozen=True)
class Bursty:
    """Square wave: high rate for duty_cycle x period_s, low rate for the rest of each period."""

    period_s: float
    duty_cycle: float
    high_rate_per_s: float
    low_rate_per_s: float

    def steps(self, duration_s: float) -> list[Step]:
        """The compiled schedule (``high-<i>``/``low-<i>`` per period i, cut at duration_s)."""
        out: list[Step] = []
        for i, (start, end) in enumerate(_periods(self.period_s, duration_s)):
            high_end = min(start + self.duty_cycle * self.period_s, end)
            out.append(Step(start, high_end, self.high_rate_per_s, f"high-{i}"))
            out.append(Step(high_end, end, self.low_rate_per_s, f"low-{i}"))
        return _cut(out, duration_s)


@dataclass(frozen=True)
class Sawtooth:
    """Each period ramps from low to high rate over duty_cycle x period_s in ``ramp_steps``
    equal stairs (stair j of n at low + (high - low) x (j + 1) / n), then low for the rest."""

    period_s: float
    duty_cycle: float
    high_rate_per_s: float
    low_rate_per_s: float
    ramp_steps: int

    def steps(self, duration_s: float) -> list[Step]:
        """The compiled schedule (``ramp-<i>.<j>``/``low-<i>``, cut at duration_s)."""
        out: list[Step] = []
        n, ramp_s = self.ramp_steps, self.duty_cycle * self.period_s
        span = self.high_rate_per_s - self.low_rate_per_s
        for i, (start, end) in enumerate(_periods(self.period_s, duration_s)):
            bounds = [start + ramp_s * j / n for j in range(n)] + [min(start + ramp_s, end)]
            for j in range(n):
                rate = self.low_rate_per_s + span * (j + 1) / n
                out.append(Step(bounds[j], bounds[j + 1], rate, f"ramp-{i}.{j}"))
            out.append(Step(bounds[-1], end, self.low_rate_per_s, f"low-{i}"))
        return _cut(out, duration_s)


@dataclass(frozen=True)
class ExplicitSteps:
    """An explicit list of (at_s, rate_per_s, label); each rate holds until the next at_s."""

    points: tuple[tuple[float, float, str], ...]

    def steps(self, duration_s: float) -> list[Step]:
        """The compiled schedule (one step per point, the last ending at duration_s)."""
        ends = [p[0] for p in self.points[1:]] + [duration_s]
        return [Step(at, end, rate, label) for (at, rate, label), end in zip(self.points, ends)]


Shape = Union[Steady, Spike, Bursty, Sawtooth, ExplicitSteps]
SHAPES: dict[str, type] = {"steady": Steady, "step": Spike, "bursty": Bursty,
                           "sawtooth": Sawtooth, "steps": ExplicitSteps}


@dataclass(frozen=True)
class ActionSpec:
    """An action scheduled at a time of the run (the profile's ``actions`` list).

    Attributes:
        at_s: seconds after the load starts (0 <= at_s <= duration_s).
        action: the action's name (e.g. ``increase_partitions``); the runner's registry
            (:mod:`pytest_lagscale.experiment.actions`) checks it and its parameters.
        params: the entry's other keys as written (e.g. ``{"to": 16}``).
    """

    at_s: float
    action: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The entry as written in YAML."""
        return {"at_s": self.at_s, "action": self.action, **dict(self.params)}


@dataclass(frozen=True)
class Profile:
    """A validated traffic profile.

    Attributes:
        name: display name (the file stem unless the profile sets ``name``).
        kind: ``steady``, ``step``, ``bursty``, ``sawtooth`` or ``steps``.
        seed: seed of keys, payloads and schedule.
        partitions: partition count of the topic.
        topic: Kafka topic.
        duration_s: run length, seconds.
        entities: distinct entity ids (Zipf ranks).
        zipf_s: Zipf exponent.
        shape: the kind's parameters.
        description: free text.
        source: the file it was loaded from ("" when built in code).
        actions: actions scheduled at times of the run, ordered by ``at_s``.
    """

    name: str
    kind: str
    seed: int
    partitions: int
    topic: str
    duration_s: float
    entities: int
    zipf_s: float
    shape: Shape
    description: str = ""
    source: str = ""
    actions: tuple[ActionSpec, ...] = ()

    def schedule(self) -> list[Step]:
        """The piecewise-constant rate schedule: contiguous steps from 0 to ``duration_s``."""
        return self.shape.steps(self.duration_s)

    def to_dict(self) -> dict[str, Any]:
        """The profile as a JSON-able mapping in the YAML schema (keys as in the file)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name not in ("shape", "actions")}
        if self.actions:
            out["actions"] = [a.to_dict() for a in self.actions]
        if isinstance(self.shape, ExplicitSteps):
            out["steps"] = [{"at_s": a, "rate_per_s": r, "label": lbl}
                            for a, r, lbl in self.shape.points]
        else:
            out.update({f.name: getattr(self.shape, f.name) for f in fields(self.shape)})
        return out


@dataclass(frozen=True)
class ProfileOverrides:
    """Values that replace the profile's (None keeps the file's value).

    Attributes:
        rate_per_s: the base rate, records/s: ``rate_per_s`` of a steady profile,
            ``baseline_rate_per_s`` of a step profile (other kinds reject it).
        spike_multiplier: ``spike_multiplier`` of a step profile.
        spike_hold_s: ``spike_hold_s`` of a step profile, seconds.
        seed: ``seed``.
        partitions: ``partitions``.
        topic: ``topic``.
        labels: how each attribute is named in messages (default: the CLI flags).
        source: where the overrides came from, for messages.
    """

    rate_per_s: float | None = None
    spike_multiplier: float | None = None
    spike_hold_s: float | None = None
    seed: int | None = None
    partitions: int | None = None
    topic: str | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: dict(CLI_FLAGS))
    source: str = "command line"


CLI_FLAGS = {"rate_per_s": "--rate", "spike_multiplier": "--spike-mult",
             "spike_hold_s": "--spike-hold", "seed": "--seed", "partitions": "--partitions",
             "topic": "--topic"}
_RATE_KEY = {"steady": "rate_per_s", "step": "baseline_rate_per_s"}
_STEP_ONLY = ("spike_multiplier", "spike_hold_s")


def load_profile(path: str | Path,
                 overrides: ProfileOverrides | Mapping[str, Any] | None = None) -> Profile:
    """Read, override and validate a profile file.

    Args:
        path: the YAML file.
        overrides: values replacing the file's (a mapping uses ``ProfileOverrides`` names).

    Returns:
        The validated profile.

    Raises:
        ConfigError: the file is missing or not YAML, or has any invalid, unknown or missing
            key; one line per problem, all reported together.
    """
    from ..config import _read

    path = Path(path)
    try:
        raw = _read.safe_load(_read.read_text(path))
    except OSError as exc:
        raise ConfigError(f"'{str(path)[:200]}': cannot be read ({exc.strerror}); allowed: a "
                          f"readable YAML file; source: --profile; check the path") from exc
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"'{path}': is not valid YAML ({detail}); allowed: a YAML mapping; "
                          f"source: {path}; fix the syntax at the position shown") from exc
    return parse_profile(raw, source=str(path), overrides=overrides, default_name=path.stem)


def parse_profile(raw: Any, *, source: str = "<profile>",
                  overrides: ProfileOverrides | Mapping[str, Any] | None = None,
                  default_name: str = "profile") -> Profile:
    """Validate a profile mapping (as parsed from YAML); see :func:`load_profile`.

    Raises:
        ConfigError: one line per problem, all reported together.
    """
    if raw is None:
        raise ConfigError(f"'{source}': is empty; allowed: a YAML mapping of profile keys (kind, "
                          f"duration_s, ...); source: {source}; write the profile's keys, as in "
                          f"the bundled spike-ci.yaml")
    if not isinstance(raw, Mapping):
        raise ConfigError(f"'{source}': {raw!r} is a {type(raw).__name__}, not a mapping; "
                          f"allowed: a YAML mapping of profile keys; source: {source}; "
                          f"write the keys at the top level")
    ov = overrides if isinstance(overrides, ProfileOverrides) else _overrides(overrides, source)
    check = Checker(source)
    raw = _apply_overrides(dict(raw), ov, check)
    kind = _kind(raw)
    kind_spec = KINDS.get(kind, {}) if kind else {}
    scope = f"kind '{kind}'" if kind_spec else "every kind"
    if not kind_spec:  # cannot tell kind-specific keys apart: accept all of them
        kind_spec = {k: None for spec in KINDS.values() for k in spec}
    values = check.keys(raw, {**COMMON, **kind_spec}, "", scope)
    common = _common(values, check, default_name)
    shape = _shape(kind if kind in KINDS else None, values, common.get("duration_s"), check)
    common["actions"] = _actions(values["actions"], common.get("duration_s"), check)
    if check.problems:
        raise ConfigError(check.problems)
    return Profile(shape=shape, source=source if source != "<profile>" else "", **common)


def _actions(raw: Any, duration_s: Any, check: Checker) -> tuple[ActionSpec, ...]:
    """The ``actions`` list: entries ``{at_s: SECONDS, action: NAME, <param>: value, ...}``."""
    if raw in ((), None):
        return ()
    if not isinstance(raw, list):
        check.add("actions", f"{raw!r} is not a list", "a list of {at_s, action, ...} entries",
                  "write one '- at_s: ..., action: ...' entry per action")
        return ()
    out = []
    for i, entry in enumerate(raw):
        where = f"actions[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("action"), str):
            check.add(where, f"{entry!r} has no action name", "a mapping with at_s and action",
                      "add e.g. 'action: increase_partitions'")
            continue
        at_s = entry.get("at_s")
        limit = duration_s if isinstance(duration_s, (int, float)) else float("inf")
        if isinstance(at_s, bool) or not isinstance(at_s, (int, float)) or not 0 <= at_s <= limit:
            check.add(f"{where}.at_s", repr(at_s), f"seconds in [0, duration_s = {limit:g}]",
                      "give the time after the load start")
            continue
        params = {k: v for k, v in entry.items() if k not in ("at_s", "action")}
        out.append(ActionSpec(float(at_s), entry["action"], params))
    return tuple(sorted(out, key=lambda a: a.at_s))


def _overrides(mapping: Mapping[str, Any] | None, source: str) -> ProfileOverrides:
    mapping = dict(mapping or {})
    names = [f.name for f in fields(ProfileOverrides) if f.name not in ("labels", "source")]
    unknown = [k for k in mapping if k not in names]
    if unknown:
        raise ConfigError([f"'{k}': unknown override (value {mapping[k]!r}); allowed: "
                           f"{', '.join(names)}; source: overrides of {source}; use one of "
                           f"those names" for k in unknown])
    return ProfileOverrides(**mapping)


def _kind(raw: Mapping[str, Any]) -> str | None:
    """The profile's kind when it is a string (any string; validity is checked later)."""
    kind = raw.get("kind")
    return kind if isinstance(kind, str) else None


def _apply_overrides(raw: dict[str, Any], ov: ProfileOverrides, check: Checker) -> dict[str, Any]:
    kind = _kind(raw)
    for attr in ("rate_per_s", *_STEP_ONLY, "seed", "partitions", "topic"):
        value = getattr(ov, attr)
        if value is None:
            continue
        label = ov.labels.get(attr, attr)
        key = _RATE_KEY.get(kind) if attr == "rate_per_s" else attr
        if attr in _STEP_ONLY and kind != "step":
            key = None
        if key is None and kind in KINDS:
            allowed = "kinds 'steady', 'step'" if attr == "rate_per_s" else "kind 'step'"
            check.origins[label] = (label, ov.source)
            check.add(label, f"{value!r} does not apply to kind {kind!r}", allowed,
                      f"drop {label} or edit {check.source}")
            continue
        if key is not None:
            raw[key] = value
            check.origins[key] = (label, ov.source)
    return raw


def _common(values: Mapping[str, Any], check: Checker, default_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("seed", "partitions", "duration_s", "entities", "zipf_s"):
        if values[key] is not REQUIRED:
            out[key] = check.number(key, values[key])
    for key in ("name", "description", "topic"):
        if values[key] is not None:
            out[key] = check.text(key, values[key])
    if isinstance(out.get("topic"), str) and (not _TOPIC_RE.match(out["topic"])
                                              or out["topic"] in (".", "..")):
        check.add("topic", f"{out['topic']!r} is not a valid topic name",
                  FIELDS["topic"].allowed(), "use only letters, digits, '.', '_' and '-'")
    kind = values["kind"]
    if kind is not REQUIRED and check.text("kind", kind) is not None and kind not in KINDS:
        near = nearest(str(kind), list(KINDS))
        check.add("kind", f"{kind!r} is not a known kind", FIELDS["kind"].allowed(),
                  f"set kind to '{near}'" if near else "set kind to one of them")
    out["kind"] = kind
    out["name"] = out.get("name") or default_name
    return out


def _shape(kind: str | None, values: Mapping[str, Any], duration_s: float | None,
           check: Checker) -> Any:
    if kind is None:
        return None
    if kind == "steps":
        return _explicit_steps(values["steps"], duration_s, check)
    params = {}
    for key in KINDS[kind]:
        if values[key] is not REQUIRED:
            params[key] = check.number(key, values[key])
    if len(params) < len(KINDS[kind]) or None in params.values():
        return None  # problems already recorded
    check_cross(kind, params, duration_s, check)
    return SHAPES[kind](**params)


def _explicit_steps(entries: Any, duration_s: float | None, check: Checker) -> Any:
    if entries is REQUIRED:
        return None
    if not isinstance(entries, list) or not entries:
        check.add("steps", f"{entries!r} is not a non-empty list", FIELDS["steps"].allowed(),
                  "write one '- {at_s: ..., rate_per_s: ...}' item per step")
        return None
    points: list[tuple[float, float, str]] = []
    for i, entry in enumerate(entries):
        prefix = f"steps[{i}]."
        if not isinstance(entry, Mapping):
            check.add(f"steps[{i}]", f"{entry!r} is a {type(entry).__name__}, not a mapping",
                      FIELDS["steps"].allowed(), "write it as {at_s: ..., rate_per_s: ...}")
            continue
        item = check.keys(entry, STEP_ENTRY, prefix, "a steps entry")
        at = None if item["at_s"] is REQUIRED else check.number(prefix + "at_s", item["at_s"])
        rate = (None if item["rate_per_s"] is REQUIRED
                else check.number(prefix + "rate_per_s", item["rate_per_s"]))
        label = f"step-{i}" if item["label"] is None else check.text(prefix + "label",
                                                                      item["label"])
        if at is not None and rate is not None and label is not None:
            points.append((at, rate, label))
    if len(points) != len(entries):
        return None
    check_steps_order(points, duration_s, check)
    return ExplicitSteps(tuple(points))


def _periods(period_s: float, duration_s: float) -> list[tuple[float, float]]:
    out, i = [], 0
    while i * period_s < duration_s:
        out.append((i * period_s, (i + 1) * period_s))
        i += 1
    return out


def _cut(steps: list[Step], duration_s: float) -> list[Step]:
    out = []
    for s in steps:
        end = min(s.end_s, duration_s)
        if end > s.start_s:
            out.append(Step(s.start_s, end, s.rate_per_s, s.label))
    return out
