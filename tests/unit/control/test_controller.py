"""The pure controller step: docs/semantics.md §2.2-§2.5, §3.2 wired together, and the §4.8 end-to-end vectors."""

from __future__ import annotations

import copy
from dataclasses import asdict
from pathlib import Path

import pytest

from pytest_lagscale.config.hpa import load_cpu_hpa
from pytest_lagscale.config.scaledobject import load_scaled_object, parse_scaled_object
from pytest_lagscale.control.controller import Observation, ScalingController
from pytest_lagscale.control.hpa import PodCpu

K8S = Path(__file__).resolve().parents[3] / "k8s"

E2E_DOC = {
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledObject",
    "metadata": {"name": "kafka-test", "annotations": {"lagscale.dev/hpa-sync-period-seconds": "15"}},
    "spec": {
        "scaleTargetRef": {"name": "consumer"},
        "pollingInterval": 5,
        "cooldownPeriod": 0,
        "minReplicaCount": 0,
        "maxReplicaCount": 20,
        "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0,
                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
            "scaleDown": {"stabilizationWindowSeconds": 0,
                          "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
        }}},
        "triggers": [{"type": "kafka", "metadata": {
            "bootstrapServers": "kafka:9092", "consumerGroup": "g", "topic": "t", "lagThreshold": "1",
            "activationLagThreshold": "1", "offsetResetPolicy": "earliest"}}],
    },
}


def e2e_controller(**metadata: str) -> ScalingController:
    doc = copy.deepcopy(E2E_DOC)
    doc["spec"]["triggers"][0]["metadata"].update(metadata)
    return ScalingController.from_scaled_object(parse_scaled_object(doc, source="e2e"))


def simulate(controller: ScalingController, offsets: dict, until_s: int, replicas: int = 0) -> int:
    """Poll every pollingInterval and sync every sync period (both from t=0), 1 s resolution."""
    poll_every, sync_every = int(controller.polling_interval_s or 0), int(controller.sync_period_s)
    for t in range(until_s + 1):
        if t % poll_every == 0:
            replicas = controller.poll(float(t), Observation(replicas, offsets)).replicas_after
        if t % sync_every == 0:
            replicas = controller.sync(float(t), Observation(replicas, offsets)).replicas_after
    return replicas


def uncommitted(*messages: int) -> dict:
    """Nothing committed (earliest): partition p holds messages[p] records."""
    return {p: (-1, n) for p, n in enumerate(messages)}


@pytest.mark.parametrize(("offsets", "replicas"), [
    pytest.param(uncommitted(0, 0, 0), 0, id="4.8-earliest-0-messages-0-replicas"),
    pytest.param(uncommitted(1, 0, 0), 0, id="4.8-earliest-1-message-not-above-activation"),
    pytest.param(uncommitted(1, 1, 0), 2, id="4.8-earliest-2-messages-2-replicas"),
    pytest.param(uncommitted(3, 2, 2), 3, id="4.8-earliest-7-messages-capped-at-3"),
])
def test_4_8_end_to_end_three_partitions(offsets: dict, replicas: int) -> None:
    assert simulate(e2e_controller(), offsets, until_s=90) == replicas


@pytest.mark.parametrize(("lag", "replicas"), [
    pytest.param(1, 0, id="4.8-even-lag1-0-replicas"),
    pytest.param(5, 5, id="4.8-even-lag5-5-replicas"),
    pytest.param(8, 10, id="4.8-even-lag8-factor10-10-replicas"),
])
def test_4_8_end_to_end_even_distribution(lag: int, replicas: int) -> None:
    offsets = uncommitted(lag, *[0] * 9)
    controller = e2e_controller(ensureEvenDistributionOfPartitions="true")
    assert simulate(controller, offsets, until_s=120) == replicas


def test_2_2_drained_lag_scales_back_to_zero() -> None:
    controller = e2e_controller()
    replicas = simulate(controller, uncommitted(3, 2, 2), until_s=60)
    drained = {p: (n, n) for p, (_, n) in uncommitted(3, 2, 2).items()}
    poll = controller.poll(61.0, Observation(replicas, drained))
    assert (replicas, poll.is_active, poll.reason, poll.replicas_after) == (3, False, "ScaledToMin", 0)
    sync = controller.sync(75.0, Observation(0, drained))
    assert (sync.reason, sync.triggers, sync.replicas_after) == ("ScalingDisabled", (), 0)


def test_committed_ci_manifest_poll_and_sync() -> None:
    controller = ScalingController.from_scaled_object(load_scaled_object(K8S / "scaledobject-ci.yaml"))
    assert (controller.polling_interval_s, controller.sync_period_s) == (2.0, 3.0)
    offsets = {p: (1000, 1000 + 400 * p) for p in range(8)}
    poll = controller.poll(0.0, Observation(1, offsets))
    assert (poll.is_active, poll.reason, poll.replicas_after) == (True, "Active", 1)
    sync = controller.sync(0.0, Observation(1, offsets))
    evaluation = sync.triggers[0]
    assert evaluation.metric_name == "s0-kafka-events"
    assert (evaluation.total_lag_with_persistent, evaluation.total_lag) == (11200, 4000)
    assert (evaluation.metric_value, evaluation.proposal) == (4000.0, 8)
    assert evaluation.partition_lag == {p: 400 * p for p in range(8)}
    assert (sync.proposal, sync.replicas_after, sync.reason, sync.limited) == (8, 5, "ScaleUpLimit", True)
    assert asdict(sync)["hpa"]["recommendation"] == 8


def test_2_5_fallback_through_controller() -> None:
    """failureThreshold 3, replicas 2: three failed reads are errors, the fourth uses target x 2."""
    controller = ScalingController.from_scaled_object(load_scaled_object(K8S / "scaledobject-ci.yaml"))
    polls = [controller.poll(float(t), Observation(4, None)) for t in (0, 2, 4)]
    assert [(p.is_error, p.reason, p.triggers[0].failures) for p in polls] == [
        (True, "FallbackPending", 1), (True, "FallbackPending", 2), (True, "FallbackPending", 3)]
    sync = controller.sync(6.0, Observation(4, None))
    evaluation = sync.triggers[0]
    assert (evaluation.fallback_active, evaluation.metric_value, evaluation.error, evaluation.failures) == (
        True, 1000.0, None, 4)
    assert (sync.proposal, sync.replicas_after) == (2, 4)
    recovered = controller.poll(8.0, Observation(4, {0: (0, 0)}))
    assert (recovered.triggers[0].failures, recovered.is_error) == (0, False)


def test_2_4_use_cached_metrics_reads_last_poll() -> None:
    doc = copy.deepcopy(E2E_DOC)
    doc["spec"]["triggers"][0]["useCachedMetrics"] = True
    controller = ScalingController.from_scaled_object(parse_scaled_object(doc))
    controller.poll(0.0, Observation(1, uncommitted(2, 0, 0)))
    sync = controller.sync(1.0, Observation(1, uncommitted(3, 3, 3)))
    assert (sync.triggers[0].cached, sync.triggers[0].metric_value, sync.proposal) == (True, 2.0, 2)


def test_2_2_error_without_fallback_is_reported() -> None:
    controller = e2e_controller()
    poll = controller.poll(0.0, Observation(2, None))
    assert (poll.is_error, poll.reason, poll.triggers[0].error) == (True, "TriggerError",
                                                                   "consumer lag could not be read")
    sync = controller.sync(0.0, Observation(2, None))
    assert (sync.proposal, sync.reason, sync.replicas_after) == (None, "FailedComputeMetricsReplicas", 2)


def test_cpu_hpa_controller_from_committed_manifest() -> None:
    controller = ScalingController.from_cpu_hpa(load_cpu_hpa(K8S / "hpa-cpu-ci.yaml"))
    pods = tuple(PodCpu(usage_millicores=490, request_millicores=500) for _ in range(2))
    poll = controller.poll(0.0, Observation(2))
    assert (poll.reason, poll.replicas_after) == ("NoPollingLoop", 2)
    sync = controller.sync(0.0, Observation(2, cpu_pods=pods))
    assert (sync.triggers[0].metric_value, sync.proposal, sync.replicas_after) == (98.0, 3, 3)
    missing = controller.sync(3.0, Observation(3))
    assert (missing.proposal, missing.reason) == (None, "FailedComputeMetricsReplicas")


@pytest.mark.parametrize(("sync_offsets", "metric_value"), [
    pytest.param({0: (5, 10), 1: (0, 0), 2: (0, 0)}, 0.0, id="1.3-quirk-persistent-state-shared-by-poll-and-sync"),
    pytest.param({0: (6, 10), 1: (0, 0), 2: (0, 0)}, 4.0, id="1.3-committed-moved-counts-again"),
])
def test_1_3_exclude_persistent_lag_across_poll_and_sync(sync_offsets: dict, metric_value: float) -> None:
    """The polling loop and the HPA's metric read share one scaler, so one poll marks lag persistent."""
    controller = e2e_controller(excludePersistentLag="true", lagThreshold="10")
    poll = controller.poll(0.0, Observation(1, {0: (5, 10), 1: (0, 0), 2: (0, 0)}))
    sync = controller.sync(1.0, Observation(1, sync_offsets))
    assert (poll.triggers[0].metric_value, sync.triggers[0].metric_value) == (5.0, metric_value)
    assert asdict(poll)["triggers"][0]["partition_lag"] == {0: 5, 1: 0, 2: 0}
