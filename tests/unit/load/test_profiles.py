"""Traffic profiles: the committed files, each kind's schedule, overrides and every validation
message (exact text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.load.profiles import ProfileOverrides, load_profile, parse_profile
from pytest_lagscale.load.schedule import Schedule, Step

PROFILES = Path(__file__).resolve().parents[3] / "fixtures" / "profiles"
STEP = {"kind": "step", "seed": 7, "partitions": 8, "duration_s": 240,
        "baseline_rate_per_s": 200, "spike_multiplier": 10, "spike_start_s": 60,
        "spike_hold_s": 90}
BURSTY = {"kind": "bursty", "seed": 7, "partitions": 8, "duration_s": 100, "period_s": 40,
          "duty_cycle": 0.25, "high_rate_per_s": 2000, "low_rate_per_s": 200}
STEPS = {"kind": "steps", "seed": 7, "partitions": 8, "duration_s": 30,
         "steps": [{"at_s": 0, "rate_per_s": 100}, {"at_s": 10, "rate_per_s": 1000,
                                                     "label": "peak"},
                   {"at_s": 20, "rate_per_s": 100}]}


def test_committed_profiles_load_with_the_documented_shape() -> None:
    spike, ci = load_profile(PROFILES / "spike.yaml"), load_profile(PROFILES / "spike-ci.yaml")
    assert (spike.partitions, ci.partitions, ci.topic) == (24, 8, "events")
    assert [(s.label, s.start_s, s.end_s, s.rate_per_s) for s in spike.schedule()] == [
        ("baseline", 0, 300, 3000), ("spike", 300, 1200, 30_000), ("recovery", 1200, 1800, 3000)]
    spike_records = Schedule(spike.schedule()).records_in_step(1)
    assert len(spike_records) - 3000 * 900 >= 20_000_000  # backlog above the baseline rate
    assert [(s.label, s.rate_per_s, s.duration_s) for s in ci.schedule()] == [
        ("baseline", 200, 60), ("spike", 2000, 90), ("recovery", 200, 90)]
    assert ci.duration_s <= 300
    for name in ("bursty", "bursty-ci"):
        p = load_profile(PROFILES / f"{name}.yaml")
        assert p.kind == "bursty" and p.name == name and p.schedule()[0].label == "high-0"
    assert load_profile(PROFILES / "bursty-ci.yaml").partitions == 8


@pytest.mark.parametrize(
    ("raw", "expected"),
    [pytest.param({"kind": "steady", "seed": 1, "partitions": 1, "duration_s": 5,
                   "rate_per_s": 10}, [(0, 5, 10, "steady")], id="steady"),
     pytest.param({**STEP, "spike_start_s": 0, "spike_hold_s": 240},
                  [(0, 240, 2000, "spike")], id="step-without-baseline-or-recovery"),
     pytest.param(BURSTY, [(0, 10, 2000, "high-0"), (10, 40, 200, "low-0"),
                           (40, 50, 2000, "high-1"), (50, 80, 200, "low-1"),
                           (80, 90, 2000, "high-2"), (90, 100, 200, "low-2")],
                  id="bursty-cut-at-duration"),
     pytest.param({**BURSTY, "kind": "sawtooth", "duty_cycle": 1, "ramp_steps": 2,
                   "duration_s": 80, "low_rate_per_s": 0},
                  [(0, 20, 1000, "ramp-0.0"), (20, 40, 2000, "ramp-0.1"),
                   (40, 60, 1000, "ramp-1.0"), (60, 80, 2000, "ramp-1.1")],
                  id="sawtooth-full-duty"),
     pytest.param(STEPS, [(0, 10, 100, "step-0"), (10, 20, 1000, "peak"),
                          (20, 30, 100, "step-2")], id="explicit-steps")])
def test_each_kind_compiles_to_contiguous_steps(raw: dict, expected: list) -> None:
    steps = parse_profile(raw).schedule()
    assert [(s.start_s, s.end_s, s.rate_per_s, s.label) for s in steps] == expected
    Schedule(steps)  # contiguous from 0


def test_overrides_replace_the_files_values() -> None:
    p = parse_profile(STEP, overrides=ProfileOverrides(rate_per_s=50, spike_multiplier=4,
                                                       spike_hold_s=30, seed=3, partitions=2,
                                                       topic="t"))
    assert (p.seed, p.partitions, p.topic) == (3, 2, "t")
    assert [s.rate_per_s for s in p.schedule()] == [50, 200, 50]
    assert p.schedule()[1] == Step(60, 90, 200, "spike")
    steady = {"kind": "steady", "seed": 1, "partitions": 1, "duration_s": 5, "rate_per_s": 10}
    assert parse_profile(steady, overrides={"rate_per_s": 99}).schedule()[0].rate_per_s == 99


@dataclass(frozen=True)
class Case:
    """A bad profile (and overrides) and the exact problem lines expected."""

    raw: Any
    expected: list[str]
    overrides: dict[str, Any] = field(default_factory=dict)


BAD = [
    pytest.param(Case(raw={**STEP, "baseline_rate_per_s": -5}, expected=[
        "'baseline_rate_per_s': -5 is out of range; allowed: 0 to 10000000 records/s; source: "
        "p.yaml at baseline_rate_per_s; raise it to 0 or more"]), id="negative-rate"),
    pytest.param(Case(raw={**STEP, "spike_multiplier": 0.5}, expected=[
        "'spike_multiplier': 0.5 is out of range; allowed: 1 to 1000 x baseline_rate_per_s; "
        "source: p.yaml at spike_multiplier; raise it to 1 or more"]), id="multiplier-below-1"),
    pytest.param(Case(raw={**BURSTY, "duty_cycle": 0}, expected=[
        "'duty_cycle': 0 is out of range; allowed: above 0 up to 1 (fraction of period_s); "
        "source: p.yaml at duty_cycle; raise it above 0"]), id="duty-cycle-zero"),
    pytest.param(Case(raw={**BURSTY, "duty_cycle": 1.5}, expected=[
        "'duty_cycle': 1.5 is out of range; allowed: above 0 up to 1 (fraction of period_s); "
        "source: p.yaml at duty_cycle; lower it to 1 or less"]), id="duty-cycle-above-1"),
    pytest.param(Case(raw={**STEP, "kind": "stedy"}, expected=[
        "'kind': 'stedy' is not a known kind; allowed: one of 'steady', 'step', 'bursty', "
        "'sawtooth', 'steps'; source: p.yaml at kind; set kind to 'steady'"]), id="unknown-kind"),
    pytest.param(Case(raw={**STEP, "kind": ["step"]}, overrides={"rate_per_s": 5}, expected=[
        "'kind': ['step'] is a list, not a string; allowed: one of 'steady', 'step', 'bursty', "
        "'sawtooth', 'steps'; source: p.yaml at kind; quote the value"]),
        id="kind-not-a-string"),
    pytest.param(Case(raw={**STEP, "spike_mult": 3}, expected=[
        "'spike_mult': unknown key (value 3); allowed: keys kind, seed, partitions, duration_s, "
        "topic, name, description, entities, zipf_s, actions, baseline_rate_per_s, spike_multiplier, "
        "spike_start_s, spike_hold_s for kind 'step'; source: p.yaml at spike_mult; rename it "
        "to 'spike_multiplier'"]), id="unknown-key-with-suggestion"),
    pytest.param(Case(raw={**STEP, "duty_cycle": 0.5}, expected=[
        "'duty_cycle': 0.5 is set but kind 'step' does not use it; allowed: keys kind, seed, "
        "partitions, duration_s, topic, name, description, entities, zipf_s, actions, "
        "baseline_rate_per_s, spike_multiplier, spike_start_s, spike_hold_s for kind 'step'; "
        "source: p.yaml at duty_cycle; remove 'duty_cycle' or set kind to 'bursty'"]),
        id="key-of-another-kind"),
    pytest.param(Case(raw={**STEPS, "steps": [{"at_s": 0, "rate_per_s": 1},
                                              {"at_s": 20, "rate_per_s": 2},
                                              {"at_s": 10, "rate_per_s": 3}]}, expected=[
        "'at_s': 10.0 is not after steps[1].at_s 20.0; allowed: at_s strictly increasing, s; "
        "source: p.yaml at steps[2].at_s; order the steps by at_s without repeats"]),
        id="steps-not-increasing"),
    pytest.param(Case(raw={k: v for k, v in STEP.items() if k != "seed"}, expected=[
        "'seed': missing (required for kind 'step'); allowed: integer 0 to "
        "18446744073709551615; source: p.yaml at seed; add 'seed'"]), id="missing-required"),
    pytest.param(Case(raw={**STEP, "partitions": "8"}, expected=[
        "'partitions': '8' is a str, not an integer; allowed: integer 1 to 4096 partitions; "
        "source: p.yaml at partitions; write an integer without quotes"]), id="wrong-type"),
    pytest.param(Case(raw={**STEP, "spike_start_s": True}, expected=[
        "'spike_start_s': True is a bool, not a number; allowed: 0 to 604800 s; source: p.yaml "
        "at spike_start_s; write a number instead of a YAML boolean"]), id="yaml-boolean"),
    pytest.param(Case(raw={**STEP, "partitions": 0}, expected=[
        "'partitions': 0 is out of range; allowed: integer 1 to 4096 partitions; source: "
        "p.yaml at partitions; raise it to 1 or more"]), id="partitions-out-of-range"),
    pytest.param(Case(raw={**STEP, "spike_hold_s": 200}, expected=[
        "'spike_hold_s': 200.0 ends the spike at 260.0 s, after duration_s 240.0; allowed: "
        "spike_start_s + spike_hold_s <= duration_s; source: p.yaml at spike_hold_s; shorten "
        "spike_hold_s or spike_start_s, or raise duration_s"]), id="spike-past-the-end"),
    pytest.param(Case(raw={**BURSTY, "high_rate_per_s": 100}, expected=[
        "'high_rate_per_s': 100.0 is below low_rate_per_s 200.0; allowed: high_rate_per_s >= "
        "low_rate_per_s records/s; source: p.yaml at high_rate_per_s; swap the two rates"]),
        id="high-below-low"),
    pytest.param(Case(raw={**STEP, "topic": "my topic"}, expected=[
        "'topic': 'my topic' is not a valid topic name; allowed: a Kafka topic name: 1 to 249 "
        "of [a-zA-Z0-9._-]; source: p.yaml at topic; use only letters, digits, '.', '_' and "
        "'-'"]), id="bad-topic-name"),
    pytest.param(Case(raw=[1, 2], expected=[
        "'p.yaml': [1, 2] is a list, not a mapping; allowed: a YAML mapping of profile keys; "
        "source: p.yaml; write the keys at the top level"]), id="not-a-mapping"),
    pytest.param(Case(raw=BURSTY, overrides={"rate_per_s": 5, "seed": -1}, expected=[
        "'--rate': 5 does not apply to kind 'bursty'; allowed: kinds 'steady', 'step'; source: "
        "command line; drop --rate or edit p.yaml",
        "'--seed': -1 is out of range; allowed: integer 0 to 18446744073709551615; source: "
        "command line; raise it to 0 or more"]), id="bad-command-line-overrides"),
]


@pytest.mark.parametrize("case", BAD)
def test_bad_profiles_give_one_exact_line_per_problem(case: Case) -> None:
    with pytest.raises(ConfigError) as info:
        parse_profile(case.raw, source="p.yaml", overrides=case.overrides)
    assert info.value.problems == case.expected


def test_all_problems_are_reported_at_once_in_file_order() -> None:
    raw = {"kind": "spike", "seed": -7, "partitions": 8, "duration_s": 240, "bogus": 200}
    with pytest.raises(ConfigError) as info:
        parse_profile(raw, source="p.yaml")
    assert [line.split(":")[0] for line in info.value.problems] == ["'bogus'", "'seed'", "'kind'"]
    assert str(info.value) == "\n".join(info.value.problems)


def test_unreadable_and_unparsable_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=r"^'.*nope.yaml': cannot be read \(No such file or "
                                          r"directory\); allowed: a readable YAML file; source: "
                                          r"--profile; check the path$"):
        load_profile(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [steady\n")
    with pytest.raises(ConfigError, match=r"^'.*broken.yaml': is not valid YAML \(.*line 2.*\); "
                                          r"allowed: a YAML mapping; source: .*broken.yaml; fix "
                                          r"the syntax at the position shown$"):
        load_profile(broken)


def test_name_defaults_to_the_file_stem_and_source_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "my-load.yaml"
    path.write_text("kind: steady\nseed: 1\npartitions: 2\nduration_s: 3\nrate_per_s: 4\n")
    p = load_profile(path)
    assert (p.name, p.source, p.topic, p.entities, p.zipf_s) == ("my-load", str(path), "events",
                                                                 5_000_000, 1.1)
    assert p.to_dict()["rate_per_s"] == 4.0 and p.to_dict()["kind"] == "steady"


def test_unknown_override_names_are_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        parse_profile(STEP, source="p.yaml", overrides={"rate": 1})
    assert info.value.problems == [
        "'rate': unknown override (value 1); allowed: rate_per_s, spike_multiplier, "
        "spike_hold_s, seed, partitions, topic; source: overrides of p.yaml; use one of those "
        "names"]
