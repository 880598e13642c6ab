"""Lag sources feeding the triggers and policies: the :data:`LAG_SOURCES` registry.

Every source gives a :class:`TotalLag` (:class:`TotalLagSource`); the broker also gives the
offsets per partition (:class:`LagSource`), the input of KEDA's kafka trigger. A source is one
module with a class that has ``name``, ``per_partition`` and a ``from_options(admin, group,
topic, options)`` factory, and one line here.

Example:
    >>> sorted(LAG_SOURCES)
    ['broker', 'cloudwatch', 'confluent', 'prometheus', 'share-group']
    >>> PARTITION_LAG_SOURCES
    ('broker',)
    >>> make_lag_source("kafka", None, "enrich", "events")
    Traceback (most recent call last):
    ...
    pytest_lagscale.contract.errors.ConfigError: 'lag source': got 'kafka', expected one of {'broker', 'prometheus', 'cloudwatch', 'confluent', 'share-group'} in make_lag_source(); use 'broker'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..contract.errors import ConfigError
from .base import GroupOffsets, LagSource, LagSourceError, TotalLag, TotalLagSource
from .broker import BrokerLagSource
from .cloudwatch import CloudWatchLagSource
from .confluent import ConfluentLagSource
from .prometheus import PrometheusLagSource
from .share_group import ShareGroupLagSource


class LagSourceType(Protocol):
    """A source class as the registry holds it."""

    name: str
    per_partition: bool

    def from_options(self, admin: Any, group: str, topic: str,
                     options: Mapping[str, Any] | None = None) -> TotalLagSource:
        """Build the source for ``group`` on ``topic`` from its options (ConfigError if invalid)."""


#: Source kind -> its class (``from_options(admin, group, topic, options)``), in the order
#: error messages list them.
LAG_SOURCES: dict[str, LagSourceType] = {
    "broker": BrokerLagSource,
    "prometheus": PrometheusLagSource,
    "cloudwatch": CloudWatchLagSource,
    "confluent": ConfluentLagSource,
    "share-group": ShareGroupLagSource,
}

#: The kinds that also read offsets per partition (``read()``): what KEDA's kafka trigger and
#: the persistent-lag scaler's per-partition window need.
PARTITION_LAG_SOURCES: tuple[str, ...] = tuple(k for k, v in LAG_SOURCES.items() if v.per_partition)


def make_lag_source(kind: str, admin: Any, group: str, topic: str,
                    options: Mapping[str, Any] | None = None) -> Any:
    """The lag source ``kind`` for ``group`` on ``topic``.

    Args:
        kind: a key of :data:`LAG_SOURCES`.
        admin: the :class:`~pytest_lagscale.kafka.admin.KafkaAdmin` of the cluster (the broker
            source's; the others ignore it).
        group: the consumer group.
        topic: the topic.
        options: the source's options (see its ``from_options``); none for the broker.

    Raises:
        ConfigError: unknown ``kind``, or invalid options (every problem, one line each).
    """
    factory = LAG_SOURCES.get(kind)
    if factory is None:
        allowed = "{" + ", ".join(repr(k) for k in LAG_SOURCES) + "}"
        raise ConfigError(f"'lag source': got {kind!r}, expected one of {allowed} in make_lag_source(); "
                          f"use {next(iter(LAG_SOURCES))!r}")
    return factory.from_options(admin, group, topic, options)


__all__ = ["LAG_SOURCES", "PARTITION_LAG_SOURCES", "BrokerLagSource", "CloudWatchLagSource",
           "ConfluentLagSource", "GroupOffsets", "LagSource", "LagSourceError", "PrometheusLagSource",
           "ShareGroupLagSource", "TotalLag", "TotalLagSource", "make_lag_source"]
