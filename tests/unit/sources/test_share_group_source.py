"""The share-group lag source's counting: the broker's KIP-1226 lag where the group has share
state, the group's ``share.auto.offset.reset`` where it has none, and no value when that reset
cannot be counted. The broker itself: tests/integration/test_share_group_lag.py."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kafka.share_admin import SharePartitionOffset
from pytest_lagscale.sources import make_lag_source
from pytest_lagscale.sources.base import TotalLagSource
from pytest_lagscale.sources.share_group import SharePartitionLag, ShareGroupLagSource

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)


class FakeAdmin:
    bootstrap_servers = "kafka:9092"

    def __init__(self, reset: str) -> None:
        self.reset, self.config_reads = reset, 0

    def partition_count(self, topic: str) -> int:
        return 3

    def end_offsets(self, topic: str, which: str = "latest") -> dict[int, int]:
        return {0: 100, 1: 50, 2: 40} if which == "latest" else {0: 0, 1: 10, 2: 40}

    def group_config(self, group: str) -> dict[str, str]:
        self.config_reads += 1
        return {"share.auto.offset.reset": self.reset, "share.record.lock.duration.ms": "30000"}


class FakeShareAdmin:
    def __init__(self, state: dict[tuple[str, int], SharePartitionOffset]) -> None:
        self.state = state

    def share_group_offsets(self, group: str) -> dict[tuple[str, int], SharePartitionOffset]:
        return self.state


def source(reset: str, state: dict[tuple[str, int], SharePartitionOffset]) -> ShareGroupLagSource:
    return ShareGroupLagSource(FakeAdmin(reset), "g", "events", share_admin=FakeShareAdmin(state),  # type: ignore
                               clock=lambda: T0)


def test_broker_lag_where_the_group_has_state_and_the_reset_where_it_has_none() -> None:
    s = source("earliest", {("events", 0): SharePartitionOffset(60, 25), ("events", 1): SharePartitionOffset(None, None),
                            ("other", 2): SharePartitionOffset(0, 999)})
    assert s.read_partitions() == {0: SharePartitionLag(25, 60, "broker"),
                                   1: SharePartitionLag(40, None, "reset-earliest"),
                                   2: SharePartitionLag(0, None, "reset-earliest")}
    reading = s.total_lag()
    assert (reading.lag_records, reading.datapoint_utc, reading.read_utc, reading.source) == \
        (65.0, T0, T0, "share-group")
    assert isinstance(s, TotalLagSource) and s.per_partition is False


def test_latest_counts_no_backlog_and_the_config_is_read_only_when_needed() -> None:
    s = source("latest", {("events", 0): SharePartitionOffset(5, 7)})
    assert s.total_lag().lag_records == 7.0
    assert {p: v.counted for p, v in s.read_partitions().items()} == {0: "broker", 1: "reset-latest",
                                                                      2: "reset-latest"}
    full = source("latest", {("events", p): SharePartitionOffset(0, 1) for p in range(3)})
    full.total_lag()
    assert full.admin.config_reads == 0  # type: ignore[attr-defined]


def test_a_by_duration_reset_without_state_is_no_value_never_zero() -> None:
    s = source("by_duration:PT1H", {("events", 0): SharePartitionOffset(5, 7)})
    assert s.read_partitions()[1] == SharePartitionLag(None, None, "unknown")
    reading = s.total_lag()
    assert reading.lag_records is None and not reading.known and reading.staleness_s is None


def test_the_registry_refuses_options() -> None:
    with pytest.raises(ConfigError, match="share-group lag source options"):
        make_lag_source("share-group", FakeAdmin("earliest"), "g", "events", {"url": "http://x"})


def test_a_share_run_reads_the_share_lag_as_offsets_and_refuses_an_unknown_lag() -> None:
    from pytest_lagscale.contract.errors import BrokerError
    from pytest_lagscale.sources.share_group import ShareGroupOffsetsAdmin

    class ClosingAdmin(FakeAdmin):
        closed = False

        def close(self, timeout_s=None) -> None:
            self.closed = True

    admin = ClosingAdmin("earliest")
    offsets = ShareGroupOffsetsAdmin(admin, FakeShareAdmin({("events", 0): SharePartitionOffset(60, 25)}))
    # partition 0: the broker's 25; 1 and 2: the whole log from the earliest reset (40 and 0)
    assert offsets.group_offsets("g", "events") == {0: (75, 100), 1: (10, 50), 2: (40, 40)}
    offsets.close()
    assert admin.closed
    unknown = ShareGroupOffsetsAdmin(FakeAdmin("by_duration:PT1H"), FakeShareAdmin({}))
    with pytest.raises(BrokerError, match=r"partitions \[0, 1, 2\] unknown"):
        unknown.group_offsets("g", "events")
