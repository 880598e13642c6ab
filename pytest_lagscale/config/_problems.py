"""Problem lines for :class:`~pytest_lagscale.contract.errors.ConfigError` and typed readers of YAML nodes.

Every line has one shape, so tests can match whole strings::

    '<key path>': got <repr>, expected <allowed set or range> in <source>; <fix>

``<key path>`` is the key as the user wrote it (``spec.triggers[0].metadata.lagThreshold``,
``metadata.annotations["lagscale.dev/hpa-tolerance"]``), ``<repr>`` is the value's ``repr``
(``no value`` when the key is missing), ``<source>`` is the file (or a label for in-memory
input) and ``<fix>`` is an imperative without a trailing period.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from typing import Any

from pytest_lagscale.contract.errors import ConfigError

MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "no value"})()
"""Sentinel for a key that is absent; its repr is ``no value``."""

_MAX_REPR = 60


def join(parent: str, key: str) -> str:
    """The key path of ``key`` inside ``parent`` (``''`` for the root)."""
    if "." in key or "/" in key:
        return f'{parent}["{key}"]' if parent else f'["{key}"]'
    return f"{parent}.{key}" if parent else key


def index(parent: str, position: int) -> str:
    """The key path of list item ``position`` inside ``parent``."""
    return f"{parent}[{position}]"


def show(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (``no value`` for :data:`MISSING`)."""
    text = repr(value)
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


def nearest(word: str, candidates: Collection[str]) -> str | None:
    """The candidate closest to ``word`` (case-insensitive first, then difflib), or None."""
    for candidate in candidates:
        if candidate.lower() == word.lower():
            return candidate
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


class Problems:
    """Collects problem lines for one input, to be raised together.

    Args:
        source: the file the input came from (or a label such as ``trigger metadata``).
    """

    def __init__(self, source: str):
        self.source = source
        self.lines: list[str] = []

    def add(self, key: str, value: Any, expected: str, fix: str) -> None:
        """Record one problem: subject ``key``, the ``value`` seen, what is allowed, the fix."""
        self.lines.append(f"'{key}': got {show(value)}, expected {expected} in {self.source}; {fix}")

    def unknown_keys(self, node: Mapping[str, Any], path: str, known: Collection[str],
                     unsupported: Mapping[str, str] | None = None) -> None:
        """Record every key of ``node`` that is not in ``known``.

        Args:
            node: the mapping as loaded.
            path: its key path.
            known: the valid keys at this level.
            unsupported: valid upstream keys the harness does not simulate, mapped to the
                fix to print.
        """
        where = f"'{path}'" if path else "the document root"
        for key, value in node.items():
            key_text = str(key)
            if key_text in known:
                continue
            sub = join(path, key_text)
            if unsupported and key_text in unsupported:
                self.add(sub, value, f"a key lagscale simulates (not {key_text!r}) under {where}",
                         unsupported[key_text])
                continue
            guess = nearest(key_text, known)
            fix = (f"rename it to '{join(path, guess)}'" if guess
                   else f"remove it (known keys: {', '.join(sorted(known))})")
            self.add(sub, value, f"a known key of {where}", fix)

    def raise_if_any(self) -> None:
        """Raise :class:`ConfigError` with every recorded line, if any.

        Raises:
            ConfigError: one line per problem, in document order.
        """
        if self.lines:
            raise ConfigError(self.lines)
