"""The twin's CPU model and its ``switch_policy`` action: a CPU HPA decides on the replicas'
modelled CPU, a switch hands the run to the lag ScaledObject with the real run's events, and
what the twin cannot model is still refused."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from pytest_lagscale.config._read import load_yaml
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.load.profiles import ActionSpec
from pytest_lagscale.twin.cpu import TwinCpu
from pytest_lagscale.twin.params import calibration_path, parse_calibration

from .conftest import settings

SWITCH_AT_S = 150.0   # spike-ci: the spike is 60-150 s


def _replica(rid: str, started_s: float, records: float) -> SimpleNamespace:
    return SimpleNamespace(rid=rid, started_s=started_s, records_done=records)


def test_cpu_samples_are_millicores_since_the_previous_sample() -> None:
    cpu = TwinCpu(idle_millicores=10.0, cpu_s_per_1000_records=0.5)
    a = _replica("replica-0001", 0.0, 0.0)
    assert cpu.sample([a], 5.0) == {}                 # first sight: nothing, as psutil's
    a.records_done = 2_000.0                          # 1.0 CPU-s of records in 10 s
    assert cpu.sample([a], 15.0) == {"replica-0001": pytest.approx(10.0 + 100.0)}
    b = _replica("replica-0002", 15.0, 0.0)
    assert cpu.sample([b], 20.0) == {}                # a is forgotten, b seen first
    assert cpu.sample([a, b], 25.0) == {"replica-0002": pytest.approx(10.0)}


def _run(**changes):
    from pytest_lagscale.twin.run import simulate

    return simulate(settings(policy="hpa-cpu-ci", engine="arrow", **changes), seed=3)


def test_a_cpu_hpa_decides_on_the_modelled_cpu_and_keeps_arrow_replicas_at_min() -> None:
    run = _run()
    cpu = run.events[run.events["event"] == "replica_cpu"]
    assert len(cpu) > 10
    fields = cpu["fields"].iloc[-1]
    assert fields["request_millicores"] == 500 and fields["millicores"]
    # arrow replicas use ~6 + 33 x records/s / 1000 millicores: far under 70 % of 500m
    assert int(run.timeline["desired_replicas"].max()) == run.spec.min_replicas
    assert run.measurements.flat()["peak_lag_records"] > 50_000


def test_switch_policy_hands_the_run_to_the_lag_scaledobject() -> None:
    run = _run(actions=(ActionSpec(SWITCH_AT_S, "switch_policy",
                                   {"policy": "scaledobject-ci"}),))
    events = run.events
    (action,) = events[events["event"] == "action"]["fields"]
    assert action["action"] == "switch_policy" and action["policy"] == "scaledobject-ci"
    (switched,) = events[events["event"] == "policy_switched"]["fields"]
    assert switched["to_object"] != switched["from_object"]
    before = run.timeline[run.timeline["t_s"] < SWITCH_AT_S]
    after = run.timeline[run.timeline["t_s"] >= SWITCH_AT_S]
    assert int(before["desired_replicas"].max()) == run.spec.min_replicas
    assert int(after["desired_replicas"].max()) > run.spec.min_replicas
    assert run.settled and sum(run.processed) == sum(run.produced)


def test_a_cpu_policy_without_a_cpu_model_is_refused() -> None:
    from pytest_lagscale.twin.run import simulate

    with pytest.raises(ConfigError) as raised:
        simulate(settings(policy="hpa-cpu-ci", engine="spark"))
    assert "scales on CPU" in str(raised.value) and "'cpu' section" in str(raised.value)


def test_an_action_the_twin_does_not_model_is_still_refused() -> None:
    from pytest_lagscale.twin.run import plan_of

    with pytest.raises(ConfigError) as raised:
        plan_of(settings(actions=(ActionSpec(100.0, "kill_replica", {}),)))
    assert "kill_replica" in str(raised.value) and "switch_policy" in str(raised.value)


def test_a_bad_cpu_section_names_the_key_and_the_range() -> None:
    doc = copy.deepcopy(load_yaml(calibration_path("arrow")))
    doc["cpu"]["idle_millicores"] = -1
    doc["cpu"]["extra"] = 1
    with pytest.raises(ConfigError) as raised:
        parse_calibration(doc, source="cal.yaml")
    text = str(raised.value)
    assert "cpu.idle_millicores" in text and "[0, 64000] millicores" in text
    assert "cpu.extra" in text
