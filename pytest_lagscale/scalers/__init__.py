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
from typing import Any

#: ``lagscale scaler serve --kind`` -> ``module:Servicer`` (imported when served: grpc is optional).
SCALER_KINDS: dict[str, str] = {
    "persistent-lag": "pytest_lagscale.scalers.persistent_lag.servicer:PersistentLagServicer",
    "share-group": "pytest_lagscale.scalers.share_group.servicer:ShareGroupServicer",
}


def servicer_class(kind: str) -> Any:
    """The servicer class of scaler ``kind`` (its module imported now).

    Raises:
        KeyError: ``kind`` is not a key of :data:`SCALER_KINDS`.
    """
    module, _, name = SCALER_KINDS[kind].partition(":")
    return getattr(importlib.import_module(module), name)
