"""The cloudwatch lag source: the recipe's GetMetricStatistics call and recorded answers (a fake
boto3 client; the integration test asks moto's server)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.sources import CloudWatchLagSource, LagSourceError, TotalLag, make_lag_source
from pytest_lagscale.sources.cloudwatch import CloudWatchSettings, get_metric_statistics_request, lag_from_statistics

from ._fixtures import cloudwatch

T0 = datetime(2026, 11, 26, 0, 26, 10, tzinfo=timezone.utc)
SETTINGS = CloudWatchSettings("lagscale-msk", "enrich", "events")


class FakeCloudWatch:
    """boto3's CloudWatch client: records calls, answers a scripted response or raises."""

    def __init__(self, response: dict[str, Any] | None = None, error: Exception | None = None):
        self.response, self.error = response, error
        self.calls: list[dict[str, Any]] = []

    def get_metric_statistics(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        assert self.response is not None
        return self.response


def test_the_request_is_the_recipes_call() -> None:
    assert get_metric_statistics_request(SETTINGS, T0) == {
        "Namespace": "AWS/Kafka",
        "MetricName": "SumOffsetLag",
        "Dimensions": [{"Name": "Cluster Name", "Value": "lagscale-msk"},
                       {"Name": "Consumer Group", "Value": "enrich"},
                       {"Name": "Topic", "Value": "events"}],
        "StartTime": T0 - timedelta(minutes=5),
        "EndTime": T0,
        "Period": 60,
        "Statistics": ["Maximum"],
    }


def test_the_newest_datapoints_maximum_and_its_age() -> None:
    client = FakeCloudWatch(cloudwatch("cloudwatch_get_metric_statistics.json"))
    source = CloudWatchLagSource(SETTINGS, client=client, clock=lambda: T0)
    reading = source.total_lag()
    assert reading == TotalLag(2100.0, datetime(2026, 11, 26, 0, 25, tzinfo=timezone.utc), T0, "cloudwatch")
    assert reading.staleness_s == 70.0
    assert client.calls == [get_metric_statistics_request(SETTINGS, T0)]


def test_datapoint_max_takes_the_windows_largest() -> None:
    reading = lag_from_statistics(cloudwatch("cloudwatch_get_metric_statistics.json"), empty="zero",
                                  datapoint="max", read_utc=T0)
    assert (reading.lag_records, reading.datapoint_utc) == (3400.0, datetime(2026, 11, 26, 0, 24, tzinfo=timezone.utc))


@pytest.mark.parametrize(("empty", "expected"), [
    pytest.param("zero", TotalLag(0.0, T0, T0, "cloudwatch"), id="no-datapoints-zero-as-the-recipe"),
    pytest.param("unknown", TotalLag(None, None, T0, "cloudwatch"), id="no-datapoints-unknown"),
])
def test_no_datapoints(empty: str, expected: TotalLag) -> None:
    assert lag_from_statistics(cloudwatch("cloudwatch_get_metric_statistics_empty.json"), empty=empty,
                               datapoint="latest", read_utc=T0) == expected


def test_naive_timestamps_are_utc() -> None:
    reading = lag_from_statistics({"Datapoints": [{"Timestamp": datetime(2026, 11, 26, 0, 25), "Maximum": 5}]},
                                  empty="zero", datapoint="latest", read_utc=T0)
    assert reading.datapoint_utc == datetime(2026, 11, 26, 0, 25, tzinfo=timezone.utc)


@pytest.mark.parametrize(("response", "message"), [
    pytest.param({"Label": "SumOffsetLag"}, "cloudwatch lag source: AWS/Kafka SumOffsetLag: got a response without "
                 "'Datapoints', expected a GetMetricStatistics answer", id="no-datapoints-key"),
    pytest.param({"Datapoints": [{"Maximum": 1.0}]}, "cloudwatch lag source: AWS/Kafka SumOffsetLag: got datapoint "
                 "{'Maximum': 1.0}, expected a 'Timestamp'", id="no-timestamp"),
    pytest.param({"Datapoints": [{"Timestamp": T0, "Average": 1.0}]}, "cloudwatch lag source: AWS/Kafka SumOffsetLag "
                 "datapoint 'Maximum': got None, expected a number of records", id="no-maximum"),
])
def test_malformed_answers(response: dict, message: str) -> None:
    with pytest.raises(LagSourceError) as info:
        lag_from_statistics(response, empty="zero", datapoint="latest", read_utc=T0)
    assert str(info.value) == message


def test_a_failed_call_names_the_endpoint() -> None:
    settings = CloudWatchSettings("c", "enrich", "events", endpoint_url="http://127.0.0.1:5000")
    source = CloudWatchLagSource(settings, client=FakeCloudWatch(error=RuntimeError("InvalidParameterValue")),
                                 clock=lambda: T0)
    with pytest.raises(LagSourceError) as info:
        source.total_lag()
    assert str(info.value) == ("cloudwatch lag source: GetMetricStatistics AWS/Kafka SumOffsetLag at "
                               "http://127.0.0.1:5000 failed: RuntimeError: InvalidParameterValue; check the "
                               "endpoint, region and credentials")


def test_options() -> None:
    environ = {"CW_KEY": "AKIAEXAMPLE", "CW_SECRET": "wJalrXUtnFEMI"}
    settings = CloudWatchSettings.from_options("enrich", "events", {
        "cluster_name": "msk-1", "endpoint_url": "http://127.0.0.1:5000", "period_s": "60", "window_s": 120,
        "empty": "unknown", "datapoint": "max", "access_key_id_env": "CW_KEY", "secret_access_key_env": "CW_SECRET",
    }, environ)
    assert (settings.cluster_name, settings.endpoint_url, settings.period_s, settings.window_s, settings.empty,
            settings.datapoint) == ("msk-1", "http://127.0.0.1:5000", 60.0, 120.0, "unknown", "max")
    assert settings.secret_access_key is not None and settings.secret_access_key.reveal() == "wJalrXUtnFEMI"
    assert "wJalrXUtnFEMI" not in repr(settings) and "AKIAEXAMPLE" not in repr(settings)
    assert "wJalrXUtnFEMI" not in repr(CloudWatchLagSource(settings))


def test_invalid_options_all_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        make_lag_source("cloudwatch", None, "enrich", "events",
                        {"period_s": 45, "window_s": "5m", "secret_access_key_env": "NOT_SET_ANYWHERE"})
    assert info.value.problems == [
        "'cluster_name': got no value, expected a non-empty string in cloudwatch lag source options; "
        "set cluster_name=lagscale-msk",
        "'window_s': got '5m', expected a number of seconds in [1, 86400] in cloudwatch lag source options; "
        "set window_s=300",
        "'period_s': got 45, expected 1, 5, 10, 30 or a multiple of 60 (CloudWatch's periods) in cloudwatch lag "
        "source options; set period_s=60",
        "'secret_access_key_env': got 'NOT_SET_ANYWHERE', expected the name of a set, non-empty environment variable "
        "in cloudwatch lag source options; export NOT_SET_ANYWHERE=... before the run",
        "'access_key_id_env': got None, expected set together with secret_access_key_env in cloudwatch lag source "
        "options; set access_key_id_env too, or neither (boto3's default credential chain)",
    ]
