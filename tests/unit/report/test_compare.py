from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import RegressionError
from pytest_lagscale.report.benchjson import load
from pytest_lagscale.report.compare import (AbsoluteCheck, RegressionCheck, RelativeCheck, Row,
                                            check_regressions, compare_documents,
                                            render_comparison)


@pytest.mark.parametrize("check, baseline, current, expected", [
    pytest.param(RelativeCheck("reaction_time_s", "lower_is_better", 0.1, "s"), 60.0, 66.0,
                 None, id="relative-lower-at-tolerance"),
    pytest.param(RelativeCheck("reaction_time_s", "lower_is_better", 0.1, "s"), 60.0, 80.0,
                 "reaction_time_s: 60 -> 80 s (+33.3%), worse than the 10.0% tolerance "
                 "(lower_is_better)", id="relative-lower-regressed"),
    pytest.param(RelativeCheck("throughput", "higher_is_better", 0.05), 100.0, 90.0,
                 "throughput: 100 -> 90 (-10.0%), worse than the 5.0% tolerance "
                 "(higher_is_better)", id="relative-higher-regressed"),
    pytest.param(RelativeCheck("throughput", "higher_is_better", 0.05), 100.0, 200.0,
                 None, id="relative-higher-improved"),
    pytest.param(RelativeCheck("direction_reversals", "lower_is_better", 0.5, "count"), 0.0,
                 1.0, "direction_reversals: 0 -> 1 count (from 0), worse than the 50.0% "
                 "tolerance (lower_is_better)", id="relative-zero-baseline"),
    pytest.param(AbsoluteCheck("max_dip", "lower_is_better", 0.05, "fraction"), 0.10, 0.2,
                 "max_dip: 0.1 -> 0.2 fraction, worse by more than 0.05 fraction "
                 "(lower_is_better)", id="absolute-regressed"),
    pytest.param(AbsoluteCheck("max_dip", "lower_is_better", 0.05), 0.10, 0.14, None,
                 id="absolute-within"),
])
def test_check_fails(check: RegressionCheck, baseline: float, current: float,
                     expected: str | None) -> None:
    assert check.fails(baseline, current) == expected


def test_compare_golden_documents(golden: Path) -> None:
    comparison = compare_documents(load(golden / "baseline_v1.json"),
                                   load(golden / "current_v1.json"))
    assert comparison.verdict == "fail"
    assert comparison.warnings == ()
    assert {row.metric: row.status for row in comparison.rows} == {
        "reaction_time_s": "regression", "drain_time_s": "improvement",
        "max_dip": "within_tolerance", "baseline_at_min_fraction": "within_tolerance",
        "replica_seconds_ratio": "missing", "direction_reversals": "new"}
    assert [row.reason for row in comparison.failures] == [
        "reaction_time_s: 60 -> 80 s (+33.3%), worse than the 10.0% tolerance "
        "(lower_is_better)",
        "replica_seconds_ratio: absent from the current run (baseline 1.4 ratio)"]
    rows = {row.metric: row for row in comparison.rows}
    assert rows["reaction_time_s"] == Row("reaction_time_s", "s", "lower_is_better", 60.0, 80.0,
                                          pytest.approx(1 / 3), "regression",
                                          rows["reaction_time_s"].reason)


def test_compare_missing_may_pass(golden: Path) -> None:
    checks = {"reaction_time_s": AbsoluteCheck("reaction_time_s", "lower_is_better", 30.0)}
    comparison = compare_documents(load(golden / "baseline_v1.json"),
                                   load(golden / "current_v1.json"), checks,
                                   missing_fails=False)
    assert (comparison.verdict, comparison.failures) == ("pass", ())


def test_check_regressions_raises_with_one_line_per_failure(golden: Path) -> None:
    with pytest.raises(RegressionError) as info:
        check_regressions(load(golden / "baseline_v1.json"), load(golden / "current_v1.json"))
    assert str(info.value) == (
        "2 metric(s) regressed past the baseline:\n"
        "  reaction_time_s: 60 -> 80 s (+33.3%), worse than the 10.0% tolerance "
        "(lower_is_better)\n"
        "  replica_seconds_ratio: absent from the current run (baseline 1.4 ratio)")


def test_check_regressions_passes_against_itself_and_warns_on_machine(golden: Path) -> None:
    baseline = load(golden / "baseline_v1.json")
    other = {**baseline, "machine_info": {"node": "laptop"}}
    with pytest.warns(UserWarning, match="machine_info: the current run's machine differs"):
        comparison = check_regressions(baseline, other)
    assert comparison.verdict == "pass"
    assert {row.status for row in comparison.rows} == {"within_tolerance"}


def test_render_comparison(golden: Path) -> None:
    from rich.console import Console

    comparison = compare_documents(load(golden / "baseline_v1.json"),
                                   load(golden / "current_v1.json"))
    console = Console(width=120, record=True)
    console.print(render_comparison(comparison))
    text = console.export_text()
    assert "lagscale vs baseline: fail" in text
    assert "reaction_time_s" in text and "+33.3%" in text and "regression" in text
    assert text.count("\n") >= 8


def _lt50_baseline(reaction_measured: int) -> dict:
    """A baseline of 3 samples whose reaction was measured in ``reaction_measured`` of them,
    gating a build-up rate of 117 records/s at 95 % (spike-ci-lt50's, 2026-11-23)."""
    def entry(value, unit, tolerance):
        return {"value": value, "unit": unit, "direction": "lower_is_better",
                "tolerance": tolerance}
    return {"metrics": {"reaction_time_s": entry(None, "s", 0.0),
                        "lag_build_up_rate_per_s": entry(117.4, "records/s", 0.95)},
            "baseline": {"spread": {"reaction_time_s": {"n": 3,
                                                        "measured": reaction_measured}}}}


def _run(reaction_s: float | None, build_up_rate: float) -> dict:
    return {"metrics": {
        "reaction_time_s": {"value": reaction_s, "unit": "s", "direction": "lower_is_better"},
        "lag_build_up_rate_per_s": {"value": build_up_rate, "unit": "records/s",
                                    "direction": "lower_is_better"}}}


def test_a_build_up_rate_over_another_window_than_the_baselines_is_not_compared() -> None:
    # the CI of 2026-11-25: the samples never measured a reaction (the group was already
    # scaling at the spike); this run met the spike at its minimum and reacted in 15.7 s
    comparison = compare_documents(_lt50_baseline(0), _run(15.7, 646.1))
    assert comparison.verdict == "pass"
    row = next(r for r in comparison.rows if r.metric == "lag_build_up_rate_per_s")
    assert (row.status, row.reason, row.current) == ("other_window", None, 646.1)


def test_a_build_up_rate_over_the_same_window_is_still_gated() -> None:
    failed = compare_documents(_lt50_baseline(0), _run(None, 646.1))
    assert [row.metric for row in failed.failures] == ["lag_build_up_rate_per_s"]
    # a baseline that measured the reaction in every sample, a run that did too
    base = _lt50_baseline(3)
    base["metrics"]["reaction_time_s"].update(value=20.0, tolerance=0.9)
    failed = compare_documents(base, _run(21.0, 646.1))
    assert [row.metric for row in failed.failures] == ["lag_build_up_rate_per_s"]
    # a plain run document as the baseline: its own value says whether it measured the event
    plain = _run(None, 117.4)
    plain["metrics"]["lag_build_up_rate_per_s"]["tolerance"] = 0.95
    assert compare_documents(plain, _run(15.7, 646.1)).verdict == "pass"
    assert compare_documents(plain, _run(None, 646.1)).verdict == "fail"
