"""Typed readers of YAML-native fields (ints, strings, booleans, mappings, lists).

Each reader records a problem line (see :mod:`._problems`) and returns the default instead of
raising, so a loader can report every problem of a file at once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import yaml

from pytest_lagscale.config._problems import MISSING, Problems, join, nearest
from pytest_lagscale.contract.errors import ConfigError


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, except that a mapping repeating a key is an error (PyYAML keeps the
    last value silently, so a second ``lagThreshold:`` would override the first unseen)."""


def _unique_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode,
                    deep: bool = False) -> dict[Any, Any]:
    first: dict[Any, Any] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<:` merges may be overridden
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            earlier = first.setdefault(key, key_node.start_mark)
        except TypeError:  # an unhashable key: SafeLoader reports it
            continue
        if earlier is not key_node.start_mark:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r} (first at line {earlier.line + 1})",
                key_node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with duplicate keys refused (:class:`UniqueKeyLoader`); raises
    ``yaml.YAMLError`` like it."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)


def read_text(path: str | Path, source: str | None = None) -> str:
    """The UTF-8 text of ``path``.

    Raises:
        OSError: the file cannot be read (the caller words it).
        ConfigError: a binary file (a NUL byte) or bytes that are not UTF-8, naming the offset.
    """
    data = Path(path).read_bytes()
    where = source or str(path)
    nul = data.find(b"\0")
    if nul >= 0:
        raise ConfigError(f"'{where}': is a binary file (a NUL byte at offset {nul}); allowed: "
                          "UTF-8 YAML text; check the path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"'{where}': is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                          f"offset {exc.start}); allowed: UTF-8 YAML text; save the file as "
                          "UTF-8") from None


def load_yaml(path: str | Path) -> Any:
    """Read one YAML document from ``path`` (UTF-8, no repeated key in a mapping).

    Raises:
        ConfigError: the file is missing, unreadable, binary, not UTF-8, not YAML, repeats a
            key or holds several documents.
    """
    source = str(path)
    try:
        text = read_text(path)
    except OSError as exc:
        short = source if len(source) <= 200 else source[:200] + "..."
        raise ConfigError(f"'{short}': got {exc.strerror!r}, expected a readable YAML file in "
                          f"{short}; check the path") from exc
    try:
        documents = list(yaml.load_all(text, Loader=UniqueKeyLoader))  # noqa: S506
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f"line {where.line + 1}" if where else "the file"
        raise ConfigError(f"'{source}': got invalid YAML at {line} ({getattr(exc, 'problem', exc)}), "
                          f"expected one YAML document in {source}; fix the syntax") from exc
    if len(documents) != 1:
        raise ConfigError(f"'{source}': got {len(documents)} YAML documents, expected exactly 1 in "
                          f"{source}; keep one object per file")
    return documents[0]


def mapping(value: Any, path: str, p: Problems, what: str = "a mapping") -> Mapping[str, Any] | None:
    """``value`` if it is a mapping with string keys, else record a problem and return None."""
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return value
    p.add(path or "<root>", value, what, f"write '{path or '<root>'}' as a YAML mapping of key: value")
    return None


def sequence(node: Mapping[str, Any], key: str, path: str, p: Problems, *,
             required: bool = False) -> list[Any] | None:
    """The list at ``node[key]`` (None when absent and optional)."""
    value = node.get(key, MISSING)
    sub = join(path, key)
    if value is MISSING or value is None:
        if required:
            p.add(sub, MISSING, "a non-empty list", f"add '{sub}' with at least one item")
        return None
    if not isinstance(value, list):
        p.add(sub, value, "a list", f"write '{sub}' as a YAML list (items starting with '- ')")
        return None
    return value


def integer(node: Mapping[str, Any], key: str, path: str, p: Problems, *, default: Any = MISSING,
            lo: int | None = None, hi: int | None = None, unit: str = "") -> Any:
    """The integer at ``node[key]`` within [lo, hi]; ``default`` when absent.

    A missing key without a default is a problem. Booleans and floats are not integers.
    """
    value = node.get(key, MISSING)
    sub = join(path, key)
    if value is MISSING and default is not MISSING:
        return default
    allowed = "an integer" + _range_text(lo, hi) + (f" ({unit})" if unit else "")
    example = lo if lo is not None else (default if isinstance(default, int) else 1)
    if value is MISSING:
        p.add(sub, value, allowed, f"add '{sub}', e.g. {example}")
        return default if default is not MISSING else None
    if isinstance(value, bool) or not isinstance(value, int):
        p.add(sub, value, allowed, f"write a whole number without quotes, e.g. {example}")
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        fix = f"raise it to at least {lo}" if lo is not None and value < lo else f"lower it to at most {hi}"
        p.add(sub, value, allowed, fix)
        return None
    return value


def string(node: Mapping[str, Any], key: str, path: str, p: Problems, *, default: Any = MISSING,
           choices: Collection[str] | None = None, what: str = "a non-empty string") -> Any:
    """The non-empty string at ``node[key]`` (one of ``choices`` when given)."""
    value = node.get(key, MISSING)
    sub = join(path, key)
    if value is MISSING and default is not MISSING:
        return default
    allowed = f"one of {_choices(choices)}" if choices else what
    if value is MISSING:
        example = next(iter(choices)) if choices else "a value"
        p.add(sub, value, allowed, f"add '{sub}', e.g. {example!r}" if choices else f"add '{sub}'")
        return None
    if not isinstance(value, str) or not value.strip():
        p.add(sub, value, allowed, "write it as a non-empty string")
        return None
    if choices is not None and value not in choices:
        guess = nearest(value, choices)
        fix = f"use {guess!r}" if guess else f"use one of {_choices(choices)}"
        p.add(sub, value, allowed, fix)
        return None
    return value


def boolean(node: Mapping[str, Any], key: str, path: str, p: Problems, *, default: bool) -> bool:
    """The YAML boolean at ``node[key]`` (``default`` when absent)."""
    value = node.get(key, MISSING)
    if value is MISSING:
        return default
    if not isinstance(value, bool):
        p.add(join(path, key), value, "true or false", "write true or false without quotes")
        return default
    return value


def _range_text(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f" in [{lo}, {hi}]"
    if lo is not None:
        return f" >= {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def _choices(choices: Collection[str] | None) -> str:
    return "{" + ", ".join(repr(c) for c in choices or ()) + "}"
