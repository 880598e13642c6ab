"""The autoscaler's lag input: the LAG_SOURCES registry and the broker source (fake admin)."""

from __future__ import annotations

import pytest

from pytest_lagscale.errors import ConfigError
from pytest_lagscale.sources import LAG_SOURCES, BrokerLagSource, LagSource, make_lag_source


class FakeAdmin:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def group_offsets(self, group: str, topic: str) -> dict[int, tuple[int, int | None]]:
        self.calls.append((group, topic))
        return {0: (4, 10), 1: (-1, None)}


def test_broker_source_reads_the_groups_offsets() -> None:
    admin = FakeAdmin()
    source = make_lag_source("broker", admin, "enrich", "events")
    assert isinstance(source, BrokerLagSource) and isinstance(source, LagSource)
    assert (source.name, source.read(), admin.calls) == ("broker", {0: (4, 10), 1: (-1, None)},
                                                         [("enrich", "events")])


def test_unknown_lag_source_names_the_kinds() -> None:
    with pytest.raises(ConfigError) as info:
        make_lag_source("prometheus", FakeAdmin(), "enrich", "events")
    assert info.value.problems == [("'lag source': got 'prometheus', expected one of {'broker'} in "
                                    "make_lag_source(); use 'broker'")]
    assert list(LAG_SOURCES) == ["broker"]


def test_kafka_admin_keeps_the_old_name() -> None:
    from pytest_lagscale.kafka import admin

    assert admin.KafkaLagSource is BrokerLagSource
