"""The gRPC servicer: KEDA's ``externalscaler.ExternalScaler`` over a share group's lag.

KEDA has no share-group scaler; this one answers its external scaler protocol with the lag the
broker reports for a share group (KIP-1226, through
:class:`~pytest_lagscale.sources.share_group.ShareGroupLagSource`), read per call as KEDA's
kafka scaler reads offsets per call. Each call's ``scalerMetadata`` is validated
(:func:`~.metadata.parse_metadata`). What each method answers:

* ``GetMetricSpec``: one MetricSpec, ``share-group-lag-<topic>`` with target ``lagThreshold``
  (``targetSize`` and ``targetSizeFloat``); the HPA's AverageValue then asks for
  ``ceil(lag / lagThreshold)`` replicas, with no cap at the partition count (members of a share
  group share partitions; the broker's ``group.share.max.size``, 200 by default, is the cap);
* ``GetMetrics``: one MetricValue, the total lag (``metricValueFloat`` and ``metricValue``); the
  request's ``metricName`` must be the spec's (KEDA strips its ``sN-`` prefix);
* ``IsActive``: lag > ``activationLagThreshold``;
* ``StreamIsActive``: the current activity at once, then every change (read every
  :data:`STREAM_INTERVAL_S`), until the caller cancels or the server stops.

Errors are gRPC statuses and the server keeps serving: bad metadata -> INVALID_ARGUMENT (one
line per problem); an unknown ``metricName`` -> INVALID_ARGUMENT; a failed read, or a lag the
broker cannot give (partitions without share state under a ``by_duration`` reset) ->
UNAVAILABLE (KEDA counts it toward ``fallback``).

Source: kedacore/keda pkg/scalers/external_scaler.go v2.20.2 (the protocol's use);
apache/kafka 4.3.1 KIP-932 share groups, KIP-1226 share-partition lag.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from ...contract.errors import ConfigError, LagscaleError
from ..externalscaler import externalscaler_pb2 as pb2
from ..externalscaler import externalscaler_pb2_grpc as pb2_grpc
from ..externalscaler.answers import check_metric_name, metric_spec_response, metric_value_response
from .metadata import ShareGroupSettings, parse_metadata

log = logging.getLogger(__name__)

#: Seconds between StreamIsActive's reads.
STREAM_INTERVAL_S = 5.0

#: ``factory(settings) -> source`` with ``total_lag()`` (and ``close()``).
SourceFactory = Callable[[ShareGroupSettings], Any]


class BrokerShareSources:
    """The default sources: one :class:`~pytest_lagscale.sources.share_group.ShareGroupLagSource`
    per (bootstrap servers, share group, topic), sharing one admin client and one share-group
    admin service per bootstrap servers; :meth:`close` stops them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._admins: dict[str, tuple[Any, Any]] = {}
        self._sources: dict[tuple[str, str, str], Any] = {}

    def __call__(self, settings: ShareGroupSettings) -> Any:
        from ...kafka.admin import KafkaAdmin
        from ...kafka.share_admin import ShareGroupAdmin
        from ...sources.share_group import ShareGroupLagSource

        key = (settings.bootstrap_servers, settings.share_group, settings.topic)
        with self._lock:
            source = self._sources.get(key)
            if source is None:
                admins = self._admins.get(settings.bootstrap_servers)
                if admins is None:
                    share = ShareGroupAdmin(settings.bootstrap_servers).start()
                    admins = self._admins[settings.bootstrap_servers] = (
                        KafkaAdmin(settings.bootstrap_servers, timeout_s=5.0), share)
                source = self._sources[key] = ShareGroupLagSource(admins[0], settings.share_group,
                                                                  settings.topic, share_admin=admins[1])
            return source

    def close(self) -> None:
        """Stop every share-group admin service and close every admin client. Idempotent."""
        with self._lock:
            admins, self._admins, self._sources = list(self._admins.values()), {}, {}
        for admin, share in admins:
            share.stop()
            admin.close(timeout_s=1.0)


class ShareGroupServicer(pb2_grpc.ExternalScalerServicer):
    """KEDA's external scaler service over share-group lag.

    Args:
        source_factory: ``factory(settings) -> source`` (default: :class:`BrokerShareSources`).
        clock: accepted for the server's one constructor call; unused (lag is read per call,
            nothing is timed).
        stream_interval_s: seconds between StreamIsActive's reads.
    """

    def __init__(self, source_factory: SourceFactory | None = None, *, clock: Any = None,
                 stream_interval_s: float = STREAM_INTERVAL_S):
        self.source_factory = source_factory or BrokerShareSources()
        self.stream_interval_s = stream_interval_s
        self._closed = threading.Event()

    # -- the four methods ------------------------------------------------------------------
    def GetMetricSpec(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802 - gRPC name
        settings = self._settings(request, context)
        return metric_spec_response(settings.metric_name, settings.lag_threshold)

    def GetMetrics(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        ref = request.scaledObjectRef
        settings = self._settings(ref, context)
        check_metric_name(request, settings.metric_name, context)
        return metric_value_response(settings.metric_name, self._lag(ref, settings, context))

    def IsActive(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        settings = self._settings(request, context)
        return pb2.IsActiveResponse(result=self._lag(request, settings, context) > settings.activation_lag_threshold)

    def StreamIsActive(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:  # noqa: N802
        settings = self._settings(request, context)
        sent: bool | None = None
        while context.is_active() and not self._closed.is_set():
            try:
                active = self._read(settings) > settings.activation_lag_threshold
            except LagscaleError as exc:
                log.warning("%s/%s: %s", request.namespace, request.name, exc)
            else:
                if active != sent:
                    sent = active
                    yield pb2.IsActiveResponse(result=active)
            self._closed.wait(self.stream_interval_s)

    # -- helpers ---------------------------------------------------------------------------
    def close(self) -> None:
        """End every StreamIsActive and stop the sources' services. Idempotent."""
        self._closed.set()
        close = getattr(self.source_factory, "close", None)
        if close is not None:
            close()

    def _settings(self, ref: Any, context: grpc.ServicerContext) -> ShareGroupSettings:
        source = f"ScaledObject {ref.namespace or '-'}/{ref.name or '-'} scalerMetadata"
        try:
            return parse_metadata(dict(ref.scalerMetadata), source=source)
        except ConfigError as exc:
            log.warning("rejected: %s", "; ".join(exc.problems))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "\n".join(exc.problems))
            raise  # not reached: abort raises

    def _read(self, settings: ShareGroupSettings) -> float:
        if self._closed.is_set():
            raise LagscaleError("the scaler is stopping; retry on another replica")
        reading = self.source_factory(settings).total_lag()
        if reading.lag_records is None:
            raise LagscaleError(f"share group {settings.share_group!r} on topic {settings.topic!r}: lag unknown "
                                "(partitions without share state and a by_duration share.auto.offset.reset)")
        return float(reading.lag_records)

    def _lag(self, ref: Any, settings: ShareGroupSettings, context: grpc.ServicerContext) -> float:
        try:
            return self._read(settings)
        except LagscaleError as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"ScaledObject {ref.namespace}/{ref.name}: lag of share group {settings.share_group!r} "
                          f"on topic {settings.topic!r} could not be read from {settings.bootstrap_servers}: {exc}")
            raise  # not reached
