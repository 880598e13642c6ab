"""docs/semantics.md §3.3 for a ``type: Pods`` metric (calcPlainMetricReplicas): the ratio of the integer mean
to the target, the tolerance, missing pods (0 up / target down), pending pods, and the policy
built from the committed hpa-pods-lag manifests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_lagscale.config.hpa import load_hpa
from pytest_lagscale.control import hpa
from pytest_lagscale.control.hpa import PodMetric
from pytest_lagscale.control.observation import Observation
from pytest_lagscale.control.policy import KedaHpaPolicy, ScalingPolicy

K8S = Path(__file__).resolve().parents[3] / "k8s"
PENDING = object()


@dataclass(frozen=True)
class Case:
    # arguments: per-pod values in milli-units (None = missing, PENDING = phase Pending)
    values: tuple
    target_milli: int
    # world state
    current: int
    # expected
    proposal: int
    tolerance: float = 0.1


def _pods(values: tuple) -> tuple[PodMetric, ...]:
    return tuple(PodMetric(None, pending=True) if v is PENDING else
                 PodMetric(v[1], pending=True) if isinstance(v, tuple) else PodMetric(v) for v in values)


CASES = [
    # kubernetes replica_calculator_test.go v1.28.0 (podMetric cases)
    pytest.param(Case((20000, 10000, 30000), 15000, current=3, proposal=4), id="3.3-TestReplicaCalcScaleUpCM"),
    pytest.param(Case((50000, 10000, 30000), 15000, current=3, proposal=6),
                 id="3.3-TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale-running-unready-pods-count"),
    pytest.param(Case((50000, 15000, 30000), 15000, current=3, proposal=7),
                 id="3.3-TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown-mean-31666"),
    pytest.param(Case((12000,) * 5, 20000, current=5, proposal=3), id="3.3-TestReplicaCalcScaleDownCM"),
    pytest.param(Case((20000, 21000, 21000), 20000, current=3, proposal=3),
                 id="3.3-TestReplicaCalcToleranceCM-ratio-1.033"),
    # tolerance band edges
    pytest.param(Case((18000,) * 10, 20000, current=10, proposal=10), id="3.3-tolerance-ratio-0.9-stays"),
    pytest.param(Case((17800,) * 10, 20000, current=10, proposal=9), id="3.3-tolerance-ratio-0.89-scales-down"),
    pytest.param(Case((22000,) * 3, 20000, current=3, proposal=4), id="3.3-quirk-ratio-1.1-scales"),
    pytest.param(Case((10000, 10000, 10002), 10000, current=3, proposal=3, tolerance=0.0),
                 id="3.3-integer-mean-truncates-10000.67-to-10000"),
    # missing pods (no value: a new replica that owns no partition yet)
    pytest.param(Case((90000, None), 10000, current=2, proposal=9), id="3.3-missing-counts-0-on-scale-up"),
    pytest.param(Case((21000, None), 10000, current=1, proposal=1),
                 id="3.3-missing-at-0-brings-ratio-into-tolerance"),
    pytest.param(Case((12000, None), 10000, current=1, proposal=1),
                 id="3.3-missing-at-0-turns-the-ratio-below-1-no-scale-up"),
    pytest.param(Case((12000, None, None, None), 10000, current=4, proposal=4),
                 id="3.3-missing-at-0-would-flip-direction-no-scale-down"),
    pytest.param(Case((1000, 1000, 1000, None), 10000, current=4, proposal=2),
                 id="3.3-missing-counts-target-on-scale-down"),
    pytest.param(Case((5000, None, None), 10000, current=1, proposal=1),
                 id="3.3-missing-count-would-scale-up-on-a-scale-down-ratio-no-change"),
    pytest.param(Case((10000, None), 10000, current=2, proposal=2), id="3.3-missing-at-ratio-exactly-1-not-filled"),
    # pending pods (phase Pending: counted as 0 on the way up, left out on the way down)
    pytest.param(Case((30000, PENDING), 10000, current=2, proposal=3), id="3.3-pending-counts-0-on-scale-up"),
    pytest.param(Case((21000, PENDING), 10000, current=1, proposal=1),
                 id="3.3-pending-at-0-brings-ratio-into-tolerance"),
    pytest.param(Case((5000, PENDING), 10000, current=2, proposal=1), id="3.3-pending-left-out-on-scale-down"),
    pytest.param(Case(((None, 90000), 5000), 10000, current=2, proposal=1),
                 id="3.3-pending-pods-value-is-ignored"),
]


@pytest.mark.parametrize("case", CASES)
def test_3_3_pods_metric_proposal(case: Case) -> None:
    assert hpa.proposal_for_pods_metric(_pods(case.values), case.target_milli, case.current,
                                        case.tolerance) == case.proposal


@pytest.mark.parametrize(("values", "message"), [
    pytest.param((), "no pods returned by selector while calculating replica count", id="no-pods"),
    pytest.param((None, None), "did not receive metrics for targeted pods (pods might be unready)",
                 id="every-pod-missing"),
    pytest.param((PENDING, (None, 5)), "did not receive metrics for targeted pods (pods might be unready)",
                 id="every-pod-pending"),
])
def test_pods_metric_without_values_is_invalid(values: tuple, message: str) -> None:
    with pytest.raises(hpa.MetricError) as info:
        hpa.proposal_for_pods_metric(_pods(values), 10000, 2)
    assert str(info.value) == message


def ci_policy() -> KedaHpaPolicy:
    return KedaHpaPolicy.from_hpa(load_hpa(K8S / "hpa-pods-lag-ci.yaml"))


def test_the_committed_pods_policy_reads_pod_metrics_only() -> None:
    policy = ci_policy()
    assert isinstance(policy, ScalingPolicy)
    assert (policy.name, policy.needs_lag, policy.needs_cpu, policy.needs_pod_metrics) == ("hpa", False, False, True)
    assert (policy.pod_metric_name, policy.min_replicas, policy.max_replicas) == ("consumer_records_lag", 1, 8)
    assert policy.lag_threshold_records is None and policy.polling_interval_s is None


def _lag(*records: int | None) -> tuple[PodMetric, ...]:
    return tuple(PodMetric(None if r is None else r * 1000) for r in records)


def test_the_ci_policy_scales_on_the_pods_reported_lag() -> None:
    """Sync every 3 s; scale-up limited to max(+4 pods, +100 %) per 5 s; averageValue 2000."""
    policy = ci_policy()
    assert policy.decide(Observation(1, pod_metrics=_lag(9000)), 0.0).steps == ()
    up = policy.decide(Observation(1, pod_metrics=_lag(9000)), 3.0)
    assert (up.desired_replicas, up.reason) == (5, "DesiredWithinRange")
    sync = up.steps[0]
    assert (sync.proposal, sync.triggers[0].metric_value, sync.triggers[0].metric_name) == (5, 9000.0,
                                                                                        "consumer_records_lag")
    # the new replicas own nothing yet: missing, counted as 0 -> mean 3000 -> ratio 1.5 -> ceil(7.5)
    more = policy.decide(Observation(5, pod_metrics=_lag(15000, None, None, None, None)), 6.0)
    assert (more.steps[0].proposal, more.desired_replicas) == (8, None)  # rate limit: +4 per 5 s from 5 at 3 s
    later = policy.decide(Observation(5, pod_metrics=_lag(15000, None, None, None, None)), 9.0)
    assert later.desired_replicas == 8


def test_unreadable_pod_metrics_change_nothing() -> None:
    policy = ci_policy()
    policy.decide(Observation(2, pod_metrics=None), 0.0)
    decision = policy.decide(Observation(2, pod_metrics=None), 3.0)
    step = decision.steps[0]
    assert (decision.desired_replicas, step.reason, step.triggers[0].error) == (
        None, "FailedComputeMetricsReplicas", "pods metric 'consumer_records_lag': no per-pod values this step")
