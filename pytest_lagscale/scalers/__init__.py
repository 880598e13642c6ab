"""Scalers lagscale serves to KEDA (and to its own local controller) over KEDA's external scaler
gRPC protocol.

* :mod:`.externalscaler`: the protocol (``externalscaler.proto``, its generated stubs, a client);
* :mod:`.persistent_lag`: the persistent-lag scaler (``lagscale scaler serve``), whose server
  and CLI serve every kind of :data:`SCALER_KINDS`;
* :mod:`.share_group`: the share-group scaler (``lagscale scaler serve --kind share-group``).

A scaler kind is one package with a servicer class and one line in :data:`SCALER_KINDS`.
Nothing here is imported by the pytest plugin; grpcio and protobuf come with the ``scaler`` extra.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ScalerKind:
    """One scaler kind: where its servicer and metadata parser live (``module:name``, imported
    when used: grpc is optional) and the metadata key naming the group, which a run replaces
    with its own (with ``bootstrapServers`` and ``topic``) when it serves the kind itself."""

    servicer: str
    parse_metadata: str
    group_key: str


#: ``lagscale scaler serve --kind`` -> :class:`ScalerKind`.
SCALER_KINDS: dict[str, ScalerKind] = {
    "persistent-lag": ScalerKind("pytest_lagscale.scalers.persistent_lag.servicer:PersistentLagServicer",
                                 "pytest_lagscale.scalers.persistent_lag.metadata:parse_metadata",
                                 "consumerGroup"),
    "share-group": ScalerKind("pytest_lagscale.scalers.share_group.servicer:ShareGroupServicer",
                              "pytest_lagscale.scalers.share_group.metadata:parse_metadata", "shareGroup"),
}


def _load(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def servicer_class(kind: str) -> Any:
    """The servicer class of scaler ``kind`` (its module imported now).

    Raises:
        KeyError: ``kind`` is not a key of :data:`SCALER_KINDS`.
    """
    return _load(SCALER_KINDS[kind].servicer)


def metadata_parser(kind: str) -> Any:
    """``parse_metadata(metadata, *, source)`` of scaler ``kind`` (pure; raises ConfigError with
    every problem).

    Raises:
        KeyError: ``kind`` is not a key of :data:`SCALER_KINDS`.
    """
    return _load(SCALER_KINDS[kind].parse_metadata)


def run_metadata(kind: str, bootstrap_servers: str, group: str, topic: str) -> dict[str, str]:
    """The metadata a run sends its own scaler of ``kind`` in place of the manifest's: its
    cluster, its group (under the kind's group key) and its topic."""
    return {"bootstrapServers": bootstrap_servers, SCALER_KINDS[kind].group_key: group, "topic": topic}
