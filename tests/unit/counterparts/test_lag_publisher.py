"""The lag publisher: MSK's SumOffsetLag put every period, held back by delay_s, errors counted
(FakeClock, a scripted source and a recording CloudWatch client)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.counterparts.lag_publisher import LagPublisher, PublishTarget, metric_datum
from pytest_lagscale.sources.base import LagSourceError, TotalLag, TotalLagSource

T0 = datetime(2026, 11, 26, 0, 0, tzinfo=timezone.utc)
TARGET = PublishTarget("lagscale-msk", "enrich", "events")


class ScriptedLag:
    name = "scripted"
    per_partition = False

    def __init__(self, values: list[float | None | Exception]):
        self.values, self.reads = list(values), 0

    def total_lag(self) -> TotalLag:
        value = self.values[min(self.reads, len(self.values) - 1)]
        at = T0 + timedelta(seconds=60 * self.reads)
        self.reads += 1
        if isinstance(value, Exception):
            raise value
        return TotalLag(value, at, at, self.name)


class RecordingCloudWatch:
    def __init__(self, fail: int = 0):
        self.puts: list[dict[str, Any]] = []
        self.fail = fail

    def put_metric_data(self, **kwargs: Any) -> None:
        if self.fail:
            self.fail -= 1
            raise RuntimeError("Throttling")
        self.puts.append(kwargs)


def test_the_datum_is_msks_sumoffsetlag() -> None:
    assert metric_datum(TARGET, 1234, T0) == {
        "MetricName": "SumOffsetLag",
        "Dimensions": [{"Name": "Cluster Name", "Value": "lagscale-msk"}, {"Name": "Consumer Group", "Value": "enrich"},
                       {"Name": "Topic", "Value": "events"}],
        "Timestamp": T0, "Value": 1234.0, "Unit": "Count"}


def test_each_read_is_put_at_once_without_delay() -> None:
    source, client = ScriptedLag([100.0, 250.0]), RecordingCloudWatch()
    assert isinstance(source, TotalLagSource)
    publisher = LagPublisher(source, client, TARGET, clock=FakeClock())
    publisher.read_once()
    publisher.read_once()
    assert [p["Namespace"] for p in client.puts] == ["AWS/Kafka", "AWS/Kafka"]
    assert [(p["MetricData"][0]["Value"], p["MetricData"][0]["Timestamp"]) for p in client.puts] == [
        (100.0, T0), (250.0, T0 + timedelta(seconds=60))]
    assert (publisher.published_total, publisher.errors_total) == (2, 0)


def test_delay_holds_a_datapoint_back_then_puts_it_dated_at_its_read() -> None:
    clock, client = FakeClock(), RecordingCloudWatch()
    publisher = LagPublisher(ScriptedLag([42.0]), client, TARGET, delay_s=90.0, clock=clock)
    publisher.read_once()
    clock.advance(89.0)
    publisher.put_due()
    assert client.puts == []
    clock.advance(1.0)
    publisher.put_due()
    assert [p["MetricData"][0]["Timestamp"] for p in client.puts] == [T0]


def test_failures_are_counted_and_the_put_retried() -> None:
    clock, client = FakeClock(), RecordingCloudWatch(fail=1)
    publisher = LagPublisher(ScriptedLag([LagSourceError("broker down"), 7.0]), client, TARGET, clock=clock)
    publisher.read_once()
    assert (publisher.errors_total, publisher.last_error) == (1, "lag read failed: LagSourceError: broker down")
    publisher.read_once()  # the put fails once (Throttling): kept, retried 1 s later
    assert (client.puts, publisher.errors_total) == ([], 2)
    clock.advance(1.0)
    publisher.put_due()
    assert [p["MetricData"][0]["Value"] for p in client.puts] == [7.0]
    assert (publisher.published_total, publisher.last_error) == (1, None)


def test_an_unknown_reading_puts_nothing() -> None:
    client = RecordingCloudWatch()
    LagPublisher(ScriptedLag([None]), client, TARGET, clock=FakeClock()).read_once()
    assert client.puts == []


def test_the_thread_reads_at_once_and_stops() -> None:
    client = RecordingCloudWatch()
    publisher = LagPublisher(ScriptedLag([5.0]), client, TARGET, period_s=3600.0)
    with publisher:
        for _ in range(200):
            if client.puts:
                break
            time.sleep(0.01)
    assert len(client.puts) == 1 and publisher._thread is None


@pytest.mark.parametrize(("period_s", "delay_s"), [pytest.param(0.0, 0.0, id="zero-period"),
                                                   pytest.param(60.0, -1.0, id="negative-delay")])
def test_bad_schedule(period_s: float, delay_s: float) -> None:
    with pytest.raises(ValueError):
        LagPublisher(ScriptedLag([1.0]), RecordingCloudWatch(), TARGET, period_s=period_s, delay_s=delay_s)


class FakeAdmin:
    def group_offsets(self, group: str, topic: str) -> dict[int, tuple[int, int | None]]:
        assert (group, topic) == ("enrich", "events")
        return {0: (10, 110), 1: (-1, 25)}


def test_from_broker_publishes_the_groups_summed_offset_lag() -> None:
    client = RecordingCloudWatch()
    publisher = LagPublisher.from_broker(FakeAdmin(), client, TARGET, period_s=10.0)
    publisher.read_once()
    assert publisher.period_s == 10.0
    assert [p["MetricData"][0]["Value"] for p in client.puts] == [125.0]
