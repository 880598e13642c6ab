"""The cloudwatch lag source against moto's server, fed by the lag publisher the way MSK publishes
``SumOffsetLag`` (a scripted lag of known values; no Kafka). Needs ``moto[server]`` and boto3
(``pip install 'pytest-lagscale[sources]'``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from pytest_lagscale.process import group_members
from pytest_lagscale.sources import LagSourceError, TotalLag, make_lag_source
from pytest_lagscale.sources.base import utc_now

from ._lag_exporter import wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None,
                       reason="moto[server] or boto3 not installed; pip install 'pytest-lagscale[sources]'"),
]


class KnownLag:
    """A TotalLagSource answering the values a test sets, dated now."""

    name = "known"
    per_partition = False

    def __init__(self, value: float):
        self.value = value

    def total_lag(self) -> TotalLag:
        now = utc_now()
        return TotalLag(self.value, now, now, self.name)


@pytest.fixture
def moto(tmp_path: Path) -> Iterator[object]:
    from pytest_lagscale.counterparts.moto_server import MotoServer

    with MotoServer(tmp_path / "moto.log") as server:
        yield server
    assert server.process is not None and group_members(server.process.pid) == []


def test_published_lag_comes_back_through_get_metric_statistics(moto, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_lagscale.counterparts.lag_publisher import LagPublisher, PublishTarget

    monkeypatch.setenv("LAGSCALE_TEST_AWS_KEY", "lagscale-moto")
    monkeypatch.setenv("LAGSCALE_TEST_AWS_SECRET", "lagscale-moto-secret")
    options = {"cluster_name": "lagscale-msk", "endpoint_url": moto.url, "region": "eu-west-1",
               "access_key_id_env": "LAGSCALE_TEST_AWS_KEY", "secret_access_key_env": "LAGSCALE_TEST_AWS_SECRET"}
    source = make_lag_source("cloudwatch", None, "enrich", "events", options)
    assert source.total_lag().lag_records == 0.0  # nothing published yet: 0, as the recipe
    unknown = make_lag_source("cloudwatch", None, "enrich", "events", {**options, "empty": "unknown"})
    assert unknown.total_lag().known is False

    lag = KnownLag(1500.0)
    publisher = LagPublisher(lag, moto.client("cloudwatch", "eu-west-1"), PublishTarget("lagscale-msk", "enrich",
                                                                                         "events"), period_s=0.5)
    with publisher:
        wait_for(lambda: publisher.published_total >= 1, within_s=10, what="the first datapoint")
        lag.value = 4200.0
        wait_for(lambda: publisher.published_total >= 3, within_s=10, what="two more datapoints")
    assert publisher.errors_total == 0
    # Period 60: every datapoint of this test falls into one period, whose Maximum is the largest
    # once the query's EndTime (now, whole seconds) has passed the newest datapoint
    wait_for(lambda: source.total_lag().lag_records == 4200.0, within_s=5, what="the Maximum of the period")
    reading = source.total_lag()
    assert reading.staleness_s is not None and 0.0 <= reading.staleness_s < 30.0
    other_topic = make_lag_source("cloudwatch", None, "enrich", "audit", options)
    assert other_topic.total_lag().lag_records == 0.0

    later = make_lag_source("cloudwatch", None, "enrich", "events", {**options, "window_s": 1})
    later.clock = lambda: utc_now() + timedelta(minutes=10)  # the window has moved past every datapoint
    assert later.total_lag().lag_records == 0.0


def test_an_unreachable_endpoint_is_a_lag_source_error(moto, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "lagscale-never-shown")
    url = moto.url
    moto.stop()
    source = make_lag_source("cloudwatch", None, "enrich", "events", {"cluster_name": "c", "endpoint_url": url})
    with pytest.raises(LagSourceError) as info:
        source.total_lag()
    assert str(info.value).startswith(f"cloudwatch lag source: GetMetricStatistics AWS/Kafka SumOffsetLag at {url} "
                                      "failed: EndpointConnectionError")
    assert "lagscale-never-shown" not in str(info.value)
