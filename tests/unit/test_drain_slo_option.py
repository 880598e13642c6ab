"""``--drain-slo``: experiment 8's drain SLO, a run option that changes no run."""

from __future__ import annotations

import argparse

import pytest

from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.options import (
    OPTIONS_BY_DEST,
    parse_drain_slo,
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
    assert RunSettings.from_options({"drain_slo_s": 30.0}) == RunSettings.from_options({})


@pytest.mark.parametrize("slo, missed, verdict", [(3600.0, False, "pass"), (1.0, True, "fail")])
def test_lagscale_run_records_the_drain_slo_and_a_miss_is_a_failure(
        tmp_path, slo: float, missed: bool, verdict: str) -> None:
    from rich.console import Console

    from pytest_lagscale.experiment.cli import _check_drain_slo
    from pytest_lagscale.report import benchjson

    from .experiment.test_result import _result

    result = _result(tmp_path)
    drain = result.metrics["drain_time_s"]
    assert drain is not None and 1.0 < drain < 3600.0
    console = Console(record=True, width=120)
    assert _check_drain_slo(result, slo, console) is missed
    assert benchjson.load(result.benchmark_path)["assertions"] == [
        {"name": f"drain_time_s <= {slo:g}", "threshold": slo, "value": drain,
         "verdict": verdict}]
    assert console.export_text().strip() == (
        f"drain SLO {slo:g} s: {'missed' if missed else 'met'} (drain {drain:.1f} s)")


def test_lagscale_run_without_drain_slo_checks_nothing(tmp_path) -> None:
    from rich.console import Console

    from pytest_lagscale.experiment.cli import _check_drain_slo

    from .experiment.test_result import _result

    result = _result(tmp_path)
    assert _check_drain_slo(result, None, Console(record=True)) is False
    assert result.assertions == []
