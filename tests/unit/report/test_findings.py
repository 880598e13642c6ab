"""The findings report's model on the committed golden runs (tests/fixtures/golden: real ci
runs of experiments 1, 2, 3, 4 and 6): attribution, sections, recommendations, extractors."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.report.findings import (EXPERIMENTS, RunDoc, build_findings,
                                             experiments_of, holds_for, load_runs)
from pytest_lagscale.report.findings_extract import EXTRACTORS, RECOMMENDATION_ORDER

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
RUN_DIRS = sorted(p for p in GOLDEN.iterdir() if p.is_dir())


def _runs() -> list[RunDoc]:
    return load_runs(RUN_DIRS)


def _by_label(runs: list[RunDoc], label: str) -> RunDoc:
    return next(run for run in runs if run.label == label)


@pytest.mark.parametrize("label, expected", [
    ("spike-ci", {1, 2, 6}),
    ("spike-ci-hpa-cpu-ci", {1}),
    ("rebalance-ci-scaledobject-rebalance-ci-range", {3}),
    ("rebalance-ci-scaledobject-rebalance-ci-cooperative-sticky", {3}),
    ("ceiling-ci-scaledobject-ceiling-idle-ci", {4}),
    ("ceiling-ci-scaledobject-ceiling-ci", {4}),
    ("spike-ci-sigkill", {6}),
])
def test_each_golden_run_is_placed_in_its_experiments(label: str, expected: set[int]) -> None:
    assert experiments_of(_by_label(_runs(), label)) == expected


def test_runs_of_no_experiment_are_listed_as_unplaced() -> None:
    runs = _runs()
    sigkill = _by_label(runs, "spike-ci-sigkill")
    doc = copy.deepcopy(dict(sigkill.doc))
    doc["run"]["label"] = "spike-ci-arrow"
    findings = build_findings([*runs, RunDoc(sigkill.path, doc)])
    assert [run.label for run in findings.unplaced] == ["spike-ci-arrow"]
    assert build_findings(runs).unplaced == []


def test_recorded_marker_numbers_replace_the_label_guess() -> None:
    run = _by_label(_runs(), "spike-ci")
    doc = copy.deepcopy(dict(run.doc))
    doc["experiment"]["numbers"] = [8]
    assert experiments_of(RunDoc(run.path, doc)) == {1, 8}  # signal record + the marker
    doc["experiment"] = {"numbers": [2]}
    assert experiments_of(RunDoc(run.path, doc)) == {2}


def test_sections_one_to_eleven_with_not_run_for_missing_experiments() -> None:
    findings = build_findings(_runs())
    assert [s.number for s in findings.sections] == list(EXPERIMENTS)
    assert {s.number for s in findings.sections if not s.ran} == {5, 7, 8, 9, 10, 11}
    for section in findings.sections:
        if section.ran:
            assert section.figures and section.conclusion, section.number
            assert all(run.images for run in section.runs), section.number
        else:
            assert section.conclusion.startswith("Not run")


def test_recommendations_come_first_in_order_with_their_inputs() -> None:
    recs = build_findings(_runs()).recommendations
    assert [(r.setting, r.experiment) for r in recs] == list(RECOMMENDATION_ORDER)
    by = {r.setting: r for r in recs}
    assert by["maxReplicaCount"].value == "4 (= P)"
    assert by["rebalance protocol"].value == "range"
    assert by["scaling signal"].value == "lag"
    assert by["lagThreshold"].value == by["scale-down windows"].value == "not determined"
    assert "profile ceiling-ci; engine spark; scale ci; 2 CPUs" in by["maxReplicaCount"].holds_for
    assert "kafka 4.3.1" in by["maxReplicaCount"].holds_for


def test_headline_verdicts_follow_the_numbers() -> None:
    sections = {s.number: s for s in build_findings(_runs()).sections}
    exp2 = {f.name: f for f in sections[2].figures}
    assert exp2["reaction time (< 90 s)"].value == "27.9 s"
    assert exp2["reaction time (< 90 s)"].verdict == "pass"
    exp3 = {f.name.split(":")[0]: f for f in sections[3].figures}
    assert exp3["cooperative-sticky-static"].verdict == "fail"  # max dip 25.6 % > 20 %
    assert exp3["range"].verdict is None  # eager is reported, not judged
    assert sections[6].conclusion == (
        "Scale-down with graceful drain lost 0 and duplicated 0 of 210,000 records; with "
        "SIGKILL on scale-down lost 0 and duplicated 0 of 210,000 records.")


def test_conclusion_and_recommendation_change_with_the_numbers() -> None:
    runs = _runs()
    idle = _by_label(runs, "ceiling-ci-scaledobject-ceiling-idle-ci")
    doc = copy.deepcopy(dict(idle.doc))
    doc["experiment"]["ceiling"]["throughput_change"] = 0.31
    findings = build_findings([RunDoc(idle.path, doc)])
    rec = findings.recommendations[0]
    assert rec.value == "above P (4): the surplus added 31.0 %"
    assert findings.sections[3].conclusion.endswith("they did add throughput.")
    throughput = [f for f in findings.sections[3].figures if f.name.startswith("throughput")]
    assert throughput[0].verdict == "fail"


@pytest.mark.parametrize("number", sorted(EXTRACTORS))
def test_every_extractor_tolerates_a_document_without_its_keys(number: int) -> None:
    extract = EXTRACTORS[number]([RunDoc(Path("/nowhere/benchmark.json"), {})])
    assert extract.conclusion
    assert all(f.verdict is None for f in extract.figures)


FLAPPING = {
    "short_window": {"flips": 3, "direction_reversals": 4.0, "rebalances": 9,
                     "replica_seconds": 900.0, "replica_seconds_ratio": 1.4},
    "hysteresis": {"flips": 0, "direction_reversals": 0.0, "rebalances": 4,
                   "replica_seconds": 1100.0, "replica_seconds_ratio": 1.7,
                   "drain_after_last_burst_s": 35.0, "drain_bound_s": 60.0},
    "hysteresis_replica_seconds_over_short_window": 1.22,
    "recommendation": {"scaleDown.stabilizationWindowSeconds": 120, "lagThreshold": 500,
                       "evidence": "window > the burst period: 0 flips vs 3"}}
SWEEP = {
    "drain_slo_s": 60.0, "by_threshold": {"250": "drain 40 s, SLO met",
                                          "500": "drain 52 s, SLO met",
                                          "4000": "drain 95 s, SLO missed"},
    "values": [{"lag_threshold": 250, "slo_met": True}, {"lag_threshold": 500, "slo_met": True},
               {"lag_threshold": 4000, "slo_met": False}],
    "recommendation": {"lag_threshold": 500, "drain_slo_s": 60.0,
                       "rule_of_thumb": {"lag_threshold": 18000},
                       "dead_zone": {"why": "not possible at P = 8"},
                       "evidence": "lagThreshold 500 is the largest swept value draining"}}
PARTITIONS = {
    "change": {"t_s": 60.0, "before": 24, "after": 48},
    "forced_rebalance": {"delay_s": 3.2, "duration_s": 1.1, "dip": 0.25, "recovery_s": 4.0},
    "replicas": {"max_desired": 12, "max_current": 12},
    "lost_records": 0, "duplicated_records": 0, "drain_time_s": 40.0}


def _synthetic(name: str, record: dict) -> RunDoc:
    return RunDoc(Path(f"/r/{name}/benchmark.json"), {
        "inputs": {"profile": "bursty-ci", "engine": "spark"}, "experiment": {name: record},
        "run": {"label": name}})


def test_experiments_5_7_8_read_their_records() -> None:
    findings = build_findings([_synthetic("sweep", SWEEP), _synthetic("flapping", FLAPPING),
                               _synthetic("partitions", PARTITIONS)])
    by = {r.setting: r for r in findings.recommendations}
    assert (by["lagThreshold"].value, by["lagThreshold"].evidence) == (
        "500", "lagThreshold 500 is the largest swept value draining")
    assert by["scale-down windows"].value == ("scaleDown.stabilizationWindowSeconds 120, "
                                              "lagThreshold 500")
    sections = {s.number: s for s in findings.sections}
    assert sections[8].conclusion == ("lagThreshold 500 is the largest swept value draining "
                                      "within 60 s; the rule of thumb gives 18,000.")
    assert [(f.name, f.verdict) for f in sections[8].figures][:3] == [
        ("lagThreshold 250", "pass"), ("lagThreshold 500", "pass"),
        ("lagThreshold 4000", "fail")]
    assert sections[5].conclusion == ("Hysteresis flipped 0 time(s) against 3 with the short "
                                      "window, drained 35 s after the last burst, at 1.22 x the "
                                      "replica-seconds.")
    assert [f.verdict for f in sections[5].figures if "flips" in f.name] == ["pass", "pass"]
    assert sections[7].conclusion == ("Growing P from 24 to 48 forced a rebalance 3.2 s later "
                                      "with a 25.0 % dip, and the group scaled to 12 replicas.")


def test_a_sweep_where_no_value_met_the_slo() -> None:
    sweep = copy.deepcopy(SWEEP)
    sweep["recommendation"]["lag_threshold"] = None
    findings = build_findings([_synthetic("sweep", sweep)])
    assert findings.recommendations[2].value == "none met the SLO"
    assert findings.sections[7].conclusion == "No swept lagThreshold drained within 60 s."


def test_load_runs_reports_every_bad_path(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ConfigError) as info:
        load_runs([tmp_path / "missing", tmp_path / "x.json", RUN_DIRS[0]])
    assert len(info.value.problems) >= 2
    assert info.value.problems[0].startswith(f"{tmp_path / 'missing'}: ")


def test_holds_for_names_profile_engine_machine_and_versions() -> None:
    text = holds_for([_by_label(_runs(), "spike-ci")])
    assert text.startswith("profile spike-ci; engine spark; scale ci; 2 CPUs, 23.5 GiB Linux")
    assert "spark 4.3.0" in text and "librdkafka 2.16.0" in text


def test_a_run_dir_without_pictures_has_none(tmp_path: Path) -> None:
    shutil.copy(RUN_DIRS[0] / "benchmark.json", tmp_path / "benchmark.json")
    assert load_runs([tmp_path])[0].images == []


def _policy_row(steps: int, replica_s: float, drain_s: float | None, lost: int = 0) -> dict:
    return {"reaction_time_s": 20.0, "peak_lag_records": 50_000.0, "drain_time_s": drain_s,
            "scale_steps": steps, "direction_reversals": 1, "rebalances": steps,
            "replica_seconds": replica_s, "replica_seconds_ratio": 1.3,
            "drain_slo_met": drain_s is not None and drain_s <= 30.0, "reaction_slo_met": None,
            "handed_over": False, "lost_records": lost, "duplicated_records": 0}


def _shootout_run(profile: str, policy: str, row: dict, table: dict | None = None) -> RunDoc:
    record = {"profile": profile, "policy": policy, "row": row}
    if table is not None:
        record["table"] = table
    return RunDoc(Path(f"/r/{profile}-{policy}/benchmark.json"), {
        "inputs": {"profile": f"{profile}-ci", "engine": "spark"},
        "experiment": {"policies": record}, "run": {"label": f"{profile}-ci-{policy}"}})


def test_experiment_9_tables_each_profile_and_judges_the_seeds_claims() -> None:
    keda, persistent = _policy_row(12, 1000.0, 20.0), _policy_row(3, 850.0, 25.0)
    runs = [_shootout_run("bursty", "keda", keda, {"keda": keda, "persistent-lag": persistent}),
            _shootout_run("bursty", "persistent-lag", persistent),
            _shootout_run("spike", "lag-per-slot", _policy_row(4, 700.0, None, lost=3))]
    section = {s.number: s for s in build_findings(runs).sections}[9]
    assert [t.title for t in section.tables] == ["spike", "bursty"]
    bursty = section.tables[1]
    assert [row[0] for row in bursty.rows] == ["keda", "persistent-lag"]
    assert bursty.header[:3] == ["policy", "reaction_time_s (s)", "peak_lag_records (records)"]
    assert bursty.rows[1][4] == "3" and bursty.rows[1][-1] == "pass"
    verdicts = {f.name: (f.value, f.verdict) for f in section.figures}
    assert verdicts["spike: policies with processed == produced"] == ("0 of 1", "fail")
    assert verdicts["bursty: policies with processed == produced"] == ("2 of 2", "pass")
    assert verdicts["claim: 70-90% fewer scaling events (persistent-lag vs keda, bursty)"] == (
        "75.0 % reduction", "pass")
    assert verdicts["claim: 20-40% reduction in compute costs for bursty workloads "
                    "(persistent-lag vs keda, bursty)"] == ("15.0 % reduction", "fail")
    assert section.conclusion == (
        "Measured: on spike lag-per-slot used the fewest replica-seconds (700), lag-per-slot "
        "scaled least (4 events); on bursty persistent-lag used the fewest replica-seconds "
        "(850), keda drained fastest (20 s), persistent-lag scaled least (3 events). Seed "
        "claims: '70-90% fewer scaling events' holds (75.0 % measured); "
        "'20-40% reduction in compute costs for bursty workloads' does not hold (15.0 % "
        "measured).")


def _exp3(mean_dips: dict[str, float | None]) -> dict:
    return {name: {"mean_dip": dip, "max_dip": dip, "max_recovery_s": 3.0, "up_steps": 3,
                   "up_steps_measured": 3, "rebalance_duration_max_s": 0.5,
                   "partitions_stopped": 4, "drain_time_s": 20.0, "lost_records": 0,
                   "duplicated_records": 0} for name, dip in mean_dips.items()}


def test_experiment_3_answers_the_labs_claim_for_each_client_with_a_table() -> None:
    doc = {"experiment": {
        "rebalance_dip": {"variants": _exp3({"range": 0.0, "cooperative-sticky": 0.0})},
        "rebalance_dip_franz_go": {"variants": _exp3({"range": 0.3, "cooperative-sticky": 0.1})}}}
    extract = EXTRACTORS[3]([RunDoc(Path("/nowhere/benchmark.json"), doc)])
    claims = {f.name.split(":")[0]: (f.value, f.verdict) for f in extract.figures
              if "the lab's claim" in f.name}
    assert claims == {"librdkafka replicas": ("0.0 % vs 0.0 %", "fail"),
                      "franz-go consumer": ("30.0 % vs 10.0 %", "pass")}
    assert "hold with the librdkafka replicas? No" in extract.conclusion
    assert "hold with the franz-go consumer? Yes" in extract.conclusion
    (table,) = extract.tables
    assert [row[:4] for row in table.rows] == [
        ["librdkafka (spark_consumer)", "range", "3/3", "0.0 %"],
        ["librdkafka (spark_consumer)", "cooperative-sticky", "3/3", "0.0 %"],
        ["franz-go", "range", "3/3", "30.0 %"], ["franz-go", "cooperative-sticky", "3/3", "10.0 %"]]
