"""``lagscale tune``'s SLOs: syntax, and holding at the draws' 95th percentile."""

from __future__ import annotations

import math

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.tune.slo import Slo, parse_slo, parse_slos


@pytest.mark.parametrize(("text", "slo"), [
    pytest.param("drain_time_s<=60", Slo("drain_time_s", "<=", 60.0), id="le"),
    pytest.param(" peak_lag_records < 5e4 ", Slo("peak_lag_records", "<", 50000.0),
                 id="lt-spaces-exponent"),
    pytest.param("baseline_at_min_fraction>=0.9", Slo("baseline_at_min_fraction", ">=", 0.9),
                 id="ge"),
])
def test_slo_forms(text: str, slo: Slo) -> None:
    assert parse_slo(text) == (slo, [])


@pytest.mark.parametrize(("text", "problem"), [
    pytest.param("drian_time_s<=60", "--slo: got metric 'drian_time_s' in 'drian_time_s<=60', "
                 "expected one of ", id="unknown-metric"),
    pytest.param("drain_time_s<=soon", "--slo: got value 'soon' in 'drain_time_s<=soon', "
                 "expected a finite number in the metric's unit; write e.g. 'drain_time_s<=60'",
                 id="not-a-number"),
    pytest.param("drain_time_s<=inf", "--slo: got value 'inf' in 'drain_time_s<=inf', "
                 "expected a finite number", id="infinite"),
    pytest.param("drain_time_s=60", "--slo: got 'drain_time_s=60', expected METRIC<=VALUE (or "
                 "<, >=, >) with METRIC a name of analyze.METRICS; write e.g. "
                 "'drain_time_s<=60'", id="no-comparison"),
])
def test_bad_slo_names_the_option_value_and_allowed(text: str, problem: str) -> None:
    slo, problems = parse_slo(text)
    assert slo is None and len(problems) == 1 and problems[0].startswith(problem)


def test_unknown_metric_lists_analyze_metrics_and_suggests_the_nearest() -> None:
    from pytest_lagscale.analyze import METRICS

    (problem,) = parse_slo("drian_time_s<=60")[1]
    assert ", ".join(METRICS) in problem
    assert problem.endswith("; use 'drain_time_s'")


def test_parse_slos_reports_all_problems_and_repeats() -> None:
    with pytest.raises(ConfigError) as info:
        parse_slos(["drain_time_s<=60", "drain_time_s<=30", "x<1"])
    assert info.value.problems[0] == (
        "--slo: got a second upper bound on 'drain_time_s' ('drain_time_s<=30'), expected one "
        "per metric and direction; keep the tighter one")
    assert info.value.problems[1].startswith("--slo: got metric 'x' in 'x<1'")
    with pytest.raises(ConfigError) as info:
        parse_slos([])
    assert info.value.problems == ["--slo: got none, expected at least one METRIC<=VALUE; give "
                                   "e.g. --slo 'drain_time_s<=60'"]
    assert parse_slos(["drain_time_s<=60", "drain_time_s>=10"]) == (
        Slo("drain_time_s", "<=", 60.0), Slo("drain_time_s", ">=", 10.0))


def test_an_upper_bound_holds_when_95_percent_of_draws_meet_it() -> None:
    slo = Slo("drain_time_s", "<=", 60.0)
    # 30 draws: the 29th smallest must meet it (one draw may miss)
    one_miss = [50.0] * 29 + [90.0]
    two_miss = [50.0] * 28 + [90.0, 95.0]
    assert slo.bound(one_miss) == 50.0 and slo.holds(one_miss)
    assert slo.bound(two_miss) == 90.0 and not slo.holds(two_miss)
    # 10 draws: every draw must meet it
    assert not slo.holds([50.0] * 9 + [61.0])
    assert slo.holds([60.0] * 10)
    assert Slo("drain_time_s", "<", 60.0).holds([60.0] * 10) is False


def test_an_unmeasured_draw_counts_as_the_worst() -> None:
    slo = Slo("drain_time_s", "<=", 60.0)
    assert slo.holds([50.0] * 29 + [None])
    assert slo.bound([50.0] * 28 + [None, None]) is None
    assert not slo.holds([50.0] * 28 + [None, None])
    assert slo.excess([50.0] * 28 + [None, None]) == math.inf
    assert not slo.holds([])


def test_a_lower_bound_is_held_at_the_5th_percentile() -> None:
    slo = Slo("baseline_at_min_fraction", ">=", 0.9)
    values = [0.95] * 29 + [0.5]
    assert slo.bound(values) == 0.95 and slo.holds(values)
    assert slo.bound([0.95] * 28 + [0.5, None]) == 0.5
    assert slo.excess([0.95] * 28 + [0.5, 0.5]) == pytest.approx(0.4 / 0.9)
    assert slo.text() == "baseline_at_min_fraction>=0.9"
