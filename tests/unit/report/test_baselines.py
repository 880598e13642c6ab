"""Baselines from repeated runs: the median and tolerances from the spread
(``report/baselines.py``), and ``lagscale baseline update``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.report import benchjson
from pytest_lagscale.report.baselines import (MAX_GATED_TOLERANCE, Rule, catches_doubling,
                                              derive_baseline, metric_baseline,
                                              render_tolerances)
from pytest_lagscale.report.compare import compare_documents

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
SPIKE = GOLDEN / "20261123T012454Z-spike-ci" / "benchmark.json"
LOWER, HIGHER = "lower_is_better", "higher_is_better"


@pytest.mark.parametrize("name, values, direction, expected", [
    pytest.param("drain_time_s", [50.0, 60.0, 40.0], LOWER, (50.0, 0.4), id="margin-x-deviation"),
    pytest.param("drain_time_s", [50.0, 51.0, 50.0], LOWER, (50.0, 0.25), id="floor"),
    pytest.param("peak_lag_records", [10.0, 30.0, 20.0], LOWER, (20.0, 1.0),
                 id="not-gated-2x-may-exceed-1"),
    pytest.param("lost_records", [0.0, 0.0, 0.0], LOWER, (0.0, 0.0), id="exact-zero"),
    pytest.param("produced_records", [9.0, 9.0, 9.0], HIGHER, (9.0, 0.0), id="exact-equal"),
    pytest.param("duplicated_records", [0.0, 0.0, 12.0], LOWER, (12.0, 0.0),
                 id="exact-around-0-keeps-the-worst"),
    pytest.param("duplicated_records", [100.0, 120.0, 110.0], LOWER, (110.0, 0.25),
                 id="exact-that-varies-gets-a-spread"),
    pytest.param("scale_steps", [0.0, 0.0, 3.0], LOWER, (None, 0.0), id="median-0-not-gated"),
    pytest.param("direction_reversals", [0.0, 0.0, 0.0], LOWER, (None, 0.0),
                 id="all-0-not-gated"),
    pytest.param("max_dip", [0.4, 0.45, 0.5], LOWER, (None, 0.0), id="bimodal-not-gated"),
    pytest.param("actuation_s", [0.01, 0.01, 0.01], LOWER, (None, 0.0), id="not-gated"),
    pytest.param("join_s", [1.1, 1.6, 2.7], LOWER, (None, 0.0), id="join-bimodal-not-gated"),
    pytest.param("cold_start_s", [20.0, 21.0, 20.0], LOWER, (20.0, 1.0), id="wide-floor"),
    pytest.param("burst_load_average_max", [1.1, 1.2, 1.1], LOWER, (None, 0.0),
                 id="machine-load-not-gated"),
    pytest.param("reaction_time_s", [20.0, None, 22.0], LOWER, (None, 0.0),
                 id="unmeasured-once-not-gated"),
])
def test_metric_baseline(name, values, direction, expected) -> None:
    value, tolerance, spread = metric_baseline(name, values, direction, Rule(0.25, 2.0))
    assert (value, tolerance) == expected
    assert spread["n"] == len(values)


def test_a_gated_metric_is_capped_below_a_doubling_and_the_cap_recorded() -> None:
    value, tolerance, spread = metric_baseline("reaction_time_s", [10.0, 30.0, 16.0], LOWER,
                                               Rule(0.25, 2.0))
    assert (value, tolerance) == (16.0, MAX_GATED_TOLERANCE)
    assert spread["capped"] == 1.75
    assert spread["deviation"] == pytest.approx(14 / 16)


def test_the_default_rule_is_floor_half_margin_three() -> None:
    assert (Rule().floor, Rule().margin) == (0.5, 3.0)
    _, tolerance, _ = metric_baseline("drain_time_s", [50.0, 60.0, 40.0], LOWER)
    assert tolerance == 0.6


def test_rule_ranges_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"floor: -0.1 is outside \[0, 5\]"):
        Rule(floor=-0.1)
    with pytest.raises(ValueError, match=r"margin: 0.5 is outside \[1, 10\]"):
        Rule(margin=0.5)
    with pytest.raises(ValueError, match=r"count_slack: 11 is outside \[0, 10\] \(events\)"):
        Rule(count_slack=11)


def test_a_count_gets_the_slack_and_passes_one_extra_event_but_not_three() -> None:
    doc = benchjson.load(SPIKE)
    samples = [(SPIKE, _sample(doc, direction_reversals=1.0, scale_steps=6.0))
               for _ in range(3)]
    baseline = derive_baseline("spike-ci", samples)
    assert baseline["metrics"]["direction_reversals"]["slack"] == 2.0
    assert baseline["metrics"]["scale_steps"]["slack"] == 2.0
    assert "slack" not in baseline["metrics"]["reaction_time_s"]
    assert baseline["baseline"]["rule"]["count_slack"] == 2.0
    # 1 -> 3 reversals is +200 % against a 50 % tolerance: the slack of 2 events passes it
    assert compare_documents(baseline, _sample(doc, direction_reversals=3.0,
                                               scale_steps=6.0)).verdict == "pass"
    failed = compare_documents(baseline, _sample(doc, direction_reversals=4.0, scale_steps=6.0))
    assert [row.reason for row in failed.failures] == [
        "direction_reversals: 1 -> 4 count (+300.0%), worse than the 50.0% tolerance and the "
        "2 count slack (lower_is_better)"]
    # a doubling of 6 steps is 6 events worse: past both the 50 % and the slack
    assert not compare_documents(baseline, _sample(doc, direction_reversals=1.0,
                                                   scale_steps=12.0)).verdict == "pass"
    assert catches_doubling(baseline["metrics"]["scale_steps"])
    assert not catches_doubling(baseline["metrics"]["direction_reversals"])


def _sample(doc: dict, **values: float | None) -> dict:
    out = copy.deepcopy(doc)
    for name, value in values.items():
        out["metrics"][name]["value"] = value
    return out


def test_derive_baseline_is_a_benchmark_document_its_samples_pass() -> None:
    doc = benchjson.load(SPIKE)
    samples = [(Path(f"s{i}/benchmark.json"), _sample(doc, reaction_time_s=r, drain_time_s=d))
               for i, (r, d) in enumerate([(25.0, 50.0), (28.0, 60.0), (22.0, 52.0)])]
    base = derive_baseline("spike-ci", samples, Rule(0.25, 2.0))
    benchjson.upgrade(copy.deepcopy(base))          # a valid schema-1 document
    assert base["metrics"]["reaction_time_s"]["value"] == 25.0
    assert base["metrics"]["drain_time_s"] == {"value": 52.0, "unit": "s",
                                               "direction": LOWER, "tolerance": 0.35}
    assert [s["path"] for s in base["baseline"]["samples"]] == [
        "s0/benchmark.json", "s1/benchmark.json", "s2/benchmark.json"]
    assert base["baseline"]["spread"]["drain_time_s"]["max"] == 60.0
    for _, sample in samples:
        assert compare_documents(base, sample).verdict == "pass"
    doubled = _sample(doc, reaction_time_s=50.0, drain_time_s=104.0)
    failed = {row.metric for row in compare_documents(base, doubled).failures}
    assert {"reaction_time_s", "drain_time_s"} <= failed


def test_regate_ungates_what_the_rule_no_longer_gates_and_keeps_the_rest(tmp_path) -> None:
    from pytest_lagscale.report.baselines import NOT_GATED, regate

    doc = benchjson.load(SPIKE)
    samples = [(Path(f"s{i}/benchmark.json"), _sample(doc, reaction_time_s=r))
               for i, r in enumerate([25.0, 28.0, 22.0])]
    base = derive_baseline("spike-ci", samples)
    old = copy.deepcopy(base)       # as a baseline written before join_s was not gated
    old["metrics"]["join_s"].update(value=3.0, tolerance=1.6, slack=1.0)
    old["baseline"]["rule"]["not_gated"].remove("join_s")
    new, ungated = regate(old)
    assert ungated == ["join_s"]
    assert new["metrics"]["join_s"] == {"value": None, "unit": "s", "direction": LOWER,
                                        "tolerance": 0.0}
    assert new["baseline"]["spread"]["join_s"]["note"] == NOT_GATED["join_s"]
    assert new["baseline"]["rule"] == base["baseline"]["rule"]
    assert {k: v for k, v in new["metrics"].items() if k != "join_s"} == \
        {k: v for k, v in old["metrics"].items() if k != "join_s"}
    assert regate(new) == (new, [])  # idempotent
    with pytest.raises(ConfigError, match="no 'baseline' section"):
        regate(doc)

    folder = tmp_path / "baselines"
    folder.mkdir()
    (folder / "spike-ci.json").write_text(json.dumps(old))
    result = CliRunner().invoke(app, ["baseline", "regate", str(folder)])
    assert result.exit_code == 0, result.output
    assert "spike-ci: no longer gates join_s" in result.output
    assert benchjson.load(folder / "spike-ci.json")["metrics"]["join_s"]["value"] is None
    assert (folder / "TOLERANCES.md").read_text() == render_tolerances(
        {"spike-ci": benchjson.load(folder / "spike-ci.json")})
    empty = CliRunner().invoke(app, ["baseline", "regate", str(tmp_path / "none")])
    assert empty.exit_code == 2 and "holds no baseline" in empty.output


def test_samples_with_different_inputs_are_refused() -> None:
    doc = benchjson.load(SPIKE)
    other = copy.deepcopy(doc)
    other["inputs"]["partitions"] = 16
    with pytest.raises(ConfigError, match=r"spike-ci: the samples' inputs differ in "
                                          r"\['partitions'\]"):
        derive_baseline("spike-ci", [(SPIKE, doc), (SPIKE, other)])


def test_a_setting_not_given_matches_a_run_recorded_before_the_option_existed() -> None:
    doc = benchjson.load(SPIKE)
    older, newer = copy.deepcopy(doc), copy.deepcopy(doc)
    older["inputs"]["settings"] = {"profile": "spike"}
    newer["inputs"]["settings"] = {"profile": "spike", "group_type": None}
    base = derive_baseline("spike-ci", [(SPIKE, older), (SPIKE, newer)])
    assert base["baseline"]["spread"]["peak_lag_records"]["n"] == 2
    newer["inputs"]["settings"]["group_type"] = "share"
    with pytest.raises(ConfigError, match=r"spike-ci: the samples' inputs differ in "
                                          r"\['settings'\]"):
        derive_baseline("spike-ci", [(SPIKE, older), (SPIKE, newer)])


def test_catches_doubling_by_direction() -> None:
    assert catches_doubling({"value": 1.0, "direction": LOWER, "tolerance": 0.9})
    assert not catches_doubling({"value": 1.0, "direction": LOWER, "tolerance": 1.0})
    assert not catches_doubling({"value": 1.0, "direction": HIGHER, "tolerance": 0.5})
    assert not catches_doubling({"value": None, "direction": LOWER, "tolerance": 0.1})


def test_render_tolerances_lists_gated_rows_and_unmeasured_metrics() -> None:
    doc = benchjson.load(SPIKE)
    unmeasured = _sample(doc, peak_lag_records=None)
    base = derive_baseline("spike-ci", [(SPIKE, doc), (SPIKE, unmeasured)])
    text = render_tolerances({"spike-ci": base})
    assert "## spike-ci" in text
    assert "| reaction_time_s **(2x)** | s | lower |" in text
    assert "Not gated, not measured in every sample: " in text and "`peak_lag_records`" in text
    assert "| max_dip | fraction | lower |" in text and "shown, not gated |" in text
    assert "| actuation_s | s | lower |" in text


# -- lagscale baseline update -------------------------------------------------------------------
def _update(*args: str | Path):
    return CliRunner().invoke(app, ["baseline", "update", *map(str, args)])


def _runs_folder(tmp_path: Path, drains: list[float]) -> Path:
    folder = tmp_path / "lagscale-runs"
    doc = benchjson.load(SPIKE)
    for i, drain in enumerate(drains):
        run = folder / f"2026010{i}T000000Z-spike-ci"
        run.mkdir(parents=True)
        sample = _sample(doc, drain_time_s=drain)
        sample["datetime"] = f"2026-01-0{i + 1}T00:00:00+00:00"
        (run / "benchmark.json").write_text(json.dumps(sample))
    return folder


def test_update_writes_a_baseline_per_label_and_the_tolerance_table(tmp_path: Path) -> None:
    out = tmp_path / "baselines"
    result = _update(_runs_folder(tmp_path, [50.0, 55.0, 45.0]), "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["TOLERANCES.md", "spike-ci.json"]
    base = benchjson.load(out / "spike-ci.json")
    assert base["metrics"]["drain_time_s"]["tolerance"] == 0.5   # the default floor
    assert base["baseline"]["rule"]["floor"] == 0.5 and base["baseline"]["rule"]["margin"] == 3
    assert len(base["baseline"]["samples"]) == 3
    assert f"spike-ci: 3 sample(s) -> {out / 'spike-ci.json'}" in result.output
    assert (out / "TOLERANCES.md").read_text() == render_tolerances({"spike-ci": base})


def test_update_warns_below_three_samples(tmp_path: Path) -> None:
    result = _update(_runs_folder(tmp_path, [50.0]), "--out", tmp_path / "b")
    assert result.exit_code == 0
    assert "warning: spike-ci: 1 sample(s); tolerances from fewer than 3 runs" in result.output


@pytest.mark.parametrize("args, message", [
    (["--floor", "7"], "error: --floor: 7.0 is outside [0, 5]"),
    (["--margin", "0"], "error: --margin: 0.0 is outside [1, 10]"),
    (["--count-slack", "-1"], "error: --count-slack: -1.0 is outside [0, 10] (events)"),
    (["--label", "nope"], "error: --label: ['nope'] not among the samples' labels"),
])
def test_update_bad_options_exit_2_and_write_nothing(tmp_path: Path, args, message) -> None:
    out = tmp_path / "b"
    result = _update(_runs_folder(tmp_path, [50.0]), "--out", out, *args)
    assert result.exit_code == 2
    assert message in result.output
    assert not out.exists()


def test_update_a_missing_sample_exits_2(tmp_path: Path) -> None:
    result = _update(tmp_path / "nope", "--out", tmp_path / "b")
    assert result.exit_code == 2
    assert f"error: SAMPLE: {str(tmp_path / 'nope')!r} does not exist" in result.output


def test_a_build_up_rate_whose_reaction_some_samples_missed_is_not_gated() -> None:
    doc = benchjson.load(SPIKE)
    values = [(20.0, 1600.0), (None, 120.0), (22.0, 1650.0)]
    samples = [(SPIKE, _sample(doc, reaction_time_s=r, lag_build_up_rate_per_s=b))
               for r, b in values]
    base = derive_baseline("spike-ci", samples)
    assert base["metrics"]["lag_build_up_rate_per_s"]["value"] is None
    assert base["baseline"]["spread"]["reaction_time_s"]["measured"] == 2
    assert base["baseline"]["spread"]["lag_build_up_rate_per_s"]["note"] == (
        "its window ends at the event of reaction_time_s, which was measured in 2 of 3 "
        "samples (the runs reach the spike on different paths): shown, not gated")
    # every sample measured the reaction: the rate is gated as usual
    steady = derive_baseline("spike-ci", [(SPIKE, _sample(doc, reaction_time_s=20.0,
                                                          lag_build_up_rate_per_s=b))
                                          for b in (1600.0, 1650.0, 1700.0)])
    assert steady["metrics"]["lag_build_up_rate_per_s"]["value"] == 1650.0


def test_where_a_run_was_written_is_not_its_setup() -> None:
    """Two sessions of one test: the output directory and the temporary directory of the
    Deployment the test wrote differ, the setup does not; another Deployment file does."""
    doc = benchjson.load(SPIKE)
    one, two = copy.deepcopy(doc), copy.deepcopy(doc)
    one["inputs"]["settings"] = {"out_dir": "/tmp/samples/1",
                                 "deployment": "/tmp/pytest-7/t0/consumer-ci-log.yaml"}
    two["inputs"]["settings"] = {"out_dir": "lagscale-runs",
                                 "deployment": "/tmp/pytest-8/t0/consumer-ci-log.yaml"}
    base = derive_baseline("spike-ci", [(SPIKE, one), (SPIKE, two)])
    assert base["baseline"]["spread"]["peak_lag_records"]["n"] == 2
    two["inputs"]["settings"]["deployment"] = "/tmp/pytest-8/t0/consumer-ci.yaml"
    with pytest.raises(ConfigError, match=r"inputs differ in \['settings'\]"):
        derive_baseline("spike-ci", [(SPIKE, one), (SPIKE, two)])


def test_a_recorded_deployment_digest_compares_the_deployments_by_their_bytes() -> None:
    """Two Deployment files of one name with different bytes are two setups; one Deployment
    written under two names is one."""
    doc = benchjson.load(SPIKE)
    one, two = copy.deepcopy(doc), copy.deepcopy(doc)
    one["inputs"]["settings"] = {"deployment": "/tmp/pytest-7/t0/consumer-ci.yaml"}
    two["inputs"]["settings"] = {"deployment": "/tmp/pytest-8/t1/renamed.yaml"}
    one["inputs"]["deployment_sha256"] = two["inputs"]["deployment_sha256"] = "ab" * 32
    base = derive_baseline("spike-ci", [(SPIKE, one), (SPIKE, two)])
    assert base["baseline"]["spread"]["peak_lag_records"]["n"] == 2
    two["inputs"]["settings"] = {"deployment": "/tmp/pytest-8/t0/consumer-ci.yaml"}
    two["inputs"]["deployment_sha256"] = "cd" * 32
    with pytest.raises(ConfigError, match=r"inputs differ in \['deployment_sha256'\]"):
        derive_baseline("spike-ci", [(SPIKE, one), (SPIKE, two)])


def test_a_run_on_the_bundled_deployment_matches_one_recorded_before_the_digest() -> None:
    doc = benchjson.load(SPIKE)
    older, newer = copy.deepcopy(doc), copy.deepcopy(doc)
    older["inputs"].pop("deployment_sha256", None)
    newer["inputs"]["deployment_sha256"] = None
    base = derive_baseline("spike-ci", [(SPIKE, older), (SPIKE, newer)])
    assert base["baseline"]["spread"]["peak_lag_records"]["n"] == 2


def test_samples_recorded_before_the_digest_and_after_compare_by_file_name() -> None:
    doc = benchjson.load(SPIKE)
    older, newer = copy.deepcopy(doc), copy.deepcopy(doc)
    older["inputs"]["settings"] = {"deployment": "/tmp/pytest-7/t0/consumer-ci.yaml"}
    older["inputs"].pop("deployment_sha256", None)
    newer["inputs"]["settings"] = {"deployment": "/tmp/pytest-9/t0/consumer-ci.yaml"}
    newer["inputs"]["deployment_sha256"] = "ab" * 32
    base = derive_baseline("spike-ci", [(SPIKE, older), (SPIKE, newer)])
    assert base["baseline"]["spread"]["peak_lag_records"]["n"] == 2
    newer["inputs"]["settings"] = {"deployment": "/tmp/pytest-9/t0/other.yaml"}
    with pytest.raises(ConfigError, match=r"inputs differ in \['settings'\]"):
        derive_baseline("spike-ci", [(SPIKE, older), (SPIKE, newer)])
