"""Moved: the ``kafka`` trigger's metadata parsing lives beside its logic, in
:mod:`pytest_lagscale.control.keda.kafka_metadata`.

This shim keeps ``from pytest_lagscale.config.kafka_trigger import ...`` working without
importing ``control`` when ``config`` is imported (the names resolve on first access).
"""

from __future__ import annotations

from typing import Any

_MOVED = ("KafkaTriggerMetadata", "parse_kafka_trigger_metadata", "collect_kafka_trigger_metadata",
          "parse_partition_limitation", "OFFSET_RESET_POLICIES", "TLS_MODES", "SASL_MODES", "KNOWN_KEYS",
          "UNSUPPORTED_KEYS")


def __getattr__(name: str) -> Any:
    """Resolve a moved name from :mod:`pytest_lagscale.control.keda.kafka_metadata`."""
    if name in _MOVED:
        from pytest_lagscale.control.keda import kafka_metadata

        return getattr(kafka_metadata, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
