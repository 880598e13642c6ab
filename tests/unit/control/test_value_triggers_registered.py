"""The prometheus, aws-cloudwatch and metrics-api triggers in a ScaledObject, run by the KEDA+HPA
policy on the readings the runner fetched (``observation.values``); the reader's address mapping."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pytest_lagscale.config.scaledobject import parse_scaled_object
from pytest_lagscale.control.keda.registry import TRIGGERS
from pytest_lagscale.control.observation import Observation, ValueReading
from pytest_lagscale.control.policy.keda_hpa import KedaHpaPolicy
from pytest_lagscale.platform.value_triggers import RunServices

PROMETHEUS = {"type": "prometheus", "metadata": {
    "serverAddress": "http://prometheus.monitoring:9090", "threshold": "500", "activationThreshold": "50",
    "query": 'sum(kafka_consumergroup_lag{consumergroup="enrich",topic="events"})'}}
CLOUDWATCH = {"type": "aws-cloudwatch", "metadata": {
    "namespace": "AWS/Kafka", "metricName": "SumOffsetLag", "dimensionName": "Cluster Name;Consumer Group;Topic",
    "dimensionValue": "lagscale-msk;enrich;events", "metricStat": "Maximum", "metricStatPeriod": "10",
    "metricCollectionTime": "60", "targetMetricValue": "500", "activationTargetMetricValue": "50",
    "minMetricValue": "0", "awsRegion": "us-east-1", "identityOwner": "operator"}}


def policy_of(trigger: dict) -> KedaHpaPolicy:
    so = parse_scaled_object({
        "apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
        "metadata": {"name": "c", "annotations": {"lagscale.dev/hpa-sync-period-seconds": "3"}},
        "spec": {"scaleTargetRef": {"name": "c"}, "pollingInterval": 2, "minReplicaCount": 1,
                 "maxReplicaCount": 8, "triggers": [trigger]}})
    return KedaHpaPolicy.from_scaled_object(so)


def vector(value: float) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, str(value)]}]}}


def test_registered() -> None:
    assert {"prometheus", "aws-cloudwatch", "metrics-api"} <= set(TRIGGERS)


@pytest.mark.parametrize(("trigger", "response"), [
    pytest.param(PROMETHEUS, vector(1600), id="prometheus-spec-3.3-average-value-ceil"),
    pytest.param(CLOUDWATCH, {"MetricDataResults": [{"Id": "c1", "Values": [1600.0]}]},
                 id="aws-cloudwatch-spec-3.3-average-value-ceil"),
])
def test_policy_scales_to_ceil_value_over_threshold(trigger: dict, response: dict) -> None:
    policy = policy_of(trigger)
    assert [t.type_name for t in policy.value_triggers] == [trigger["type"]]
    assert policy.needs_lag is False
    values = {0: ValueReading(response=response)}
    policy.decide(Observation(1, values=values), 0.0)
    decision = policy.decide(Observation(1, values=values), 3.0)
    assert decision.desired_replicas == 4  # ceil(1600 / 500), not round
    assert decision.steps[-1].triggers[0].metric_value == 1600.0


def test_below_activation_is_inactive_and_a_failed_read_is_a_trigger_error() -> None:
    policy = policy_of(PROMETHEUS)
    poll = policy.decide(Observation(1, values={0: ValueReading(response=vector(40))}), 0.0).steps[0]
    assert poll.triggers[0].active is False
    poll = policy.decide(Observation(1, values={0: ValueReading(error="GET failed")}), 2.0).steps[0]
    assert poll.triggers[0].error == "prometheus trigger 0: GET failed"
    poll = policy.decide(Observation(1), 4.0).steps[0]
    assert poll.triggers[0].error == "prometheus trigger 0: not read"


def test_run_services_map_group_topic_and_dimensions() -> None:
    services = RunServices(prometheus_url="http://127.0.0.1:9", aws_endpoint="http://127.0.0.1:7",
                           cluster_name="lagscale", group="enrich-r1", topic="events-r1",
                           manifest_group="enrich", manifest_topic="events")
    assert services.query(PROMETHEUS["metadata"]["query"]) == \
        'sum(kafka_consumergroup_lag{consumergroup="enrich-r1",topic="events-r1"})'
    assert services.dimensions([("Cluster Name", "x"), ("Consumer Group", "enrich"), ("Topic", "events"),
                                ("Other", "o")]) == [
        {"Name": "Cluster Name", "Value": "lagscale"}, {"Name": "Consumer Group", "Value": "enrich-r1"},
        {"Name": "Topic", "Value": "events-r1"}, {"Name": "Other", "Value": "o"}]
    rows = services.mapping(policy_of(PROMETHEUS).value_triggers + policy_of(CLOUDWATCH).value_triggers)
    assert rows == [
        {"trigger_index": 0, "type": "prometheus", "manifest": "http://prometheus.monitoring:9090",
         "run": "http://127.0.0.1:9"},
        {"trigger_index": 0, "type": "aws-cloudwatch", "manifest": "aws", "run": "http://127.0.0.1:7"}]


def test_value_reader_prometheus_dates_the_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_lagscale.platform import value_triggers as vt

    now = datetime(2026, 11, 26, 4, 0, 10, tzinfo=timezone.utc)
    answer = {"status": "success", "data": {"result": [{"metric": {}, "value": [now.timestamp() - 1.5, "7"]}]}}
    seen = []
    monkeypatch.setattr(vt, "_get", lambda url, timeout_s: seen.append(url) or __import__("json").dumps(answer))
    reader = vt.ValueTriggerReader(RunServices(prometheus_url="http://127.0.0.1:9", group="g2", topic="t",
                                               manifest_group="enrich", manifest_topic="t"),
                                   utc_clock=lambda: now)
    reading = reader.read(policy_of(PROMETHEUS).value_triggers)[0]
    assert reading.error is None and reading.staleness_s == 1.5
    assert "consumergroup%3D%22g2%22" in seen[0] and seen[0].startswith("http://127.0.0.1:9/api/v1/query?")
    no_prometheus = vt.ValueTriggerReader(RunServices()).read(policy_of(PROMETHEUS).value_triggers)[0]
    assert no_prometheus.error == "the run has no Prometheus yet"


METRICS_API = {"type": "metrics-api", "metadata": {
    "url": "http://consumer-health.default:8080/health", "valueLocation": "lag.total", "targetValue": "500",
    "activationTargetValue": "50"}}


def test_metrics_api_trigger_runs_from_its_endpoint_to_a_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """The metrics-api trigger end to end: the reader GETs ``url`` as written, the trigger reads the
    number at ``valueLocation``, the policy scales to ceil(value / targetValue)."""
    from pytest_lagscale.platform import value_triggers as vt

    seen = []
    monkeypatch.setattr(vt, "_get", lambda url, timeout_s: seen.append((url, timeout_s)) or b'{"lag": {"total": 1600}}')
    policy = policy_of(METRICS_API)
    assert [(t.type_name, t.metric_name) for t in policy.value_triggers] == [("metrics-api", "s0-metric-api-lag-total")]
    values = vt.ValueTriggerReader(RunServices()).read(policy.value_triggers)
    assert seen == [("http://consumer-health.default:8080/health", None)]
    assert values[0].error is None and values[0].staleness_s is None
    policy.decide(Observation(1, values=values), 0.0)
    decision = policy.decide(Observation(1, values=values), 3.0)
    assert decision.desired_replicas == 4  # ceil(1600 / 500)
    assert RunServices().mapping(policy.value_triggers)[0]["run"] == "http://consumer-health.default:8080/health"
