"""KEDA's typed trigger-metadata rules (typed_config.go v2.20.2), one case per rule."""

from __future__ import annotations

import pytest

from pytest_lagscale.config._problems import Problems
from pytest_lagscale.config.trigger_metadata import typed as tm


def read(reader, text: str, **kwargs):  # noqa: ANN001, ANN201 - a test helper over every reader
    p = Problems("t")
    value = reader({"k": text}, "k", "", p, **kwargs)
    return value, p.lines


@pytest.mark.parametrize(("text", "value"), [
    pytest.param("10", 10.0, id="typed_config-float64-json-integer"),
    pytest.param("-0.5", -0.5, id="typed_config-float64-json-negative-fraction"),
    pytest.param("1e3", 1000.0, id="typed_config-float64-json-exponent"),
    pytest.param("+1", None, id="typed_config-float64-no-plus-sign"),
    pytest.param(".5", None, id="typed_config-float64-no-leading-dot"),
    pytest.param("1.", None, id="typed_config-float64-no-trailing-dot"),
    pytest.param("01", None, id="typed_config-float64-no-leading-zero"),
    pytest.param("NaN", None, id="typed_config-float64-no-nan"),
])
def test_float64_is_a_json_number(text: str, value: float | None) -> None:
    parsed, lines = read(tm.float64, text)
    assert (parsed, bool(lines)) == (value, value is None)


@pytest.mark.parametrize(("text", "value"), [
    pytest.param("300", 300, id="typed_config-int64"),
    pytest.param("-5", -5, id="typed_config-int64-negative"),
    pytest.param("1e3", None, id="typed_config-int64-no-exponent"),
    pytest.param("60.0", None, id="typed_config-int64-no-fraction"),
])
def test_int64_is_a_json_integer(text: str, value: int | None) -> None:
    parsed, lines = read(tm.int64, text, default=-1)
    assert (parsed if not lines else None) == value


@pytest.mark.parametrize(("text", "value"), [
    *[pytest.param(t, True, id=f"typed_config-parsebool-{t}") for t in ("1", "t", "T", "TRUE", "true", "True")],
    *[pytest.param(t, False, id=f"typed_config-parsebool-{t}") for t in ("0", "f", "F", "FALSE", "false", "False")],
    pytest.param("yes", None, id="typed_config-parsebool-yes-is-an-error"),
    pytest.param("tRUE", None, id="typed_config-parsebool-mixed-case-is-an-error"),
])
def test_bool_is_strconv_parsebool(text: str, value: bool | None) -> None:
    parsed, lines = read(tm.boolean, text, default=False)
    assert (parsed if not lines else None) == value


@pytest.mark.parametrize(("text", "seconds"), [
    pytest.param("30s", 30.0, id="typed_config-duration-go"),
    pytest.param("1m30s", 90.0, id="typed_config-duration-go-compound"),
    pytest.param("250ms", 0.25, id="typed_config-duration-go-ms"),
    pytest.param("3000", 3.0, id="typed_config-duration-milliseconds"),
    pytest.param("-1s", None, id="typed_config-duration-not-negative"),
    pytest.param("5 minutes", None, id="typed_config-duration-not-words"),
])
def test_duration(text: str, seconds: float | None) -> None:
    parsed, lines = read(tm.duration_s, text)
    assert (parsed if not lines else None) == seconds


def test_values_are_trimmed_and_empty_means_absent() -> None:
    p = Problems("t")
    assert tm.strings({"query": "  up  ", "threshold": "   ", "n": 5}, "m", p, ("query", "threshold", "n")) == {
        "query": "up"}
    assert p.lines == ["'m.n': got 5, expected a string (KEDA trigger metadata values are strings) in t; quote it: '5'"]


def test_string_list_and_map() -> None:
    assert tm.string_list({"d": "Cluster Name ; Consumer Group"}, "d", ";") == ("Cluster Name", "Consumer Group")
    p = Problems("t")
    assert tm.string_map({"h": "X-Org = 1, X-Team=a"}, "h", "", p) == {"X-Org": "1", "X-Team": "a"}
    assert tm.string_map({"h": "X-Org"}, "h", "", p) == {} and len(p.lines) == 1


@pytest.mark.parametrize(("raw", "has_ref", "problems"), [
    pytest.param({"authModes": "bearer"}, True, 0, id="authentication-bearer-with-ref"),
    pytest.param({"authModes": "bearer"}, False, 1, id="authentication-bearer-needs-ref"),
    pytest.param({"authModes": "apiKey", "apiKey": "inline"}, False, 0, id="authentication-apikey-inline"),
    pytest.param({"authModes": "basic,bearer"}, True, 1, id="authentication-exclusive-set"),
    pytest.param({"authMode": "kerberos"}, True, 1, id="authentication-enum"),
    pytest.param({"authModes": "apiKey", "apiKey": "k", "method": "cookie"}, False, 1, id="authentication-method-enum"),
])
def test_auth_modes(raw: dict, has_ref: bool, problems: int) -> None:
    p = Problems("t")
    tm.auth_modes(raw, "", p, has_ref)
    assert len(p.lines) == problems, p.lines
