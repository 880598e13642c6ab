"""KEDA's prometheus, aws-cloudwatch and metrics-api triggers: metadata with KEDA's rules (v2.20.2)
and a reading -> metric value, activity and the HPA's proposal."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pytest

from pytest_lagscale.config._problems import Problems
from pytest_lagscale.config.trigger_metadata import TRIGGER_TYPES
from pytest_lagscale.config.trigger_metadata.aws_cloudwatch import parse_cloudwatch_metadata
from pytest_lagscale.config.trigger_metadata.metrics_api import parse_metrics_api_metadata
from pytest_lagscale.config.trigger_metadata.prometheus import parse_prometheus_metadata
from pytest_lagscale.control.keda.aws_cloudwatch import (CloudWatchTrigger, get_metric_data_request, query_window,
                                                         value_from_metric_data)
from pytest_lagscale.control.keda.base import TriggerError
from pytest_lagscale.control.keda.metrics_api import MetricsApiTrigger, gjson_get, parse_quantity, value_from_json
from pytest_lagscale.control.keda.prometheus import PrometheusTrigger, value_from_query_result
from pytest_lagscale.control.keda.value_trigger import milli_quantity
from pytest_lagscale.control.observation import Observation
from pytest_lagscale.contract.errors import ConfigError

PATH = "spec.triggers[0].metadata"
PROM = {"serverAddress": "http://prometheus.monitoring:9090",
        "query": 'sum(kafka_consumergroup_lag{consumergroup="enrich",topic="events"})', "threshold": "1000"}
CW = {"namespace": "AWS/Kafka", "metricName": "SumOffsetLag", "dimensionName": "Cluster Name;Consumer Group;Topic",
      "dimensionValue": "lagscale-msk;enrich;events", "metricStat": "Maximum", "metricStatPeriod": "60",
      "targetMetricValue": "1000", "minMetricValue": "0", "awsRegion": "eu-west-1", "identityOwner": "operator"}
API = {"url": "http://consumer-health.default:8080/health", "valueLocation": "lag.total", "targetValue": "1000"}


@dataclass(frozen=True)
class Case:
    """A metadata case: the change to the base metadata (None deletes a key), has an
    authenticationRef, and the expected problem lines (without the source)."""

    change: dict[str, Any] = field(default_factory=dict)
    auth_ref: bool = False
    problems: tuple[str, ...] = ()


def case(change: dict[str, Any] | None = None, auth_ref: bool = False, *, id: str,  # noqa: A002
         problems: tuple[str, ...] = ()) -> Any:
    """One metadata case as a pytest param."""
    return pytest.param(Case(change or {}, auth_ref, problems), id=id)


def problems(parse, base: dict, case: Case) -> list[str]:  # noqa: ANN001
    metadata = {k: v for k, v in {**base, **case.change}.items() if v is not None}
    try:
        parse(metadata, path=PATH, source="so.yaml", has_authentication_ref=case.auth_ref)
    except ConfigError as exc:
        return [line.replace(" in so.yaml;", ";") for line in exc.problems]
    return []


@pytest.mark.parametrize("case", [
    case(id="prometheus-scaler-minimal"),
    case({"threshold": None}, id="prometheus-threshold-required", problems=(
        f"'{PATH}.threshold': got no value, expected a number written as JSON, e.g. '10' or '0.5'; add threshold: '10'",)),
    case({"serverAddress": None, "query": " "}, id="prometheus-server-and-query-required-empty-is-absent",
                 problems=(f"'{PATH}.serverAddress': got no value, expected the Prometheus base URL; add serverAddress: "
                           "'http://prometheus.monitoring:9090'",
                           f"'{PATH}.query': got no value, expected a PromQL expression answering one series; add query: "
                           "'sum(kafka_consumergroup_lag{consumergroup=\"enrich\",topic=\"events\"})'")),
    case({"threshold": "1k"}, id="prometheus-threshold-json-float", problems=(
        f"'{PATH}.threshold': got '1k', expected a number written as JSON, e.g. '10' or '0.5'; write a plain decimal "
        "number such as '10', '0.5' or '1e3'",)),
    case({"threshold": "0"}, id="prometheus-threshold-zero-hpa-refuses", problems=(
        f"'{PATH}.threshold': got '0', expected a number > 0.0005 (the HPA's metric target must be positive; KEDA sends "
        "it as a milli-quantity); set threshold to the per-replica value to scale at, e.g. '10'",)),
    case({"ignoreNullValues": "nope"}, id="prometheus-ignoreNullValues-parsebool", problems=(
        f"'{PATH}.ignoreNullValues': got 'nope', expected a boolean ('true', 'false', '1', '0', 't', 'f' ...); write "
        "'true' or 'false'",)),
    case({"treshold": "5"}, id="prometheus-unknown-key-suggests", problems=(
        f"'{PATH}.treshold': got '5', expected a known key of '{PATH}'; rename it to '{PATH}.threshold'",)),
    case({"authModes": "bearer"}, id="prometheus-bearer-needs-authenticationRef", problems=(
        f"'{PATH}.authModes': got 'bearer', expected an authenticationRef whose TriggerAuthentication holds bearerToken "
        "(needed by auth mode 'bearer'); add authenticationRef naming that TriggerAuthentication",)),
    case({"authModes": "bearer"}, auth_ref=True, id="prometheus-bearer-with-authenticationRef"),
])
def test_prometheus_metadata(case: Case) -> None:
    assert problems(parse_prometheus_metadata, PROM, case) == list(case.problems)


def test_prometheus_defaults_and_secrets() -> None:
    meta = parse_prometheus_metadata({**PROM, "customHeaders": "Authorization=Bearer s3cr3t", "timeout": "2s",
                                      "queryParameters": "dedup=true"})
    assert (meta.threshold, meta.activation_threshold, meta.ignore_null_values, meta.timeout_s,
            dict(meta.query_parameters)) == (1000.0, 0.0, True, 2.0, {"dedup": "true"})
    assert meta.custom_headers == {"Authorization": "Bearer s3cr3t"} and "s3cr3t" not in repr(meta)


def vector(*values: Any) -> dict:
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": {}, "value": [1795652580.1, v]} for v in values]}}


@pytest.mark.parametrize(("response", "ignore_null", "value", "error"), [
    pytest.param(vector("4500"), True, 4500.0, None, id="prometheus-one-series"),
    pytest.param(vector(), True, 0.0, None, id="prometheus-empty-ignoreNullValues"),
    pytest.param(vector(), False, None, "prometheus metrics 'prometheus' target may be lost, the result is empty",
                 id="prometheus-empty-error"),
    pytest.param(vector("NaN"), True, 0.0, None, id="prometheus-nan-ignoreNullValues"),
    pytest.param(vector("+Inf"), False, None, "prometheus query returns +Inf", id="prometheus-inf-error"),
    pytest.param(vector("1", "2"), True, None, "prometheus query q returned multiple elements",
                 id="prometheus-multiple-elements"),
    pytest.param({"data": {"result": [{"metric": {}, "value": [1.0]}]}}, True, None,
                 "prometheus query q didn't return enough values", id="prometheus-short-value"),
])
def test_prometheus_value(response: dict, ignore_null: bool, value: float | None, error: str | None) -> None:
    meta = parse_prometheus_metadata({**PROM, "query": "q", "ignoreNullValues": str(ignore_null).lower()})
    if error is None:
        assert value_from_query_result(response, meta) == value
    else:
        with pytest.raises(TriggerError) as info:
            value_from_query_result(response, meta)
        assert str(info.value) == error


@pytest.mark.parametrize(("value", "current", "active", "proposal"), [
    pytest.param("4500", 2, True, 5, id="prometheus-averagevalue-ceil-4500-over-1000"),
    pytest.param("2050", 2, True, 2, id="prometheus-within-tolerance-holds"),
    pytest.param("0", 3, False, 0, id="prometheus-zero-not-active"),
])
def test_prometheus_metric_activity_proposal(value: str, current: int, active: bool, proposal: int) -> None:
    trigger = PrometheusTrigger(parse_prometheus_metadata(PROM), trigger_index=2)
    result = trigger.evaluate_response(vector(value))
    assert (trigger.metric_name, trigger.metric_target.type, trigger.metric_target.value) == (
        "s2-prometheus", "AverageValue", 1000.0)
    assert (result.metric_value, result.active) == (float(value), active)
    assert trigger.proposal(result.metric_value, Observation(current_replicas=current), 0.1) == proposal


def test_activation_compares_the_raw_value() -> None:
    trigger = PrometheusTrigger(parse_prometheus_metadata({**PROM, "activationThreshold": "0.0001"}))
    result = trigger.result(0.0002)
    assert (result.metric_value, result.active) == (0.0, True)  # milli-quantity 0.000, still active


@pytest.mark.parametrize(("value", "milli"), [
    pytest.param(1.23456, 1.235, id="scaler-quantity-milli-rounding"),
    pytest.param(-3.0, 0.0, id="scaler-quantity-negative-is-zero"),
    pytest.param(float("nan"), 0.0, id="scaler-quantity-nan-is-zero"),
])
def test_milli_quantity(value: float, milli: float) -> None:
    assert milli_quantity(value) == milli


@pytest.mark.parametrize("case", [
    case(id="aws-cloudwatch-recipe-sumoffsetlag"),
    case({"minMetricValue": None, "awsRegion": None}, id="aws-cloudwatch-required-fields", problems=(
        f"'{PATH}.minMetricValue': got no value, expected a number written as JSON, e.g. '10' or '0.5'; add "
        "minMetricValue: '10'",
        f"'{PATH}.awsRegion': got no value, expected an AWS region; add awsRegion: 'us-east-1'")),
    case({"dimensionValue": "lagscale-msk;enrich"}, id="aws-cloudwatch-dimensions-not-matching",
                 problems=(f"'{PATH}.dimensionValue': got 'lagscale-msk;enrich', expected as many ';'-separated values "
                           "as dimensionName has names (3); give one value per dimension name",)),
    case({"namespace": None, "metricName": None, "dimensionName": None, "dimensionValue": None,
          "expression": "SELECT MAX(SumOffsetLag) FROM \"AWS/Kafka\""},
         id="aws-cloudwatch-expression-replaces-the-metric"),
    case({"metricStatPeriod": "45"}, id="aws-cloudwatch-period-under-60-enumerated", problems=(
        f"'{PATH}.metricStatPeriod': got '45', expected 1, 5, 10, 30, 60 or a multiple of 60 (seconds); set "
        "metricStatPeriod: '60'",)),
    case({"metricStatPeriod": "90"}, id="aws-cloudwatch-period-multiple-of-60", problems=(
        f"'{PATH}.metricStatPeriod': got '90', expected 1, 5, 10, 30, 60 or a multiple of 60 (seconds); set "
        "metricStatPeriod: '60'",)),
    case({"metricCollectionTime": "100"}, id="aws-cloudwatch-collection-multiple-of-period", problems=(
        f"'{PATH}.metricCollectionTime': got '100', expected seconds >= 0 and a multiple of metricStatPeriod (60); set "
        "metricCollectionTime: '300'",)),
    case({"metricUnit": "Records"}, id="aws-cloudwatch-standard-unit", problems=(
        f"'{PATH}.metricUnit': got 'Records', expected a CloudWatch StandardUnit ('Count', 'Seconds', ...); use "
        "'Count' or remove metricUnit",)),
    case({"identityOwner": None}, id="aws-cloudwatch-credentials-needed", problems=(
        f"'{PATH}.awsAccessKeyID': got no value, expected an access key id (KEDA: 'awsAccessKeyID not found'), an "
        "authenticationRef, or identityOwner: 'operator'; add authenticationRef naming a TriggerAuthentication with "
        "awsAccessKeyID and awsSecretAccessKey",)),
    case({"identityOwner": None}, auth_ref=True, id="aws-cloudwatch-credentials-from-authenticationRef"),
    case({"identityOwner": "pod", "awsAccessKeyID": "AKIA1"}, id="aws-cloudwatch-secret-from-env-needed",
                 problems=(f"'{PATH}.awsSecretAccessKeyFromEnv': got no value, expected the name of the variable "
                           "holding the secret access key (KEDA: 'awsSecretAccessKey not found'); add "
                           "awsSecretAccessKeyFromEnv: 'AWS_SECRET_ACCESS_KEY'",)),
    case({"identityOwner": "team"}, id="aws-cloudwatch-quirk-identity-owner-other"),
])
def test_cloudwatch_metadata(case: Case) -> None:
    assert problems(parse_cloudwatch_metadata, CW, case) == list(case.problems)


def test_cloudwatch_defaults() -> None:
    meta = parse_cloudwatch_metadata({k: v for k, v in CW.items() if k not in ("metricStat", "metricStatPeriod")})
    assert (meta.metric_stat, meta.metric_stat_period_s, meta.metric_collection_time_s, meta.ignore_null_values,
            meta.activation_target_metric_value) == ("Average", 300, 300, True, 0.0)


NOW = datetime(2026, 11, 26, 0, 26, 10, tzinfo=timezone.utc)


@pytest.mark.parametrize(("change", "start", "end"), [
    pytest.param({}, datetime(2026, 11, 26, 0, 21, tzinfo=timezone.utc), datetime(2026, 11, 26, 0, 26, tzinfo=timezone.utc),
                 id="aws-cloudwatch-window-truncated-to-the-period"),
    pytest.param({"metricEndTimeOffset": "120"}, datetime(2026, 11, 26, 0, 19, tzinfo=timezone.utc),
                 datetime(2026, 11, 26, 0, 24, tzinfo=timezone.utc), id="aws-cloudwatch-window-end-offset"),
    # 7-minute multiples counted from year 1 end at 00:20; counted from the Unix epoch they would end at 00:21
    pytest.param({"metricStatPeriod": "420", "metricCollectionTime": "420"},
                 datetime(2026, 11, 26, 0, 13, tzinfo=timezone.utc), datetime(2026, 11, 26, 0, 20, tzinfo=timezone.utc),
                 id="aws-cloudwatch-quirk-truncate-from-year-one"),
])
def test_cloudwatch_query_window(change: dict, start: datetime, end: datetime) -> None:
    assert query_window(NOW, parse_cloudwatch_metadata({**CW, **change})) == (start, end)


def test_cloudwatch_get_metric_data_request() -> None:
    request = get_metric_data_request(NOW, parse_cloudwatch_metadata({**CW, "awsAccountId": "123456789012"}))
    assert request == {
        "StartTime": datetime(2026, 11, 26, 0, 21, tzinfo=timezone.utc),
        "EndTime": datetime(2026, 11, 26, 0, 26, tzinfo=timezone.utc),
        "ScanBy": "TimestampDescending",
        "MetricDataQueries": [{"Id": "c1", "ReturnData": True, "AccountId": "123456789012", "MetricStat": {
            "Metric": {"Namespace": "AWS/Kafka", "MetricName": "SumOffsetLag", "Dimensions": [
                {"Name": "Cluster Name", "Value": "lagscale-msk"}, {"Name": "Consumer Group", "Value": "enrich"},
                {"Name": "Topic", "Value": "events"}]},
            "Period": 60, "Stat": "Maximum"}}]}


@pytest.mark.parametrize(("response", "change", "value", "error"), [
    pytest.param({"MetricDataResults": [{"Id": "c1", "Values": [3400.0, 1200.0]}]}, {}, 3400.0, None,
                 id="aws-cloudwatch-newest-value-first"),
    pytest.param({"MetricDataResults": [{"Id": "c1", "Values": []}]}, {"minMetricValue": "7"}, 7.0, None,
                 id="aws-cloudwatch-empty-is-minMetricValue"),
    pytest.param({"MetricDataResults": []}, {"ignoreNullValues": "false"}, 0.0, None,
                 id="aws-cloudwatch-quirk-no-result-at-all-is-minMetricValue-even-without-ignoreNullValues"),
    pytest.param({"MetricDataResults": [{"Id": "c1", "Values": []}]}, {"ignoreNullValues": "false"}, None,
                 "empty metric data received, ignoreNullValues is false, returning error",
                 id="aws-cloudwatch-empty-error"),
])
def test_cloudwatch_value(response: dict, change: dict, value: float | None, error: str | None) -> None:
    meta = parse_cloudwatch_metadata({**CW, **change})
    if error is None:
        assert value_from_metric_data(response, meta) == value
    else:
        with pytest.raises(TriggerError, match=error):
            value_from_metric_data(response, meta)


def test_cloudwatch_trigger() -> None:
    trigger = CloudWatchTrigger(parse_cloudwatch_metadata(CW), trigger_index=0, metric_type="Value")
    result = trigger.evaluate_response({"MetricDataResults": [{"Values": [2500.0]}]})
    assert (trigger.metric_name, trigger.metric_target.type, result.metric_value, result.active) == (
        "s0-aws-cloudwatch", "Value", 2500.0, True)
    # Value target: ceil(current * usage / target) = ceil(2 * 2500 / 1000)
    assert trigger.proposal(result.metric_value, Observation(current_replicas=2), 0.1) == 5


@pytest.mark.parametrize("case", [
    case(id="metrics-api-minimal"),
    case({"targetValue": None}, id="metrics-api-no-targetValue", problems=(
        f"'{PATH}.targetValue': got no value, expected a number other than 0 (KEDA: 'no targetValue given in "
        "metadata'); add targetValue: '10'",)),
    case({"targetValue": "abc"}, id="metrics-api-targetValue-json-only-one-line", problems=(
        f"'{PATH}.targetValue': got 'abc', expected a number written as JSON, e.g. '10' or '0.5'; write a plain "
        "decimal number such as '10', '0.5' or '1e3'",)),
    case({"format": "csv"}, id="metrics-api-format-enum", problems=(
        f"'{PATH}.format': got 'csv', expected one of {{'json', 'prometheus', 'xml', 'yaml'}}; use one of 'json', "
        "'prometheus', 'xml', 'yaml'",)),
    case({"aggregateFromKubeServiceEndpoints": "true"}, id="metrics-api-no-service-endpoints-locally",
                 problems=(f"'{PATH}.aggregateFromKubeServiceEndpoints': got 'true', expected false (lagscale has no "
                           "Kubernetes Service endpoints to ask); remove it and point url at the one endpoint to read",)),
    case({"authMode": "apiKey", "apiKey": "inline-key"}, id="metrics-api-apikey-inline"),
])
def test_metrics_api_metadata(case: Case) -> None:
    assert problems(parse_metrics_api_metadata, API, case) == list(case.problems)


@pytest.mark.parametrize(("body", "location", "value", "error"), [
    pytest.param('{"lag": {"total": 4500}}', "lag.total", 4500.0, None, id="metrics-api-json-number"),
    pytest.param('{"data": [{"value": 12.5}]}', "data.0.value", 12.5, None, id="metrics-api-json-array-index"),
    pytest.param('{"lag.total": 3}', "lag\\.total", 3.0, None, id="metrics-api-json-escaped-dot"),
    pytest.param('{"lag": "1.5k"}', "lag", 1500.0, None, id="metrics-api-json-quantity-string"),
    pytest.param('{"lag": "lots"}', "lag", None, "valueLocation 'lag' points to a string that is not parseable as a "
                 "Quantity", id="metrics-api-json-bad-string"),
    pytest.param('{"lag": {}}', "lag", None, "valueLocation 'lag' must point to a numeric value or a string parseable "
                 "as a Quantity, got JSON", id="metrics-api-json-object"),
    pytest.param('{}', "lag", None, "valueLocation 'lag' must point to a numeric value or a string parseable as a "
                 "Quantity, got Null", id="metrics-api-json-missing"),
])
def test_metrics_api_json_value(body: str, location: str, value: float | None, error: str | None) -> None:
    if error is None:
        assert value_from_json(body, location) == value
    else:
        with pytest.raises(TriggerError) as info:
            value_from_json(body, location)
        assert str(info.value) == error


def test_metrics_api_trigger_name_and_gjson_limits() -> None:
    trigger = MetricsApiTrigger(parse_metrics_api_metadata({**API, "valueLocation": "components.worker.lag"}),
                                trigger_index=1)
    assert trigger.metric_name == "s1-metric-api-components-worker-lag"
    assert trigger.evaluate_response(b'{"components": {"worker": {"lag": 1200}}}').metric_value == 1200.0
    with pytest.raises(ValueError, match="wildcards"):
        gjson_get({}, "data.#.value")
    assert parse_quantity("250m") == 0.25 and parse_quantity("2Ki") == 2048.0
    xml = MetricsApiTrigger(parse_metrics_api_metadata({**API, "format": "xml"}))
    with pytest.raises(TriggerError, match="use format: json"):
        xml.evaluate_response(b"<lag>1</lag>")


def test_collect_into_a_shared_problem_list() -> None:
    p = Problems("so.yaml")
    assert TRIGGER_TYPES["prometheus"].collect({"threshold": "1"}, PATH, p, False) is None
    assert len(p.lines) == 2
    assert TRIGGER_TYPES["prometheus"].with_lag_threshold(parse_prometheus_metadata(PROM), 250).threshold == 250.0
