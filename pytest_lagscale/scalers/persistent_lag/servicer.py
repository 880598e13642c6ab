"""The gRPC servicer: KEDA's ``externalscaler.ExternalScaler`` over persistent-lag windows.

Each call carries a ``ScaledObjectRef``; its ``scalerMetadata`` is validated
(:func:`~.metadata.parse_metadata`) and names the window: one :class:`~.sampler.LagSampler`
per (namespace, name, settings), created by the first call that names it and stopped after
``idle_timeout_s`` without calls (or when the server stops). What each method answers:

* ``GetMetricSpec``: one MetricSpec, ``persistent-kafka-lag-<topic>`` with target
  ``lagThreshold`` (``targetSize`` and ``targetSizeFloat``: KEDA reads the float when > 0);
* ``GetMetrics``: one MetricValue, the window's :class:`~.window.Assessment` ``metric_value``
  (``metricValueFloat`` and, rounded, the deprecated ``metricValue``); the request's
  ``metricName`` must be the spec's (KEDA strips its ``sN-`` prefix before sending it);
* ``IsActive``: the assessment's ``active``;
* ``StreamIsActive``: the current ``active`` at once, then every change, until the caller
  cancels or the server stops.

Errors are gRPC statuses and the server keeps serving: bad or missing metadata ->
INVALID_ARGUMENT (one line per problem, each naming the key, the value and the allowed range);
an unknown ``metricName`` -> INVALID_ARGUMENT; a failed lag read -> UNAVAILABLE (KEDA counts
it toward ``fallback``); no first read within ``first_read_timeout_s`` -> UNAVAILABLE.

Source: kedacore/keda pkg/scalers/external_scaler.go (GetMetricSpecForScaling,
GetMetricsAndActivity, handleIsActiveStream) v2.20.2; docs/semantics.md §2.6
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from ...contract.clock import Clock, RealClock
from ...contract.errors import ConfigError
from ..externalscaler import externalscaler_pb2 as pb2
from ..externalscaler import externalscaler_pb2_grpc as pb2_grpc
from ..externalscaler.answers import check_metric_name, metric_spec_response, metric_value_response
from .metadata import PersistentLagSettings, parse_metadata
from .sampler import LagSampler, SourceFactory, broker_lag_source
from .window import Assessment

log = logging.getLogger(__name__)

#: Seconds a call waits for a new window's first lag read.
FIRST_READ_TIMEOUT_S = 30.0
#: Seconds without calls after which a window's sampler stops (a changed ScaledObject leaves
#: its old window behind).
IDLE_TIMEOUT_S = 600.0
#: Seconds between StreamIsActive's checks that its caller is still there.
STREAM_POLL_S = 1.0


class PersistentLagServicer(pb2_grpc.ExternalScalerServicer):
    """KEDA's external scaler service over one window per ScaledObject trigger.

    Args:
        source_factory: ``factory(settings) -> LagSource`` (default: the settings' lag source
            of :data:`pytest_lagscale.sources.PARTITION_LAG_SOURCES` on ``bootstrapServers``).
        clock: the samplers' time source (monotonic seconds).
        idle_timeout_s: seconds without calls before a window's sampler stops.
        first_read_timeout_s: seconds a call waits for a new window's first read.
    """

    def __init__(self, source_factory: SourceFactory | None = None, *, clock: Clock | None = None,
                 idle_timeout_s: float = IDLE_TIMEOUT_S, first_read_timeout_s: float = FIRST_READ_TIMEOUT_S):
        self.source_factory = source_factory or broker_lag_source
        self.clock = clock or RealClock()
        self.idle_timeout_s = idle_timeout_s
        self.first_read_timeout_s = first_read_timeout_s
        self._samplers: dict[tuple[str, str, PersistentLagSettings], LagSampler] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()

    # -- the four methods ------------------------------------------------------------------
    def GetMetricSpec(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802 - gRPC name
        settings = self._settings(request, context)
        self._sampler(request, settings, context)  # start sampling as soon as KEDA knows us
        return metric_spec_response(settings.metric_name, settings.lag_threshold)

    def GetMetrics(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        ref = request.scaledObjectRef
        settings = self._settings(ref, context)
        check_metric_name(request, settings.metric_name, context)
        return metric_value_response(settings.metric_name, self._assessment(ref, settings, context).metric_value)

    def IsActive(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        settings = self._settings(request, context)
        return pb2.IsActiveResponse(result=self._assessment(request, settings, context).active)

    def StreamIsActive(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:  # noqa: N802
        settings = self._settings(request, context)
        sampler = self._sampler(request, settings, context)
        sent: bool | None = None
        seen = -1
        while context.is_active() and not self._closed.is_set() and not sampler.stopped:
            with sampler.changed:
                if sampler.version == seen:
                    sampler.changed.wait(STREAM_POLL_S)
                seen = sampler.version
                assessment, error = sampler.window.assessment, sampler.last_error
            sampler.touch()
            if error is None and assessment.active != sent:
                sent = assessment.active
                yield pb2.IsActiveResponse(result=sent)

    # -- helpers ---------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every sampler and end every StreamIsActive. Idempotent."""
        self._closed.set()
        with self._lock:
            samplers, self._samplers = list(self._samplers.values()), {}
        for sampler in samplers:
            sampler.stop(timeout_s=0.0)
        for sampler in samplers:  # a read in flight may take its client's timeout; daemon threads
            sampler.stop(timeout_s=1.0)

    def windows(self) -> dict[str, Assessment]:
        """``namespace/name group/topic`` -> the newest assessment of each live window (logs, tests)."""
        with self._lock:
            return {f"{ns}/{name} {st.consumer_group}/{st.topic}": s.window.assessment
                    for (ns, name, st), s in self._samplers.items()}

    def _settings(self, ref: Any, context: grpc.ServicerContext) -> PersistentLagSettings:
        from ...sources import PARTITION_LAG_SOURCES

        source = f"ScaledObject {ref.namespace or '-'}/{ref.name or '-'} scalerMetadata"
        try:
            return parse_metadata(dict(ref.scalerMetadata), source=source, lag_sources=PARTITION_LAG_SOURCES)
        except ConfigError as exc:
            log.warning("rejected: %s", "; ".join(exc.problems))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "\n".join(exc.problems))
            raise  # not reached: abort raises

    def _sampler(self, ref: Any, settings: PersistentLagSettings, context: grpc.ServicerContext) -> LagSampler:
        key = (ref.namespace, ref.name, settings)
        with self._lock:
            if self._closed.is_set():
                context.abort(grpc.StatusCode.UNAVAILABLE, "the scaler is stopping; retry on another replica")
            self._expire_idle()
            sampler = self._samplers.get(key)
            if sampler is None:
                sampler = LagSampler(f"{ref.namespace}/{ref.name}", settings, self.source_factory(settings),
                                     self.clock).start()
                self._samplers[key] = sampler
        sampler.touch()
        return sampler

    def _assessment(self, ref: Any, settings: PersistentLagSettings, context: grpc.ServicerContext) -> Assessment:
        sampler = self._sampler(ref, settings, context)
        if not sampler.wait_first(self.first_read_timeout_s):
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"ScaledObject {ref.namespace}/{ref.name}: no lag read within "
                          f"{self.first_read_timeout_s:g} s from {settings.bootstrap_servers}; check bootstrapServers")
        assessment, error = sampler.current()
        if error is not None:
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"ScaledObject {ref.namespace}/{ref.name}: lag of group {settings.consumer_group!r} on "
                          f"topic {settings.topic!r} could not be read from {settings.bootstrap_servers}: {error}")
        return assessment

    def _expire_idle(self) -> None:
        """Stop samplers unused for idle_timeout_s (called under the lock)."""
        now_s = self.clock.now()
        for key, sampler in list(self._samplers.items()):
            if now_s - sampler.last_used_s > self.idle_timeout_s:
                log.info("%s: idle for %.0f s, sampling stopped", sampler.label, now_s - sampler.last_used_s)
                sampler.stop(timeout_s=0.0)
                del self._samplers[key]
