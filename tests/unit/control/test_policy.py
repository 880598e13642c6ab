"""The scaling-policy and trigger seams: KedaHpaPolicy's schedule and decisions, from a
ScaledObject with a lag trigger, a ScaledObject with only a cpu trigger and a plain CPU HPA."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml

from pytest_lagscale.config.hpa import load_cpu_hpa
from pytest_lagscale.config.scaledobject import load_scaled_object, parse_scaled_object
from pytest_lagscale.config.trigger_metadata import TRIGGER_TYPES
from pytest_lagscale.control import controller as controller_module
from pytest_lagscale.control.hpa import PodCpu
from pytest_lagscale.control.keda import TRIGGERS, Trigger
from pytest_lagscale.control.observation import Observation
from pytest_lagscale.control.policy import POLICIES, Decision, KedaHpaPolicy, PolicyStep, ScalingPolicy

K8S = Path(__file__).resolve().parents[3] / "k8s"
#: Total lag 40,000 records over 8 partitions: 10x the CI lagThreshold x 8 replicas.
HIGH_LAG = {p: (0, 5000) for p in range(8)}
NO_LAG = {p: (5000, 5000) for p in range(8)}


def pods(n: int, usage_millicores: int, request_millicores: int = 500) -> tuple[PodCpu, ...]:
    return tuple(PodCpu(usage_millicores, request_millicores) for _ in range(n))


def cpu_scaled_object() -> KedaHpaPolicy:
    """scaledobject-ci.yaml with its kafka trigger replaced by cpu 70 % (no fallback: KEDA
    refuses one beside cpu triggers only)."""
    doc = yaml.safe_load((K8S / "scaledobject-ci.yaml").read_text(encoding="utf-8"))
    doc["spec"]["triggers"] = [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}]
    del doc["spec"]["fallback"]
    return KedaHpaPolicy.from_scaled_object(parse_scaled_object(doc, source="so-cpu.yaml"))


def cpu_hpa() -> KedaHpaPolicy:
    return KedaHpaPolicy.from_cpu_hpa(load_cpu_hpa(K8S / "hpa-cpu-ci.yaml"))


def lag_scaled_object() -> KedaHpaPolicy:
    return KedaHpaPolicy.from_scaled_object(load_scaled_object(K8S / "scaledobject-ci.yaml"))


def run(policy: KedaHpaPolicy, observations: list[tuple[float, Observation]]) -> list[Decision]:
    """Decide at each time, feeding back the replicas each decision set."""
    out, replicas = [], None
    for now_s, obs in observations:
        if replicas is not None:
            obs = Observation(replicas, obs.offsets, cpu_pods=obs.cpu_pods)
        decision = policy.decide(obs, now_s)
        replicas = decision.desired_replicas if decision.desired_replicas is not None else obs.current_replicas
        out.append(decision)
    return out


@pytest.mark.parametrize("build", [
    pytest.param(lag_scaled_object, id="scaledobject-kafka"),
    pytest.param(cpu_scaled_object, id="scaledobject-cpu-only"),
    pytest.param(cpu_hpa, id="hpa-cpu-manifest"),
])
def test_policies_implement_the_protocol(build) -> None:
    policy = build()
    assert isinstance(policy, ScalingPolicy)
    assert all(isinstance(t, Trigger) for t in policy.controller.triggers)


@pytest.mark.parametrize(("build", "facts"), [
    pytest.param(lag_scaled_object, ("keda-hpa", "lagscale-consumer", 1, 8, 500, True, False),
                 id="scaledobject-kafka"),
    pytest.param(cpu_scaled_object, ("keda-hpa", "lagscale-consumer", 1, 8, None, False, True),
                 id="scaledobject-cpu-only"),
    pytest.param(cpu_hpa, ("hpa", "lagscale-consumer-cpu", 1, 8, None, False, True), id="hpa-cpu-manifest"),
])
def test_policy_facts_for_the_runner(build, facts: tuple) -> None:
    policy = build()
    assert (policy.name, policy.metrics_name, policy.min_replicas, policy.max_replicas,
            policy.lag_threshold_records, policy.needs_lag, policy.needs_cpu) == facts
    assert policy.first_decision_within_s == 3.0


def test_schedule_poll_at_once_every_interval_sync_one_period_later() -> None:
    """CI ScaledObject: pollingInterval 2 s, HPA sync period 3 s (moved from LocalAutoscaler.step)."""
    policy = lag_scaled_object()
    events = {}
    for t in [0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 6.0]:
        due = policy.due(t)
        steps = policy.decide(Observation(1, NO_LAG), t).steps if due else ()
        events[t] = (due, [s.event for s in steps])
    assert events == {
        0.0: (True, ["keda_poll"]), 0.5: (False, []), 1.0: (False, []), 2.0: (True, ["keda_poll"]),
        2.5: (False, []), 3.0: (True, ["hpa_sync"]), 4.0: (True, ["keda_poll"]),
        6.0: (True, ["keda_poll", "hpa_sync"]),
    }


def test_plain_hpa_first_decide_starts_the_schedule_without_a_step() -> None:
    policy = cpu_hpa()
    first = policy.decide(Observation(2, cpu_pods=pods(2, 490)), 10.0)
    assert (first.steps, first.desired_replicas, first.reason) == ((), None, "NotDue")
    assert (policy.due(12.9), policy.due(13.0)) == (False, True)


def test_cpu_hpa_manifest_scales_out_on_high_cpu_and_ignores_lag() -> None:
    """hpa-cpu-ci.yaml (70 % of 500m): 2 pods at 98 % -> 3; enormous lag at idle CPU -> nothing."""
    busy = run(cpu_hpa(), [(0.0, Observation(2, HIGH_LAG, cpu_pods=pods(2, 490))),
                           (3.0, Observation(2, HIGH_LAG, cpu_pods=pods(2, 490)))])
    sync = busy[-1].steps[0]
    assert (sync.event, sync.triggers[0].metric_value, sync.proposal) == ("hpa_sync", 98.0, 3)
    assert (busy[-1].desired_replicas, busy[-1].reason) == (3, "DesiredWithinRange")
    idle = run(cpu_hpa(), [(t, Observation(2, HIGH_LAG, cpu_pods=pods(2, 300))) for t in (0.0, 3.0, 6.0, 9.0)])
    assert [d.desired_replicas for d in idle] == [None] * 4
    assert {s.triggers[0].total_lag for d in idle for s in d.steps} == {None}


def test_cpu_only_scaled_object_scales_out_on_high_cpu_and_ignores_lag() -> None:
    """Experiment 1's KEDA variant: a ScaledObject whose only trigger is cpu (always active)."""
    busy = run(cpu_scaled_object(), [(t, Observation(1, NO_LAG, cpu_pods=pods(1, 500))) for t in (0.0, 3.0)])
    poll, sync = busy[-1].steps
    assert (poll.is_active, poll.reason, poll.triggers[0].metric_value) == (True, "Active", None)
    assert (sync.triggers[0].metric_value, sync.proposal, busy[-1].desired_replicas) == (100.0, 2, 2)
    lagging = run(cpu_scaled_object(), [(t, Observation(1, HIGH_LAG, cpu_pods=pods(1, 200)))
                                        for t in (0.0, 2.0, 3.0, 4.0, 6.0)])
    assert [d.desired_replicas for d in lagging] == [None] * 5
    assert {s.reason for d in lagging for s in d.steps} == {"Active", "DesiredWithinRange"}


def test_lag_scaled_object_scales_out_on_lag_and_ignores_cpu() -> None:
    decisions = run(lag_scaled_object(), [(t, Observation(1, HIGH_LAG, cpu_pods=pods(1, 0))) for t in (0.0, 3.0)])
    assert (decisions[-1].desired_replicas, decisions[-1].reason) == (5, "ScaleUpLimit")


def test_sync_sees_the_replicas_a_poll_set_in_the_same_tick() -> None:
    """minReplicaCount 0: the poll wakes 0 -> 1 at t = 3, the sync at t = 3 starts from 1."""
    doc = yaml.safe_load((K8S / "scaledobject-ci.yaml").read_text(encoding="utf-8"))
    doc["spec"]["minReplicaCount"] = 0
    policy = KedaHpaPolicy.from_scaled_object(parse_scaled_object(doc, source="so-zero.yaml"))
    policy.decide(Observation(0, NO_LAG), 0.0)
    decision = policy.decide(Observation(0, HIGH_LAG), 3.0)
    poll, sync = decision.steps
    assert (poll.reason, poll.replicas_before, poll.replicas_after) == ("ScaledFromZero", 0, 1)
    assert (sync.replicas_before, sync.proposal, sync.replicas_after) == (1, 8, 5)
    assert (decision.desired_replicas, decision.reason) == (5, "ScaleUpLimit")


def test_steps_carry_the_event_record_fields() -> None:
    policy = lag_scaled_object()
    steps = [*policy.decide(Observation(1, HIGH_LAG), 0.0).steps, *policy.decide(Observation(1, HIGH_LAG), 3.0).steps]
    assert all(isinstance(s, PolicyStep) for s in steps)
    assert [(s.event, s.sets_desired_replicas) for s in steps] == [
        ("keda_poll", False), ("keda_poll", False), ("hpa_sync", True)]


def test_registries_have_one_entry_per_kind() -> None:
    assert list(TRIGGERS) == ["kafka", "cpu", "external", "prometheus", "aws-cloudwatch", "metrics-api"]
    assert list(TRIGGER_TYPES) == list(TRIGGERS)  # every type read in config has its logic in control
    assert all(TRIGGER_TYPES[k].metric_types == TRIGGERS[k].metric_types
               and TRIGGER_TYPES[k].resource_metric == TRIGGERS[k].resource_metric for k in TRIGGERS)
    assert list(POLICIES) == ["ScaledObject", "HorizontalPodAutoscaler", "LagPerSlotPolicy"]


def test_controller_has_no_trigger_type_switches() -> None:
    """A new trigger is a module and a registry line: the controller never asks which type."""
    source = inspect.getsource(controller_module)
    assert "isinstance(" not in source and ".type ==" not in source


def test_step_record_is_asdict_of_every_step_kind() -> None:
    """The event-log record of a KEDA poll and an HPA sync (nested trigger evaluations, the HPA
    decision, per-partition lag) equals ``dataclasses.asdict``, and shares no mutable part with
    the step."""
    import dataclasses

    from pytest_lagscale.control.policy.base import step_record

    decisions = run(lag_scaled_object(), [(t, Observation(1, HIGH_LAG)) for t in (0.0, 1.0, 15.0)])
    steps = [step for decision in decisions for step in decision.steps]
    assert {step.event for step in steps} == {"keda_poll", "hpa_sync"}
    assert any(t.partition_lag for step in steps for t in step.triggers)
    for step in steps:
        record = step_record(step)
        assert record == dataclasses.asdict(step)
        lag = record["triggers"][0]["partition_lag"]
        assert lag is not step.triggers[0].partition_lag
