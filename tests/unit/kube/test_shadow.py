"""The embedded HPA in shadow of the real one (pure): the HPA view, replay, alignment, report."""

from __future__ import annotations

import copy
import json

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kube.metric_reads import MetricRead
from pytest_lagscale.kube.shadow import (
    AlignedSyncs,
    ConformanceReport,
    SyncInput,
    align_syncs,
    conformance,
    hpa_spec_view,
    selector_string,
    shadow_decisions,
)

SELECTOR = "scaledobject.keda.sh/name=lagscale-consumer"
# spec.behavior as KEDA copies it from k8s/scaledobject-ci.yaml (advanced.horizontalPodAutoscalerConfig)
BEHAVIOR_CI = {
    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 5},
                             {"type": "Percent", "value": 100, "periodSeconds": 5}]},
    "scaleDown": {"stabilizationWindowSeconds": 30, "selectPolicy": "Max",
                  "policies": [{"type": "Pods", "value": 2, "periodSeconds": 10}]},
}
KEDA_HPA = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "keda-hpa-lagscale-consumer", "namespace": "default",
                 "labels": {"app.kubernetes.io/managed-by": "keda-operator",
                            "scaledobject.keda.sh/name": "lagscale-consumer"},
                 "ownerReferences": [{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                                      "name": "lagscale-consumer", "controller": True}]},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "lagscale-consumer"},
        "minReplicas": 1, "maxReplicas": 8,
        "metrics": [{"type": "External", "external": {
            "metric": {"name": "s0-kafka-events",
                       "selector": {"matchLabels": {"scaledobject.keda.sh/name": "lagscale-consumer"}}},
            "target": {"type": "AverageValue", "averageValue": "500"}}}],
        "behavior": BEHAVIOR_CI,
    },
    "status": {"currentReplicas": 1, "desiredReplicas": 1},
}
TIMING = {"tolerance": 0.1, "downscale_stabilization_s": 300}


def hpa_with(**spec_changes):
    hpa = copy.deepcopy(KEDA_HPA)
    hpa["spec"].update(spec_changes)
    return hpa


def replay(spec, rows):
    """``rows``: dicts t_s, total, replicas, real -> the shadow's decisions, the Deployment at
    ``replicas`` (spec and status) before each sync."""
    syncs = [SyncInput(t_s=r["t_s"], metric_total=r["total"], status_replicas=r["replicas"],
                       spec_replicas=r["replicas"], real_desired=r["real"]) for r in rows]
    return shadow_decisions(spec, syncs, **TIMING)


# -- the HPA view -------------------------------------------------------------------------------

def test_hpa_spec_view_of_the_keda_generated_hpa():
    spec = hpa_spec_view(KEDA_HPA)
    assert (spec.name, spec.namespace, spec.min_replicas, spec.max_replicas) == (
        "keda-hpa-lagscale-consumer", "default", 1, 8)
    assert (spec.metric_name, spec.target_type, spec.target) == ("s0-kafka-events", "AverageValue", 500.0)
    assert spec.behavior == BEHAVIOR_CI and spec.label_selector == SELECTOR


@pytest.mark.parametrize("metrics, message", [
    pytest.param([KEDA_HPA["spec"]["metrics"][0], {"type": "Resource", "resource": {"name": "cpu"}}],
                 "'spec.metrics': got ['External', 'Resource'], expected exactly one metric of type 'External' "
                 "in HorizontalPodAutoscaler default/keda-hpa-lagscale-consumer; the shadow replays one External "
                 "metric: give the ScaledObject exactly one (non-cpu/memory) trigger", id="two-metrics"),
    pytest.param([], "'spec.metrics': got [], expected exactly one metric of type 'External' in "
                 "HorizontalPodAutoscaler default/keda-hpa-lagscale-consumer; the shadow replays one External "
                 "metric: give the ScaledObject exactly one (non-cpu/memory) trigger", id="no-metric"),
    pytest.param([{"type": "External", "external": {"metric": {"name": "m"},
                                                    "target": {"type": "AverageValue", "averageValue": "-1"}}}],
                 "'spec.metrics[0].external.target.averageValue': got '-1', expected a quantity > 0 ('500', "
                 "'1500m', '2k') in HorizontalPodAutoscaler default/keda-hpa-lagscale-consumer; set "
                 "'spec.metrics[0].external.target.averageValue' (the trigger's threshold)", id="bad-quantity"),
    pytest.param([{"type": "External", "external": {"metric": {"name": "m"},
                                                    "target": {"type": "Utilization", "averageUtilization": 50}}}],
                 "'spec.metrics[0].external.target.type': got 'Utilization', expected one of {'AverageValue', "
                 "'Value'} in HorizontalPodAutoscaler default/keda-hpa-lagscale-consumer; use one of "
                 "{'AverageValue', 'Value'}", id="utilization-target"),
])
def test_hpa_spec_view_refuses_other_metrics(metrics, message):
    with pytest.raises(ConfigError) as err:
        hpa_spec_view(hpa_with(metrics=metrics))
    assert str(err.value) == message


def test_hpa_spec_view_value_target_and_no_behavior():
    metric = {"type": "External", "external": {"metric": {"name": "s0-kafka-events"},
                                               "target": {"type": "Value", "value": "1500m"}}}
    hpa = hpa_with(metrics=[metric])
    del hpa["spec"]["behavior"], hpa["spec"]["minReplicas"]
    spec = hpa_spec_view(hpa)
    assert (spec.target_type, spec.target, spec.behavior, spec.min_replicas, spec.label_selector) == (
        "Value", 1.5, None, 1, "")


def test_selector_string_is_the_apimachinery_form():
    selector = {"matchLabels": {"z": "1", "a": "2"},
                "matchExpressions": [{"key": "m", "operator": "In", "values": ["y", "x"]},
                                     {"key": "b", "operator": "DoesNotExist"},
                                     {"key": "c", "operator": "Exists"},
                                     {"key": "n", "operator": "NotIn", "values": ["q"]}]}
    assert selector_string(selector) == "a=2,!b,c,m in (x,y),n notin (q),z=1"


# -- replay -------------------------------------------------------------------------------------

def test_scale_up_limited_by_the_policies_agrees_spec_3_7():
    # §3.7: Pods 4 / 5 s and Percent 100 / 5 s, Max: 1 -> 5 (limit 1+4), held at 5 while the
    # +4 event is inside the period, then 5 -> min(10, maxReplicas 8)
    rows = [dict(t_s=0.0, total=5000, replicas=1, real=5), dict(t_s=3.0, total=6000, replicas=5, real=5),
            dict(t_s=6.0, total=6000, replicas=5, real=8), dict(t_s=9.0, total=4100, replicas=8, real=8)]
    decisions = replay(hpa_spec_view(KEDA_HPA), rows)
    assert [(d.proposal, d.desired, d.reason) for d in decisions] == [
        (10, 5, "ScaleUpLimit"), (12, 5, "ScaleUpLimit"), (12, 8, "TooManyReplicas"), (8, 8, "DesiredWithinRange")]
    assert all(d.agrees for d in decisions)


def test_scale_down_stabilization_then_rate_limit_agrees_spec_3_6():
    # §3.6: the 30 s scale-down window holds 8 while the t=6 recommendation (12) is inside it
    # (strictly after now - 30); then Pods 2 / 10 s: 8 -> 6 at t=36, 6 -> 4 at t=48
    rows = [dict(t_s=0.0, total=5000, replicas=1, real=5), dict(t_s=3.0, total=6000, replicas=5, real=5),
            dict(t_s=6.0, total=6000, replicas=5, real=8)]
    rows += [dict(t_s=float(t), total=0, replicas=8, real=8) for t in range(9, 34, 3)]
    rows += [dict(t_s=36.0, total=0, replicas=8, real=6), dict(t_s=39.0, total=0, replicas=6, real=6),
             dict(t_s=45.0, total=0, replicas=6, real=6), dict(t_s=48.0, total=0, replicas=6, real=4)]
    decisions = replay(hpa_spec_view(KEDA_HPA), rows)
    assert [d for d in decisions if not d.agrees] == []
    assert decisions[3].stabilization_reason == "ScaleDownStabilized" and decisions[3].proposal == 0
    assert conformance(decisions).summary() == "shadow HPA: 16/16 syncs agree (100.0 %), 0 differ, 0 dropped"


def test_a_failed_read_keeps_the_previous_desired_replicas():
    # horizontal.go: on FailedComputeMetricsReplicas the status keeps desiredReplicas
    rows = [dict(t_s=0.0, total=5000, replicas=1, real=5), dict(t_s=3.0, total=None, replicas=1, real=5)]
    decisions = replay(hpa_spec_view(KEDA_HPA), rows)
    assert [(d.proposal, d.desired, d.reason, d.agrees) for d in decisions] == [
        (10, 5, "ScaleUpLimit", True), (None, 5, "FailedComputeMetricsReplicas", True)]


def test_a_wrong_real_decision_is_listed_with_its_inputs():
    rows = [dict(t_s=0.0, total=5000, replicas=1, real=5), dict(t_s=3.0, total=6000, replicas=5, real=7)]
    report = conformance(replay(hpa_spec_view(KEDA_HPA), rows), dropped={"no_hpa_status": 1})
    assert (report.syncs, report.agreeing, report.agreement) == (2, 1, 0.5)
    assert report.differences == [{
        "t_s": 3.0, "metric_total": 6000, "status_replicas": 5, "spec_replicas": 5, "target": 500.0,
        "real_desired": 7, "shadow_desired": 5, "shadow_proposal": 12, "reason": "ScaleUpLimit",
        "stabilization_reason": "ReadyForNewScale"}]
    assert report.summary() == ("shadow HPA: 1/2 syncs agree (50.0 %), 1 differ, 1 dropped; first at "
                                "t_s=3.000: real 7, shadow 5 (ScaleUpLimit, metric 6000, replicas 5)")
    assert json.loads(json.dumps(report.to_json())) == {
        "syncs": 2, "agreeing": 1, "agreement": 0.5, "dropped": {"no_hpa_status": 1},
        "differences": report.differences}


def test_value_target_uses_ready_pods_and_legacy_path_without_behavior():
    metric = {"type": "External", "external": {"metric": {"name": "m"}, "target": {"type": "Value", "value": "1k"}}}
    hpa = hpa_with(metrics=[metric])
    del hpa["spec"]["behavior"]
    spec = hpa_spec_view(hpa)
    syncs = [SyncInput(0.0, 3000.0, status_replicas=2, spec_replicas=2, real_desired=4),  # 3 x 2 ready, legacy cap 2x
             SyncInput(15.0, 3000.0, status_replicas=4, spec_replicas=4, real_desired=6, ready_pods=2),
             SyncInput(30.0, 100.0, status_replicas=6, spec_replicas=6, real_desired=6)]   # legacy 300 s window
    decisions = shadow_decisions(spec, syncs, **TIMING)
    assert [(d.proposal, d.desired, d.reason) for d in decisions] == [
        (6, 4, "ScaleUpLimit"), (6, 6, "DesiredWithinRange"), (1, 6, "DesiredWithinRange")]
    assert all(d.agrees for d in decisions) and decisions[2].stabilization_reason == "ScaleDownStabilized"


def test_empty_report():
    report = conformance([])
    assert (report.agreement, report.summary()) == (None, "shadow HPA: 0/0 syncs agree (n/a), 0 differ, 0 dropped")
    assert isinstance(report, ConformanceReport)


# -- alignment ----------------------------------------------------------------------------------

def read(t_s, total=1000.0, metric="s0-kafka-events", selector=SELECTOR):
    return MetricRead(t_s=t_s, wall_utc="2026-11-26T07:00:00+00:00", namespace="default", metric_name=metric,
                      label_selector=selector, status=200, values=(total,) if total is not None else (),
                      total=total, remote_user="hpa")


def test_align_takes_the_deployment_before_and_the_hpa_status_after_each_read():
    deployment = [(-1.0, 1, 1), (0.5, 5, 1), (2.0, 5, 5)]
    hpa = [(-2.0, 1), (0.01, 5), (6.02, 8)]
    syncs = align_syncs([read(6.0), read(0.0), read(3.0)], deployment, hpa, sync_period_s=3)
    assert isinstance(syncs, AlignedSyncs) and isinstance(syncs, list)
    assert [(s.t_s, s.spec_replicas, s.status_replicas, s.real_desired) for s in syncs] == [
        (0.0, 1, 1, 5),    # the write 10 ms after the read
        (3.0, 5, 5, 5),    # no write: the status is unchanged (updateStatusIfNeeded)
        (6.0, 5, 5, 8)]
    assert syncs.dropped == {"no_deployment_observation": 0, "no_hpa_status": 0}


def test_align_drops_reads_before_any_observation():
    # read 0: no Deployment yet; read 3: window ends at 5.7 s, before the first HPA status
    syncs = align_syncs([read(0.0), read(3.0), read(6.0)], [(2.0, 1, 1)], [(6.5, 1)], sync_period_s=3)
    assert [s.t_s for s in syncs] == [6.0]
    assert syncs.dropped == {"no_deployment_observation": 1, "no_hpa_status": 1}


def test_align_a_status_write_after_the_next_read_goes_to_that_next_sync():
    # documented limit: the write of sync 0 observed at 3.2 s, after sync 1 read at 3.0 s
    syncs = align_syncs([read(0.0), read(3.0)], [(-1.0, 1, 1)], [(-5.0, 1), (3.2, 5)], sync_period_s=3)
    assert [s.real_desired for s in syncs] == [1, 5]


def test_align_window_ends_at_nine_tenths_of_the_sync_period():
    hpa = [(-1.0, 1), (2.6, 4), (2.8, 6)]  # 2.8 s > 0.9 * 3 s: outside the last read's window
    syncs = align_syncs([read(0.0)], [(-1.0, 1, 1)], hpa, sync_period_s=3)
    assert [s.real_desired for s in syncs] == [4]


def test_align_keeps_only_the_hpa_metric_and_selector():
    spec = hpa_spec_view(KEDA_HPA)
    reads = [read(0.0), read(0.5, metric="s1-kafka-other"), read(1.0, selector="scaledobject.keda.sh/name=other"),
             read(3.0, total=None, selector=" scaledobject.keda.sh/name=lagscale-consumer")]
    syncs = align_syncs(reads, [(-1.0, 1, 1)], [(-1.0, 1)], sync_period_s=3, spec=spec)
    assert [(s.t_s, s.metric_total) for s in syncs] == [(0.0, 1000.0), (3.0, None)]


def test_align_refuses_a_non_positive_sync_period():
    with pytest.raises(ValueError, match=r"^sync_period_s: 0 must be > 0 seconds$"):
        align_syncs([], [], [], sync_period_s=0)
