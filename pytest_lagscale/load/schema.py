"""The traffic-profile schema and its validator (every problem reported at once, one line each).

A profile is a YAML mapping. Keys common to every kind:

=============  ========  ==============================================================
key            default   meaning
=============  ========  ==============================================================
kind           required  ``steady``, ``step``, ``bursty``, ``sawtooth`` or ``steps``
seed           required  integer 0 .. 2**64-1: keys, payloads and schedule derive from it
partitions     required  integer 1 .. 4096: partitions of the topic
duration_s     required  seconds, > 0: length of the run
topic          events    Kafka topic name
name           file stem free text shown in reports
description    ""        free text
entities       5000000   distinct entity ids (Zipf ranks), 1 .. 20,000,000
zipf_s         1.1       Zipf exponent s, 0 .. 10 (0 = uniform)
=============  ========  ==============================================================

Kind-specific keys: ``steady``: rate_per_s. ``step``: baseline_rate_per_s, spike_multiplier,
spike_start_s, spike_hold_s. ``bursty``: period_s, duty_cycle, high_rate_per_s, low_rate_per_s.
``sawtooth``: the bursty keys and ramp_steps (default 10). ``steps``: a list of mappings
``{at_s, rate_per_s, label}`` (label optional), at_s strictly increasing from 0.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Mapping

MAX_RATE_PER_S = 10_000_000
MAX_STEPS = 100_000


@dataclass(frozen=True)
class Number:
    """Allowed range of a numeric key: ``lo`` (exclusive when ``lo_open``) to ``hi``, in ``unit``."""

    lo: float
    hi: float
    unit: str
    integer: bool = False
    lo_open: bool = False

    def allowed(self) -> str:
        """The range as shown in messages."""
        kind = "integer " if self.integer else ""
        lo = f"above {_fmt(self.lo)} up" if self.lo_open else _fmt(self.lo)
        return f"{kind}{lo} to {_fmt(self.hi)} {self.unit}".rstrip()

    def contains(self, value: float) -> bool:
        """True when ``value`` lies in the range."""
        above = value > self.lo if self.lo_open else value >= self.lo
        return above and value <= self.hi


@dataclass(frozen=True)
class Text:
    """A free-text key."""

    unit: str = "text"

    def allowed(self) -> str:
        """The accepted form as shown in messages."""
        return self.unit


RATE = Number(0, MAX_RATE_PER_S, "records/s")
SECONDS = Number(0, 604_800, "s", lo_open=True)
FIELDS: dict[str, Number | Text] = {
    "kind": Text("one of 'steady', 'step', 'bursty', 'sawtooth', 'steps'"),
    "name": Text(),
    "description": Text(),
    "topic": Text("a Kafka topic name: 1 to 249 of [a-zA-Z0-9._-]"),
    "seed": Number(0, 2**64 - 1, "", integer=True),
    "partitions": Number(1, 4096, "partitions", integer=True),
    "duration_s": SECONDS,
    "entities": Number(1, 20_000_000, "entities", integer=True),
    "zipf_s": Number(0, 10, "(Zipf exponent)"),
    "rate_per_s": RATE,
    "baseline_rate_per_s": RATE,
    "spike_multiplier": Number(1, 1000, "x baseline_rate_per_s"),
    "spike_start_s": Number(0, 604_800, "s"),
    "spike_hold_s": SECONDS,
    "period_s": SECONDS,
    "duty_cycle": Number(0, 1, "(fraction of period_s)", lo_open=True),
    "high_rate_per_s": RATE,
    "low_rate_per_s": RATE,
    "ramp_steps": Number(1, 1000, "stairs per ramp", integer=True),
    "steps": Text("a list of {at_s, rate_per_s, label} mappings"),
    "at_s": Number(0, 604_800, "s"),
    "label": Text(),
}
REQUIRED = object()
COMMON: dict[str, Any] = {
    "kind": REQUIRED,
    "seed": REQUIRED,
    "partitions": REQUIRED,
    "duration_s": REQUIRED,
    "topic": "events",
    "name": None,
    "description": "",
    "entities": 5_000_000,
    "zipf_s": 1.1,
    "actions": (),
}
_BURSTY = {"period_s": REQUIRED, "duty_cycle": REQUIRED, "high_rate_per_s": REQUIRED,
           "low_rate_per_s": REQUIRED}
KINDS: dict[str, dict[str, Any]] = {
    "steady": {"rate_per_s": REQUIRED},
    "step": {"baseline_rate_per_s": REQUIRED, "spike_multiplier": REQUIRED,
             "spike_start_s": REQUIRED, "spike_hold_s": REQUIRED},
    "bursty": _BURSTY,
    "sawtooth": {**_BURSTY, "ramp_steps": 10},
    "steps": {"steps": REQUIRED},
}
STEP_ENTRY: dict[str, Any] = {"at_s": REQUIRED, "rate_per_s": REQUIRED, "label": None}


def _range_fix(spec: Number, value: float) -> str:
    if value > spec.hi:
        return f"lower it to {_fmt(spec.hi)} or less"
    if value <= spec.lo or not value == value:
        return f"raise it above {_fmt(spec.lo)}" if spec.lo_open else \
            f"raise it to {_fmt(spec.lo)} or more"
    return "set a value within the allowed range"  # pragma: no cover - unreachable


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


class Checker:
    """Collects problems about one profile; each names the key, value, range, source and fix.

    Args:
        source: the file the profile came from (shown in messages).
        origins: key paths whose value came from elsewhere, mapped to (subject, source), e.g.
            ``{"seed": ("--seed", "command line")}``.
    """

    def __init__(self, source: str, origins: Mapping[str, tuple[str, str]] | None = None):
        self.source = source
        self.origins = dict(origins or {})
        self.problems: list[str] = []

    def add(self, path: str, shown: str, allowed: str, fix: str) -> None:
        """Record one problem about key path ``path`` (``steps[2].at_s`` style).

        Args:
            path: key path in the profile.
            shown: the value's repr and what is wrong with it.
            allowed: the allowed set or range, with its unit.
            fix: what to change, without a trailing period.
        """
        if path in self.origins:
            subject, where = self.origins[path]
        else:
            subject, where = path.rsplit(".", 1)[-1], f"{self.source} at {path}"
        self.problems.append(f"'{subject}': {shown}; allowed: {allowed}; source: {where}; {fix}")

    def keys(self, raw: Mapping[str, Any], spec: Mapping[str, Any], prefix: str,
             scope: str) -> dict[str, Any]:
        """Check unknown and missing keys of ``raw``; return its known keys with defaults.

        Args:
            raw: the mapping as written.
            spec: valid keys mapped to their default (``REQUIRED`` when there is none).
            prefix: key path prefix of ``raw`` (``""`` at the top, ``steps[2].`` in a list).
            scope: what the keys belong to, for messages (``kind 'step'``, ``a steps entry``).
        """
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key in spec:
                out[key] = value
            else:
                self.unknown(str(key), value, list(spec), prefix, scope)
        for key, default in spec.items():
            if key not in raw:
                if default is REQUIRED:
                    self.add(prefix + key, f"missing (required for {scope})",
                             FIELDS[key].allowed(), f"add '{key}'")
                out[key] = default
        return out

    def unknown(self, key: str, value: Any, valid: list[str], prefix: str, scope: str) -> None:
        """Record an unknown key, suggesting the nearest valid key (difflib) as the fix."""
        owners = [k for k, fields in KINDS.items() if key in fields]
        near = nearest(key, valid)
        if owners and not prefix:
            shown = f"{value!r} is set but {scope} does not use it"
            fix = f"remove '{key}' or set kind to '{owners[0]}'"
        else:
            shown = f"unknown key (value {value!r})"
            fix = f"rename it to '{near}'" if near else f"remove '{key}'"
        self.add(prefix + key, shown, f"keys {', '.join(valid)} for {scope}", fix)

    def number(self, path: str, value: Any) -> Any:
        """Check a numeric key against ``FIELDS``; return the value (float unless integer)
        or None when it is invalid (the problem is recorded)."""
        spec = FIELDS[path.rsplit(".", 1)[-1]]
        assert isinstance(spec, Number)
        ok_types = (int,) if spec.integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok_types):
            expected = "an integer" if spec.integer else "a number"
            how = "instead of a YAML boolean" if isinstance(value, bool) else "without quotes"
            read = _exponent_number(value)
            if read is not None:  # YAML 1.1 (PyYAML) reads 1e12 as text: say so, with the range
                in_range = "within range" if spec.contains(read) else "out of range anyway"
                self.add(path, f"{value} is text to YAML 1.1 (an exponent needs a dot and a "
                         f"sign: {read:.1e}), and {read:g} is {in_range}", spec.allowed(),
                         f"write {expected} such as {read:.1e}" if spec.contains(read)
                         else _range_fix(spec, read))
                return None
            self.add(path, f"{value!r} is a {type(value).__name__}, not {expected}",
                     spec.allowed(), f"write {expected} {how}")
            return None
        if value != value or not spec.contains(value):  # NaN fails every range
            self.add(path, f"{value!r} is out of range", spec.allowed(), _range_fix(spec, value))
            return None
        return value if spec.integer else float(value)

    def text(self, path: str, value: Any) -> str | None:
        """Check a free-text key; return the value or None when it is not a string."""
        if not isinstance(value, str):
            self.add(path, f"{value!r} is a {type(value).__name__}, not a string",
                     FIELDS[path.rsplit(".", 1)[-1]].allowed(), "quote the value")
            return None
        return value


def check_cross(kind: str, params: Mapping[str, Any], duration_s: float | None,
                check: Checker) -> None:
    """Record problems that involve two keys of a valid ``kind`` profile."""
    if kind == "step" and duration_s is not None:
        end = params["spike_start_s"] + params["spike_hold_s"]
        if params["spike_start_s"] >= duration_s:
            check.add("spike_start_s",
                      f"{params['spike_start_s']!r} starts the spike at or after duration_s "
                      f"{duration_s!r}", "spike_start_s < duration_s (seconds after the load "
                      "start)", "start the spike earlier or raise duration_s")
        elif end > duration_s:
            check.add("spike_hold_s",
                      f"{params['spike_hold_s']!r} ends the spike at {end!r} s, after "
                      f"duration_s {duration_s!r}", "spike_start_s + spike_hold_s <= duration_s",
                      "shorten spike_hold_s or spike_start_s, or raise duration_s")
    if kind in ("bursty", "sawtooth") and params["high_rate_per_s"] < params["low_rate_per_s"]:
        check.add("high_rate_per_s",
                  f"{params['high_rate_per_s']!r} is below low_rate_per_s "
                  f"{params['low_rate_per_s']!r}", "high_rate_per_s >= low_rate_per_s records/s",
                  "swap the two rates")
    if kind in ("bursty", "sawtooth") and duration_s is not None:
        steps = math.ceil(duration_s / params["period_s"]) * (params.get("ramp_steps", 1) + 1)
        if steps > MAX_STEPS:
            check.add("period_s", f"{params['period_s']!r} compiles to {steps} steps over "
                      f"duration_s {duration_s!r}", f"at most {MAX_STEPS} steps",
                      "raise period_s or lower duration_s")


def check_steps_order(points: list[tuple[float, float, str]], duration_s: float | None,
                      check: Checker) -> None:
    """Record problems with the times of an explicit steps list (``(at_s, rate, label)``)."""
    if points[0][0] != 0:
        check.add("steps[0].at_s", f"{points[0][0]!r} does not start the run",
                  "0 s for the first step", "add a first step at at_s 0")
    for i in range(1, len(points)):
        if points[i][0] <= points[i - 1][0]:
            check.add(f"steps[{i}].at_s",
                      f"{points[i][0]!r} is not after steps[{i - 1}].at_s {points[i - 1][0]!r}",
                      "at_s strictly increasing, s", "order the steps by at_s without repeats")
    if duration_s is not None and points[-1][0] >= duration_s:
        check.add(f"steps[{len(points) - 1}].at_s",
                  f"{points[-1][0]!r} is not before duration_s {duration_s!r}",
                  "at_s < duration_s", "raise duration_s or remove the step")


def nearest(word: str, valid: list[str]) -> str | None:
    """The valid key ``word`` most likely misspells: the one key it abbreviates (3+ chars),
    else difflib's closest match with ratio >= 0.6, else None."""
    prefixed = [v for v in valid if len(word) >= 3 and v.startswith(word)]
    if len(prefixed) == 1:
        return prefixed[0]
    hits = difflib.get_close_matches(word, valid, n=1, cutoff=0.6)
    return hits[0] if hits else None


def _exponent_number(value: Any) -> float | None:
    """The number a string such as ``1e12`` would be (YAML 1.1 reads exponents without a dot
    or sign as text), or None for any other value."""
    if not isinstance(value, str) or not any(c in value for c in "eE"):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None
