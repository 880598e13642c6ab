"""The caller's side of KEDA's external scaler protocol, as KEDA's operator calls a scaler.

:class:`ExternalScalerClient` holds one plain-text channel to ``scalerAddress`` and makes the
four calls; numbers are read with KEDA's rules (the float field when > 0, else the deprecated
int field). A failed call raises :class:`ExternalScalerError` carrying the gRPC status.

Example:
    >>> client = ExternalScalerClient("127.0.0.1:6000")  # doctest: +SKIP
    >>> ref = scaled_object_ref("consumer", "default", {"topic": "events", ...})  # doctest: +SKIP
    >>> client.metric_specs(ref)  # doctest: +SKIP
    [MetricSpecValue(metric_name='persistent-kafka-lag-events', target=500.0)]

Source: kedacore/keda pkg/scalers/external_scaler.go buildMetricSpecs, GetMetricsAndActivity
v2.20.2; docs/semantics.md §2.6
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from ...contract.errors import LagscaleError
from . import externalscaler_pb2 as pb2
from . import externalscaler_pb2_grpc as pb2_grpc

#: Seconds each unary call may take.
CALL_TIMEOUT_S = 5.0


class ExternalScalerError(LagscaleError):
    """A call to an external scaler failed.

    Attributes:
        code: the gRPC status code (``grpc.StatusCode``).
        details: the server's message.
    """

    def __init__(self, address: str, method: str, code: Any, details: str):
        self.code, self.details = code, details
        super().__init__(f"external scaler {address}: {method} failed: {code.name}: {details}")


@dataclass(frozen=True)
class MetricSpecValue:
    """One MetricSpec as KEDA reads it: the name (KEDA prefixes ``sN-``) and the target
    (``targetSizeFloat`` when > 0, else ``targetSize``)."""

    metric_name: str
    target: float


def scaled_object_ref(name: str, namespace: str, metadata: Mapping[str, str]) -> Any:
    """A ``ScaledObjectRef`` message (KEDA sends the trigger's whole metadata)."""
    return pb2.ScaledObjectRef(name=name, namespace=namespace, scalerMetadata=dict(metadata))


class ExternalScalerClient:
    """One channel to an external scaler.

    Args:
        address: ``host:port`` (KEDA's ``scalerAddress``).
        timeout_s: seconds per unary call.
    """

    def __init__(self, address: str, timeout_s: float = CALL_TIMEOUT_S):
        self.address, self.timeout_s = address, timeout_s
        self.channel = grpc.insecure_channel(address)
        self.stub = pb2_grpc.ExternalScalerStub(self.channel)

    def metric_specs(self, ref: Any) -> list[MetricSpecValue]:
        """``GetMetricSpec``. Raises :class:`ExternalScalerError`."""
        response = self._call("GetMetricSpec", ref)
        return [MetricSpecValue(s.metricName, s.targetSizeFloat if s.targetSizeFloat > 0 else float(s.targetSize))
                for s in response.metricSpecs]

    def metrics(self, ref: Any, metric_name: str) -> list[tuple[str, float]]:
        """``GetMetrics`` for ``metric_name``: ``[(name, value)]``. Raises :class:`ExternalScalerError`."""
        response = self._call("GetMetrics", pb2.GetMetricsRequest(scaledObjectRef=ref, metricName=metric_name))
        return [(v.metricName, v.metricValueFloat if v.metricValueFloat > 0 else float(v.metricValue))
                for v in response.metricValues]

    def is_active(self, ref: Any) -> bool:
        """``IsActive``. Raises :class:`ExternalScalerError`."""
        return bool(self._call("IsActive", ref).result)

    def stream_is_active(self, ref: Any) -> Any:
        """``StreamIsActive``: the call, an iterator of ``IsActiveResponse`` (``.result``);
        ``.cancel()`` ends it. Errors surface as ``grpc.RpcError`` while iterating."""
        return self.stub.StreamIsActive(ref)

    def close(self) -> None:
        """Close the channel. Idempotent."""
        self.channel.close()

    def __enter__(self) -> ExternalScalerClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, method: str, request: Any) -> Any:
        try:
            return getattr(self.stub, method)(request, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            raise ExternalScalerError(self.address, method, exc.code(), exc.details() or "") from exc
