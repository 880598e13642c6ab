"""``--drain-slo``: experiment 8's drain SLO, a run option that changes no run."""

from __future__ import annotations

import argparse

import pytest

from pytest_lagscale.options import (
    OPTIONS_BY_DEST,
    parse_drain_slo,
    settings_from_options,
)


def test_drain_slo_parses_seconds_in_range() -> None:
    assert parse_drain_slo("60") == 60.0 and parse_drain_slo(" 1.5 ") == 1.5


@pytest.mark.parametrize("text, message", [
    ("0", "--drain-slo: 0.0 is out of range; allowed: seconds in [1, 3600]"),
    ("3601", "--drain-slo: 3601.0 is out of range; allowed: seconds in [1, 3600]"),
    ("soon", "--drain-slo: 'soon' is not a number; allowed: seconds in [1, 3600]"),
])
def test_drain_slo_rejects_naming_the_value_and_range(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse_drain_slo(text)
    assert str(info.value) == message


def test_drain_slo_is_no_run_setting() -> None:
    assert OPTIONS_BY_DEST["drain_slo_s"].field is None
    assert settings_from_options({"drain_slo_s": 30.0}) == settings_from_options({})
