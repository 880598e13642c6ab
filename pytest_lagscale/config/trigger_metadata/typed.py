"""KEDA's typed trigger-metadata rules, as readers that record problems (pure).

The one reader of trigger metadata: every trigger's metadata module in this package (and the
persistent-lag scaler's) reads its keys through these functions, as every KEDA scaler fills its
metadata struct through ``TypedConfig``. The rules they copy:

* a value is looked up by name, whitespace-trimmed; an empty value counts as absent;
* absent: the ``default`` when the field has one, nothing when it is ``optional``, else the
  error "missing required parameter";
* ``float64`` and ``int64`` fields are parsed with encoding/json, so only JSON numbers pass
  (``1e3`` and ``-0.5`` do, ``+1``, ``.5``, ``1.``, ``01`` and ``NaN`` do not); an int64 takes
  no fraction or exponent;
* ``bool`` fields: strconv.ParseBool's spellings (``1 t T TRUE true True 0 f F FALSE false
  False``), or with ``json_only`` encoding/json's ``true`` and ``false`` (the kafka trigger);
* ``time.Duration`` fields take a Go duration (``30s``, ``1m30s``) or whole milliseconds, never
  negative;
* ``[]string`` fields split on their separator (``,`` by default) and trim each element;
* ``enum`` fields check every separator-split element against the set.

Source: kedacore/keda pkg/scalers/scalersconfig/typed_config.go (setValue, setConfigValueHelper,
configParamValue, splitWithSeparator) v2.20.2;
pkg/scalers/authentication/authentication_types.go (Config, Validate) v2.20.2;
pkg/scalers/scaler.go quantityFromFloat64 v2.20.2
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any, Callable, TypeVar

from pytest_lagscale.config._problems import MISSING, Problems, join, nearest

_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_JSON_INT = re.compile(r"-?(0|[1-9][0-9]*)")
_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}
_GO_DURATION = re.compile(r"([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+")
_GO_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
#: authentication.Config's modes; bearer, basic and oauth exclude each other.
AUTH_MODES = ("apiKey", "basic", "tls", "bearer", "custom", "oauth")
_EXCLUSIVE_MODES = ("bearer", "basic", "oauth")
#: What each mode needs from the TriggerAuthentication (authParams), KEDA's Config.Validate.
_MODE_NEEDS = {"basic": "username (and password)", "bearer": "bearerToken", "tls": "cert and key",
               "oauth": "oauthTokenURI and clientID", "custom": "customAuthHeader and customAuthValue",
               "apiKey": "apiKey"}
#: The auth keys KEDA reads from triggerMetadata (the rest come from authParams only).
AUTH_METADATA_KEYS = ("authModes", "authMode", "apiKey", "method", "keyParamName")


def strings(metadata: Any, path: str, p: Problems, known: Collection[str], *,
            unsupported: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The metadata's known values, trimmed, empty ones dropped (KEDA's configParamValue).

    Records unknown keys (with the nearest known one) and non-string values; None when the
    metadata is not a mapping.
    """
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        p.add(path or "metadata", metadata, "a mapping of string keys to string values",
              "write the trigger metadata as key: 'value' lines")
        return None
    p.unknown_keys(metadata, path, tuple(known), unsupported)
    out = {}
    for key, value in metadata.items():
        if key not in known:
            continue
        if not isinstance(value, str):
            shown = ("true" if value else "false") if isinstance(value, bool) else value
            p.add(join(path, key), value, "a string (KEDA trigger metadata values are strings)", f"quote it: '{shown}'")
        elif value.strip():
            out[key] = value.strip()
    return out


def required(raw: Mapping[str, str], key: str, path: str, p: Problems, allowed: str, example: str) -> str:
    """A required string ("missing required parameter" when absent)."""
    if key not in raw:
        p.add(join(path, key), MISSING, allowed, f"add {key}: '{example}'")
        return ""
    return raw[key]


def float64(raw: Mapping[str, str], key: str, path: str, p: Problems, *, default: float | None = None,
            is_required: bool = False, unit: str = "") -> float | None:
    """A float64 field: a JSON number; ``default`` (or None) when absent and not required."""
    allowed = f"a number{f' ({unit})' if unit else ''} written as JSON, e.g. '10' or '0.5'"
    text = raw.get(key)
    if text is None:
        if is_required:
            p.add(join(path, key), MISSING, allowed, f"add {key}: '10'")
        return default
    if not _JSON_NUMBER.fullmatch(text):
        p.add(join(path, key), text, allowed, "write a plain decimal number such as '10', '0.5' or '1e3'")
        return default
    return float(text)


def json_int(text: str) -> int | None:
    """``text`` as an int64 the way encoding/json reads it (digits, an optional ``-``, no leading
    zero, no fraction or exponent), None when it is not one."""
    if not _JSON_INT.fullmatch(text) or not -2**63 <= int(text) < 2**63:
        return None
    return int(text)


def int64(raw: Mapping[str, str], key: str, path: str, p: Problems, *, default: int, unit: str = "",
          lo: int | None = None, allowed: str | None = None, example: int | None = None) -> int:
    """An int64 field: a JSON integer (no fraction, no exponent).

    Args:
        default: the value when absent or invalid.
        unit: shown in the allowed range (``an integer (seconds)``) unless ``allowed`` is given.
        lo: the least value allowed (a range check of the trigger's, not of KEDA's parser).
        allowed: the allowed range as messages show it.
        example: the value a fix suggests (``default`` unless given).
    """
    text = raw.get(key)
    if text is None:
        return default
    shown = allowed or f"an integer{f' ({unit})' if unit else ''}"
    hint = default if example is None else example
    value = json_int(text)
    if value is None:
        p.add(join(path, key), text, shown, f"write digits only, e.g. '{hint}'")
        return default
    if lo is not None and value < lo:
        p.add(join(path, key), text, shown, f"set it to {'a positive integer' if lo > 0 else 'zero or more'}, "
              f"e.g. '{hint}'")
        return default
    return value


def boolean(raw: Mapping[str, str], key: str, path: str, p: Problems, *, default: bool = False,
            json_only: bool = False) -> bool:
    """A bool field: strconv.ParseBool's spellings, or with ``json_only`` only ``true`` and
    ``false`` (encoding/json; ``True`` is an error)."""
    text = raw.get(key)
    if text is None:
        return default
    if json_only and text not in ("true", "false"):
        p.add(join(path, key), text, "'true' or 'false'", "write 'true' or 'false' in lower case")
        return default
    if text not in _BOOLS:
        p.add(join(path, key), text, "a boolean ('true', 'false', '1', '0', 't', 'f' ...)", "write 'true' or 'false'")
        return default
    return _BOOLS[text]


def duration_s(raw: Mapping[str, str], key: str, path: str, p: Problems) -> float | None:
    """A time.Duration field in seconds: a Go duration (``30s``, ``1m30s``) or whole milliseconds;
    None when absent."""
    text = raw.get(key)
    if text is None:
        return None
    if _GO_DURATION.fullmatch(text):
        return sum(float(n) * _GO_UNIT_S[u] for n, u in re.findall(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)", text))
    if re.fullmatch(r"[0-9]+", text):
        return int(text) / 1000.0
    p.add(join(path, key), text, "a duration such as '30s' or '5m', or whole milliseconds such as '3000'",
          "write e.g. '3s'")
    return None


def enum(raw: Mapping[str, str], key: str, path: str, p: Problems, choices: tuple[str, ...],
         default: str | None) -> str | None:
    """An enum field (``default`` when absent)."""
    text = raw.get(key)
    if text is None:
        return default
    if text not in choices:
        guess = nearest(text, choices)
        p.add(join(path, key), text, "one of {" + ", ".join(map(repr, choices)) + "}",
              f"use {guess!r}" if guess else f"use one of {', '.join(map(repr, choices))}")
        return default
    return text


def string_list(raw: Mapping[str, str], key: str, separator: str = ",") -> tuple[str, ...] | None:
    """A ``[]string`` field: split on ``separator``, each element trimmed (None when absent)."""
    text = raw.get(key)
    return None if text is None else tuple(part.strip() for part in text.split(separator))


def string_map(raw: Mapping[str, str], key: str, path: str, p: Problems) -> dict[str, str]:
    """A ``map[string]string`` field: ``k=v,k2=v2``, each pair trimmed."""
    text = raw.get(key)
    out: dict[str, str] = {}
    for pair in (text.split(",") if text else ()):
        parts = pair.strip().split("=")
        if len(parts) != 2:
            p.add(join(path, key), text, "comma-separated key=value pairs", f"fix the pair {pair.strip()!r}")
            return {}
        out[parts[0].strip()] = parts[1].strip()
    return out


def auth_modes(raw: Mapping[str, str], path: str, p: Problems, has_authentication_ref: bool) -> tuple[str, ...]:
    """``authModes`` (or ``authMode``) of authentication.Config: every mode one of
    :data:`AUTH_MODES`, at most one of bearer/basic/oauth, ``method`` header or query; a mode's
    credentials must come from an authenticationRef (only ``apiKey`` may be written inline)."""
    key = "authModes" if "authModes" in raw else "authMode"
    modes = tuple(m for m in (string_list(raw, key) or ()) if m)
    bad = [m for m in modes if m not in AUTH_MODES]
    if bad:
        p.add(join(path, key), raw[key], "modes among {" + ", ".join(map(repr, AUTH_MODES)) + "}",
              f"remove {', '.join(map(repr, bad))}")
    if sum(m in _EXCLUSIVE_MODES for m in modes) > 1:
        p.add(join(path, key), raw[key], "only one of 'bearer', 'basic', 'oauth'", "keep one of them")
    enum(raw, "method", path, p, ("header", "query"), "header")
    for mode in modes:
        if mode in bad or has_authentication_ref or (mode == "apiKey" and raw.get("apiKey")):
            continue
        p.add(join(path, key), raw[key], f"an authenticationRef whose TriggerAuthentication holds {_MODE_NEEDS[mode]} "
              f"(needed by auth mode {mode!r})", "add authenticationRef naming that TriggerAuthentication")
    return modes


def milli_quantity(value: float) -> float:
    """The value as the HPA sees it: a quantity with milli precision (``%.3f``); NaN, infinite
    and negative values become 0 (KEDA's quantityFromFloat64)."""
    if math.isnan(value) or math.isinf(value) or value < 0:
        return 0.0
    return float(f"{value:.3f}")


def check_target(threshold: float | None, key: str, path: str, p: Problems) -> None:
    """A threshold whose milli-quantity is 0 (zero, negative, below 0.0005) gives the HPA a target
    the API server refuses ("must be positive"): record it. KEDA itself accepts the number.

    Source: kubernetes/kubernetes pkg/apis/autoscaling/validation/validation.go
    validateMetricTarget v1.28.0
    """
    if threshold is not None and milli_quantity(threshold) <= 0:
        p.add(join(path, key), f"{threshold:g}", "a number > 0.0005 (the HPA's metric target must be positive; "
              "KEDA sends it as a milli-quantity)", f"set {key} to the per-replica value to scale at, e.g. '10'")


T = TypeVar("T")


def parse(collect: Callable[[Any, str, Problems, bool], T | None], metadata: Any, *, path: str = "",
          source: str = "trigger metadata", has_authentication_ref: bool = False) -> T:
    """Run a trigger's ``collect_*_metadata`` on ``metadata`` and raise what it recorded.

    Raises:
        ConfigError: every invalid field, one line each (``source`` names where they came from).
    """
    p = Problems(source)
    meta = collect(metadata, path, p, has_authentication_ref)
    p.raise_if_any()
    assert meta is not None
    return meta
