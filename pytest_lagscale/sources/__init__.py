"""Lag sources feeding the triggers: :class:`LagSource` and the :data:`LAG_SOURCES` registry.

Example:
    >>> sorted(LAG_SOURCES)
    ['broker']
    >>> make_lag_source("prometheus", None, "enrich", "events")
    Traceback (most recent call last):
    ...
    pytest_lagscale.contract.errors.ConfigError: 'lag source': got 'prometheus', expected one of {'broker'} in make_lag_source(); use 'broker'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from .base import GroupOffsets, LagSource
from .broker import BrokerLagSource

#: Source kind -> ``factory(admin, group, topic) -> LagSource``.
LAG_SOURCES: dict[str, Callable[[Any, str, str], LagSource]] = {
    "broker": BrokerLagSource,
}


def make_lag_source(kind: str, admin: Any, group: str, topic: str) -> LagSource:
    """The lag source ``kind`` for ``group`` on ``topic``.

    Args:
        kind: a key of :data:`LAG_SOURCES`.
        admin: the :class:`~pytest_lagscale.kafka.admin.KafkaAdmin` of the cluster.
        group: the consumer group.
        topic: the topic.

    Raises:
        ConfigError: unknown ``kind``.
    """
    factory = LAG_SOURCES.get(kind)
    if factory is None:
        allowed = "{" + ", ".join(repr(k) for k in LAG_SOURCES) + "}"
        raise ConfigError(f"'lag source': got {kind!r}, expected one of {allowed} in make_lag_source(); "
                          f"use {next(iter(LAG_SOURCES))!r}")
    return factory(admin, group, topic)


__all__ = ["LAG_SOURCES", "BrokerLagSource", "GroupOffsets", "LagSource", "make_lag_source"]
