"""The answers every lagscale scaler gives the same way: one MetricSpec, one MetricValue, and the
check of a GetMetrics request's ``metricName`` (imports grpc: the ``scaler`` extra).

Source: kedacore/keda pkg/scalers/external_scaler.go v2.20.2 (KEDA reads ``targetSizeFloat`` and
``metricValueFloat`` when > 0, else the deprecated int fields, and strips its ``sN-`` prefix from
the metric name it sends).
"""

from __future__ import annotations

from typing import Any

import grpc

from . import externalscaler_pb2 as pb2


def metric_spec_response(metric_name: str, target: float) -> Any:
    """``GetMetricSpecResponse`` with one MetricSpec: ``target`` (records per replica, the
    AverageValue target) in both ``targetSize`` (rounded) and ``targetSizeFloat``."""
    return pb2.GetMetricSpecResponse(metricSpecs=[pb2.MetricSpec(
        metricName=metric_name, targetSize=round(target), targetSizeFloat=float(target))])


def metric_value_response(metric_name: str, value: float) -> Any:
    """``GetMetricsResponse`` with one MetricValue: ``value`` in ``metricValueFloat`` and, rounded,
    the deprecated ``metricValue``."""
    return pb2.GetMetricsResponse(metricValues=[pb2.MetricValue(
        metricName=metric_name, metricValue=round(value), metricValueFloat=value)])


def check_metric_name(request: Any, metric_name: str, context: grpc.ServicerContext) -> None:
    """Abort the call with INVALID_ARGUMENT unless the GetMetrics ``request`` asks for
    ``metric_name`` (the name GetMetricSpec gave, without KEDA's ``sN-`` prefix)."""
    if request.metricName != metric_name:
        ref = request.scaledObjectRef
        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                      f"'metricName': got {request.metricName!r}, expected {metric_name!r} (the name "
                      f"GetMetricSpec gives for ScaledObject {ref.namespace}/{ref.name}); call GetMetricSpec "
                      "and use its metricName without KEDA's sN- prefix")
