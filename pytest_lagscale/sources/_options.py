"""Typed readers of a lag source's options (a flat mapping, snake_case keys, from a CLI flag, a
YAML file or a test), recording every problem in one :class:`~pytest_lagscale.config._problems.Problems`.

Values may be strings (``period_s=60`` from a command line) or already typed (YAML, tests).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from ..config._problems import MISSING, Problems


def check_keys(options: Mapping[str, Any], known: Collection[str], p: Problems) -> None:
    """Record every key of ``options`` that is not in ``known`` (with the nearest known key)."""
    if known:
        p.unknown_keys(options, "", tuple(known))
        return
    for key, value in options.items():
        p.add(str(key), value, "no options (this source takes none)", f"remove {key}")


def refuse_options(options: Mapping[str, Any] | None, source: str) -> None:
    """The check of a source that takes no options (``source``: the messages' label).

    Raises:
        ConfigError: any option given, one line each.
    """
    p = Problems(source)
    check_keys(options or {}, (), p)
    p.raise_if_any()


def text(options: Mapping[str, Any], key: str, p: Problems, *, default: str | None = None,
         example: str = "...") -> str:
    """A non-empty string option (trimmed); ``default`` when absent (required when None)."""
    value = options.get(key, MISSING)
    if value is MISSING or value is None:
        if default is None:
            p.add(key, MISSING, "a non-empty string", f"set {key}={example}")
            return ""
        return default
    if not isinstance(value, str) or not value.strip():
        p.add(key, value, "a non-empty string", f"set {key}={example}")
        return default or ""
    return value.strip()


def optional_text(options: Mapping[str, Any], key: str, p: Problems, example: str = "...") -> str | None:
    """A non-empty string option, or None when absent."""
    if options.get(key) is None:
        return None
    return text(options, key, p, example=example)


def seconds(options: Mapping[str, Any], key: str, p: Problems, *, default: float, lo: float,
            hi: float) -> float:
    """A number of seconds in ``[lo, hi]`` (a number or a decimal string); ``default`` when absent."""
    value = options.get(key, MISSING)
    if value is MISSING or value is None:
        return default
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not lo <= number <= hi:
        p.add(key, value, f"a number of seconds in [{lo:g}, {hi:g}]", f"set {key}={default:g}")
        return default
    return number


def choice(options: Mapping[str, Any], key: str, p: Problems, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (the first is the default)."""
    value = options.get(key, MISSING)
    if value is MISSING or value is None:
        return choices[0]
    if value not in choices:
        p.add(key, value, "one of {" + ", ".join(map(repr, choices)) + "}", f"set {key}={choices[0]}")
        return choices[0]
    return str(value)
