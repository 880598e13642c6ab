"""docs/semantics.md §2.2, §2.5 and §4.7: KEDA fallback and the activation step."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_lagscale.control.keda import ActivationLoop, ActivationSpec, Fallback, MetricTarget
from pytest_lagscale.contract.errors import ConfigError

AVERAGE_10 = MetricTarget("AverageValue", 10.0)


@pytest.mark.parametrize(("stored", "failures", "value", "active"), [
    pytest.param(3, 4, 100.0, True, id="4.7-stored3-fails-fallback-value-100"),
    pytest.param(0, 1, None, False, id="4.7-stored0-fails-error-to-caller"),
])
def test_4_7_fallback(stored: int, failures: int, value: float | None, active: bool) -> None:
    fallback = Fallback(failure_threshold=3, replicas=10, failures=stored)
    outcome = fallback.on_failure(AVERAGE_10, current_replicas=4)
    assert (outcome.failures, outcome.metric_value, outcome.active) == (failures, value, active)
    assert fallback.health == "Failing"


@pytest.mark.parametrize(("behavior", "current", "replicas"), [
    pytest.param("static", 4, 10, id="2.5-behavior-static"),
    pytest.param("currentReplicas", 4, 4, id="2.5-behavior-current-replicas"),
    pytest.param("currentReplicasIfHigher", 12, 12, id="2.5-behavior-if-higher-current"),
    pytest.param("currentReplicasIfHigher", 4, 10, id="2.5-behavior-if-higher-fallback"),
    pytest.param("currentReplicasIfLower", 4, 4, id="2.5-behavior-if-lower-current"),
    pytest.param("currentReplicasIfLower", 12, 10, id="2.5-behavior-if-lower-fallback"),
])
def test_2_5_fallback_behaviors(behavior: str, current: int, replicas: int) -> None:
    outcome = Fallback(0, 10, behavior).on_failure(AVERAGE_10, current_replicas=current)
    assert (outcome.replicas, outcome.metric_value) == (replicas, 10.0 * replicas)


def test_2_5_value_target_divides_by_ready_pods() -> None:
    outcome = Fallback(0, 10).on_failure(MetricTarget("Value", 50.0), current_replicas=5, ready_replicas=4)
    assert outcome.metric_value == 50.0 * 10 / 4


def test_2_5_success_resets_failures() -> None:
    fallback = Fallback(1, 3, failures=5)
    fallback.on_success()
    assert (fallback.failures, fallback.health) == (0, "Happy")


def test_2_5_fallback_errors() -> None:
    with pytest.raises(ConfigError) as info:
        Fallback(-1, 3, "sometimes")
    assert info.value.problems == [
        "'failureThreshold': got -1, expected an integer >= 0 in fallback; pass 0 or more",
        "'behavior': got 'sometimes', expected one of static, currentReplicas, currentReplicasIfHigher, "
        "currentReplicasIfLower in fallback; use 'static'",
    ]


@dataclass(frozen=True)
class ActivationCase:
    # spec
    spec: ActivationSpec
    # world state
    last_active_s: float | None
    current: int
    # arguments
    now_s: float
    active: bool
    error: bool
    # expected
    replicas: int
    reason: str
    last_active_after: float | None


MIN0 = ActivationSpec(min_replica_count=0, cooldown_period_s=60.0)
MIN2 = ActivationSpec(min_replica_count=2, cooldown_period_s=60.0)
IDLE = ActivationSpec(min_replica_count=2, idle_replica_count=0, cooldown_period_s=60.0)
FALLBACK = ActivationSpec(min_replica_count=0, cooldown_period_s=60.0, fallback_replicas=3)
INITIAL = ActivationSpec(min_replica_count=0, cooldown_period_s=60.0, initial_cooldown_period_s=30.0,
                         created_at_s=100.0)

ACTIVATION = [
    pytest.param(ActivationCase(MIN0, None, 0, 100.0, True, False, 1, "ScaledFromZero", 100.0),
                 id="2.2-active-from-zero-min0-to-1"),
    pytest.param(ActivationCase(MIN2, None, 0, 100.0, True, False, 2, "ScaledFromZero", 100.0),
                 id="2.2-active-from-zero-to-min"),
    pytest.param(ActivationCase(IDLE, None, 0, 100.0, True, False, 2, "ScaledFromZero", 100.0),
                 id="2.2-active-from-idle-zero-to-min"),
    pytest.param(ActivationCase(IDLE, 50.0, 1, 100.0, True, False, 2, "ScaledFromIdle", 100.0),
                 id="2.2-active-idle-set-below-min"),
    pytest.param(ActivationCase(MIN0, 50.0, 4, 100.0, True, True, 4, "ActiveWithError", 50.0),
                 id="2.2-active-with-error-keeps-last-active"),
    pytest.param(ActivationCase(MIN0, 50.0, 4, 100.0, True, False, 4, "Active", 100.0),
                 id="2.2-active-refreshes-last-active"),
    pytest.param(ActivationCase(FALLBACK, 50.0, 4, 200.0, False, True, 4, "FallbackPending", 50.0),
                 id="2.2-inactive-error-with-fallback-nothing"),
    pytest.param(ActivationCase(MIN0, 50.0, 4, 200.0, False, True, 4, "TriggerError", 50.0),
                 id="2.2-inactive-error-no-fallback-nothing"),
    pytest.param(ActivationCase(MIN0, 50.0, 4, 100.0, False, False, 4, "CoolingDown", 50.0),
                 id="2.2-inactive-cooling-down"),
    pytest.param(ActivationCase(MIN0, 50.0, 4, 110.0, False, False, 4, "CoolingDown", 50.0),
                 id="2.2-cooldown-boundary-strict"),
    pytest.param(ActivationCase(MIN0, 50.0, 4, 110.5, False, False, 0, "ScaledToMin", 50.0),
                 id="2.2-cooldown-only-to-zero"),
    pytest.param(ActivationCase(IDLE, 50.0, 3, 111.0, False, False, 0, "ScaledToIdle", 50.0),
                 id="2.2-inactive-to-idle"),
    pytest.param(ActivationCase(INITIAL, None, 4, 120.0, False, False, 4, "CoolingDown", None),
                 id="2.2-never-active-initial-cooldown"),
    pytest.param(ActivationCase(INITIAL, None, 4, 131.0, False, False, 0, "ScaledToMin", None),
                 id="2.2-never-active-after-initial-cooldown"),
    pytest.param(ActivationCase(MIN2, 50.0, 1, 200.0, False, False, 2, "ScaledUpToMin", 50.0),
                 id="2.2-inactive-below-min-raised"),
    pytest.param(ActivationCase(MIN2, 50.0, 5, 200.0, False, False, 5, "Idle", 50.0),
                 id="2.2-inactive-min2-hpa-owns-n-to-min"),
    pytest.param(ActivationCase(MIN0, 50.0, 0, 200.0, False, False, 0, "Idle", 50.0),
                 id="2.2-inactive-at-zero-stays"),
]


@pytest.mark.parametrize("case", ACTIVATION)
def test_2_2_activation(case: ActivationCase) -> None:
    loop = ActivationLoop(case.spec, last_active_s=case.last_active_s)
    decision = loop.step(case.now_s, case.active, case.error, case.current)
    assert (decision.replicas, decision.reason, decision.last_active_s) == (
        case.replicas, case.reason, case.last_active_after)
    assert decision.changed is (case.replicas != case.current)


def test_2_1_idle_must_be_below_min() -> None:
    with pytest.raises(ConfigError) as info:
        ActivationLoop(ActivationSpec(min_replica_count=1, idle_replica_count=1))
    assert str(info.value) == ("'idleReplicaCount': got 1, expected >= 0 and < minReplicaCount (1) in "
                               "ActivationSpec; use idleReplicaCount 0 with minReplicaCount >= 1")
