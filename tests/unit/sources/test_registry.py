"""The lag-source seam: the LAG_SOURCES registry, the TotalLag reading and the broker source
(fake admin)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.sources import (LAG_SOURCES, PARTITION_LAG_SOURCES, BrokerLagSource, LagSource, TotalLag,
                                     TotalLagSource, make_lag_source)
from pytest_lagscale.sources.base import offsets_total_records

T0 = datetime(2026, 11, 26, 0, 25, tzinfo=timezone.utc)


class FakeAdmin:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def group_offsets(self, group: str, topic: str) -> dict[int, tuple[int, int | None]]:
        self.calls.append((group, topic))
        return {0: (4, 10), 1: (-1, 7), 2: (3, None)}


def test_broker_source_reads_the_groups_offsets() -> None:
    admin = FakeAdmin()
    source = make_lag_source("broker", admin, "enrich", "events")
    assert isinstance(source, BrokerLagSource) and isinstance(source, LagSource)
    assert isinstance(source, TotalLagSource)
    assert (source.name, source.read(), admin.calls) == ("broker", {0: (4, 10), 1: (-1, 7), 2: (3, None)},
                                                         [("enrich", "events")])


def test_broker_total_lag_is_the_sum_of_its_offsets_lag_and_zero_seconds_old() -> None:
    source = BrokerLagSource(FakeAdmin(), "enrich", "events", clock=lambda: T0)
    reading = source.total_lag()
    assert reading == TotalLag(13.0, T0, T0, "broker")  # 10 - 4, all of 7 (nothing committed), None skipped
    assert reading.staleness_s == 0.0


@pytest.mark.parametrize(("offsets", "total"), [
    pytest.param({}, 0, id="no-partitions"),
    pytest.param({0: (5, 5)}, 0, id="caught-up"),
    pytest.param({0: (-1, 40), 1: (10, 12)}, 42, id="uncommitted-counts-its-log-end"),
    pytest.param({0: (12, 10)}, -2, id="commit-read-after-log-end-not-clamped-as-kafka-exporter"),
    pytest.param({0: (1, None)}, 0, id="unknown-log-end-left-out"),
])
def test_offsets_total_records(offsets: dict, total: int) -> None:
    assert offsets_total_records(offsets) == total


def test_the_broker_takes_no_options() -> None:
    with pytest.raises(ConfigError) as info:
        make_lag_source("broker", FakeAdmin(), "enrich", "events", {"url": "http://x"})
    assert info.value.problems == ["'url': got 'http://x', expected no options (this source takes none) in "
                                   "broker lag source options; remove url"]


def test_unknown_lag_source_names_the_kinds() -> None:
    with pytest.raises(ConfigError) as info:
        make_lag_source("kafka", FakeAdmin(), "enrich", "events")
    assert info.value.problems == [("'lag source': got 'kafka', expected one of {'broker', 'prometheus', "
                                    "'cloudwatch', 'confluent', 'share-group'} in make_lag_source(); use 'broker'")]


def test_registry_lists_every_source_and_only_the_broker_reads_partitions() -> None:
    assert list(LAG_SOURCES) == ["broker", "prometheus", "cloudwatch", "confluent", "share-group"]
    assert {k: v.name for k, v in LAG_SOURCES.items()} == {k: k for k in LAG_SOURCES}
    assert PARTITION_LAG_SOURCES == ("broker",)


@pytest.mark.parametrize(("datapoint", "read", "staleness_s"), [
    pytest.param(T0 - timedelta(seconds=90), T0, 90.0, id="ninety-seconds-old"),
    pytest.param(T0 + timedelta(seconds=2), T0, 0.0, id="clock-skew-clamped-at-zero"),
    pytest.param(None, T0, None, id="no-datapoint"),
])
def test_staleness(datapoint: datetime | None, read: datetime, staleness_s: float | None) -> None:
    assert TotalLag(1.0 if datapoint else None, datapoint, read, "x").staleness_s == staleness_s


def test_empty_policies() -> None:
    assert TotalLag.empty("zero", T0, "cloudwatch") == TotalLag(0.0, T0, T0, "cloudwatch")
    unknown = TotalLag.empty("unknown", T0, "cloudwatch")
    assert (unknown.lag_records, unknown.known, unknown.staleness_s) == (None, False, None)


@pytest.mark.parametrize("offsets", [
    pytest.param({0: (4, 10), 1: (-1, 7), 2: (3, None)}, id="uncommitted-and-unknown-log-end"),
    pytest.param({0: (12, 10), 1: (0, 5)}, id="negative-partition-not-clamped"),
])
def test_broker_total_equals_the_lag_exporters_sum(offsets: dict) -> None:
    """What the prometheus source sums (kafka_consumergroup_lag_sum) is what the broker source gives."""
    from pytest_lagscale.observe.lag_exporter import lag_families

    families = {f.name: f for f in lag_families(offsets, "enrich", "events")}
    exported = [s.value for s in families["kafka_consumergroup_lag_sum"].samples]
    assert exported == [offsets_total_records(offsets)]


def test_importing_the_sources_and_counterparts_loads_no_client_library() -> None:
    import subprocess
    import sys

    code = ("import sys, pytest_lagscale.sources, pytest_lagscale.counterparts.moto_server, "
            "pytest_lagscale.counterparts.lag_publisher, pytest_lagscale.counterparts.confluent_metrics, "
            "pytest_lagscale.control.keda.aws_cloudwatch, pytest_lagscale.control.keda.metrics_api, "
            "pytest_lagscale.control.keda.prometheus\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('boto3', 'botocore', 'moto', 'prometheus_api_client', 'pandas', 'confluent_kafka', 'requests')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
