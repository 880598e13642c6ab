"""The ``external`` trigger's ``metadata`` (``scalerAddress`` and whatever the scaler reads),
validated (pure).

KEDA sends the whole map to the scaler as ``ScaledObjectRef.scalerMetadata``, so only
``scalerAddress`` and the TLS keys are checked here; the scaler checks its own keys (the
persistent-lag scaler: :mod:`pytest_lagscale.scalers.persistent_lag.metadata`).
``ExternalTrigger`` (``control/keda/external.py``) builds the trigger from it.

Source: kedacore/keda pkg/scalers/external_scaler.go parseExternalScalerMetadata v2.20.2
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from pytest_lagscale.config._problems import MISSING, Problems, join

#: ``scalerAddress`` meaning "the run's own persistent-lag scaler" (started by the run).
LOCAL_SCALER = "lagscale://local"
#: Metadata keys the run replaces for its own scaler (a shared cluster suffixes topic and group).
RUN_KEYS = ("bootstrapServers", "consumerGroup", "topic")
_ADDRESS = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}")
_INT = re.compile(r"[1-9][0-9]*")


@dataclass(frozen=True)
class ExternalTriggerMetadata:
    """Validated ``external`` trigger metadata.

    Attributes:
        scaler_address: ``host:port``, or :data:`LOCAL_SCALER`.
        metadata: every key as written (strings), ``scalerAddress`` included: what KEDA sends.
    """

    scaler_address: str
    metadata: Mapping[str, str]

    @property
    def local(self) -> bool:
        """The trigger names the run's own scaler (:data:`LOCAL_SCALER`)."""
        return self.scaler_address == LOCAL_SCALER

    @property
    def lag_threshold(self) -> int | None:
        """``lagThreshold`` when the metadata has one that is a positive integer (the
        persistent-lag scaler's per-replica target in records), else None."""
        text = self.metadata.get("lagThreshold", "").strip()
        return int(text) if _INT.fullmatch(text) else None


def collect_external_metadata(metadata: Any, path: str, p: Problems,
                              has_authentication_ref: bool = False) -> ExternalTriggerMetadata | None:
    """Validate ``metadata``: string values; ``scalerAddress`` ``host:port`` or
    ``lagscale://local``; TLS (``enableTLS: 'true'``, an authenticationRef with certificates)
    is refused (the local controller dials plain text). Other keys are the scaler's to check."""
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        p.add(path or "metadata", metadata, "a mapping with 'scalerAddress'",
              "write the trigger metadata as key: 'value' lines")
        return None
    before = len(p.lines)
    for key, value in metadata.items():
        if not isinstance(value, str):
            p.add(join(path, key), value, "a string (KEDA trigger metadata values are strings)",
                  f"quote it: '{value}'")
    address = metadata.get("scalerAddress", MISSING)
    if not isinstance(address, str) or not (address == LOCAL_SCALER or _ADDRESS.fullmatch(address.strip())):
        p.add(join(path, "scalerAddress"), address, f"'host:port' of the scaler's gRPC service, or "
              f"{LOCAL_SCALER!r} (the run's own persistent-lag scaler)",
              f"set scalerAddress: '{LOCAL_SCALER}' or e.g. 'lagscale-scaler.default.svc:6000'")
    if metadata.get("enableTLS", "false") != "false":
        p.add(join(path, "enableTLS"), metadata["enableTLS"], "'false' (lagscale dials plain-text gRPC)",
              "remove enableTLS")
    if has_authentication_ref:
        p.add(join(path.rpartition(".")[0], "authenticationRef"), "set",
              "no authenticationRef on an external trigger (TLS certificates are not simulated)",
              "remove authenticationRef")
    if len(p.lines) != before:
        return None
    return ExternalTriggerMetadata(str(address).strip(), MappingProxyType(dict(metadata)))


def with_lag_threshold(settings: ExternalTriggerMetadata, lag_threshold: int) -> ExternalTriggerMetadata | None:
    """``settings`` with ``lagThreshold`` set to ``lag_threshold`` when the metadata has one
    (the persistent-lag scaler's target), else None."""
    if "lagThreshold" not in settings.metadata:
        return None
    return replace(settings, metadata=MappingProxyType({**settings.metadata, "lagThreshold": str(lag_threshold)}))
