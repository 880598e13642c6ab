"""The autoscaler's gRPC side of ``type: external`` triggers: KEDA's calls to external scalers.

For each :class:`~pytest_lagscale.control.keda.external.ExternalScalerCall` of the policy,
before each step: ``GetMetricSpec`` (once per trigger and metadata, as KEDA reads it when it
builds the HPA; again after a failure), then ``GetMetrics`` for the spec's first metric and
``IsActive``, as KEDA's ``GetMetricsAndActivity`` does. The answers become an
:class:`~pytest_lagscale.control.observation.ExternalMetric` per trigger index; a failed call
becomes its ``error`` (a trigger error in ``control``, counted toward ``fallback``).

``scalerAddress: lagscale://local`` resolves to the run's own scaler (``local_address``), and
the run's ``bootstrapServers``, ``consumerGroup`` and ``topic`` (``local_metadata``) replace the
manifest's in what it is sent.

Source: kedacore/keda pkg/scalers/external_scaler.go GetMetricSpecForScaling,
GetMetricsAndActivity v2.20.2; pkg/provider/provider.go (HPA usage = sum of the values)
v2.20.2; docs/semantics.md §2.4, §2.6
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..control.keda.external import ExternalScalerCall
from ..control.observation import ExternalMetric


class ExternalScalerReader:
    """Reads every external trigger's scaler over gRPC (one channel per address).

    Args:
        local_address: ``host:port`` of the run's own scaler (None: the run has none, and a
            ``lagscale://local`` trigger reads as an error).
        local_metadata: metadata the run's own scaler is sent in place of the manifest's.
        timeout_s: seconds per gRPC call.
    """

    def __init__(self, local_address: str | None = None, local_metadata: Mapping[str, str] | None = None,
                 timeout_s: float = 5.0):
        self.local_address = local_address
        self.local_metadata = dict(local_metadata or {})
        self.timeout_s = timeout_s
        self._clients: dict[str, Any] = {}
        self._specs: dict[tuple[int, str, tuple[tuple[str, str], ...]], Any] = {}

    def read(self, calls: Sequence[ExternalScalerCall]) -> dict[int, ExternalMetric]:
        """One reading per call, by trigger index (never raises for a failed call)."""
        return {call.trigger_index: self._read_one(call) for call in calls}

    def resolve(self, call: ExternalScalerCall) -> tuple[str | None, dict[str, str]]:
        """The address dialled and the metadata sent for ``call`` (None: no run-owned scaler)."""
        if not call.local:
            return call.scaler_address, dict(call.metadata)
        if self.local_address is None:
            return None, dict(call.metadata)
        return self.local_address, {**call.metadata, **self.local_metadata, "scalerAddress": self.local_address}

    def close(self) -> None:
        """Close every channel. Idempotent."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def _read_one(self, call: ExternalScalerCall) -> ExternalMetric:
        from ..scalers.externalscaler.client import ExternalScalerClient, ExternalScalerError, scaled_object_ref

        address, metadata = self.resolve(call)
        if address is None:
            return ExternalMetric(error=f"scalerAddress {call.scaler_address!r}: this run started no scaler of its "
                                        "own (only a run whose --policy names it does)")
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = ExternalScalerClient(address, self.timeout_s)
        ref = scaled_object_ref(call.name, call.namespace, metadata)
        key = (call.trigger_index, address, tuple(sorted(metadata.items())))
        spec = self._specs.get(key)
        try:
            if spec is None:
                specs = client.metric_specs(ref)
                if not specs:
                    return ExternalMetric(error="GetMetricSpec returned no metric spec")
                spec = self._specs[key] = specs[0]
            values = client.metrics(ref, spec.metric_name)
            active = client.is_active(ref)
        except ExternalScalerError as exc:
            self._specs.pop(key, None)
            return ExternalMetric(spec.metric_name if spec else None, spec.target if spec else None,
                                  error=f"{exc.code.name}: {exc.details}")
        return ExternalMetric(spec.metric_name, spec.target, sum(v for _, v in values), active)
