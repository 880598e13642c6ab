"""What the runner measured just before a controller step: the input of every trigger and policy.

Pure data: the runner (``platform.autoscaler``) fills it from the lag source, the platform's
replica counts, for CPU triggers per-pod CPU samples, for ``type: external`` triggers what
their gRPC scalers answered and, for a Pods metric, its per-pod values from Prometheus;
``control`` only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_lagscale.control.hpa.replica_calculator import PodCpu, PodMetric

#: ``{partition: (committed, log_end)}``; committed -1 = none committed, log_end None = missing
#: from the latest-offset response.
Offsets = Mapping[int, "tuple[int, int | None]"]


@dataclass(frozen=True)
class ExternalMetric:
    """One ``type: external`` trigger's scaler, as the runner read it over gRPC just before a step.

    Attributes:
        metric_name: ``GetMetricSpec``'s first metric name (KEDA prefixes ``s<i>-``), None if
            the spec was never read.
        target: that spec's target (``targetSizeFloat`` when > 0, else ``targetSize``).
        value: ``GetMetrics``'s value (the sum of the returned values; per value the float field
            when > 0, else the int field), None when the call failed.
        active: ``IsActive``'s result, None when the call failed.
        error: the failed call's message (gRPC status and details), None when all succeeded.
    """

    metric_name: str | None = None
    target: float | None = None
    value: float | None = None
    active: bool | None = None
    error: str | None = None


@dataclass(frozen=True)
class Observation:
    """What the runner measured just before a step.

    Attributes:
        current_replicas: the Deployment's ``spec.replicas``.
        offsets: ``partition -> (committed, log_end)`` of group/topic (committed -1 = none;
            log_end None = missing); None when reading lag failed (a trigger error).
        status_replicas: pods that exist (``status.replicas``), default ``current_replicas``.
        ready_replicas: Running and Ready pods, default ``status_replicas``.
        cpu_pods: per-pod CPU usage and requests for cpu triggers (None = unavailable).
        external: trigger index -> its external scaler's reading, for ``type: external``
            triggers (None: the policy has none, or nothing was read).
        pod_metrics: per-pod values of the policy's ``type: Pods`` metric, one entry per pod
            that is not terminating (None = the metric could not be read this step).
    """

    current_replicas: int
    offsets: Offsets | None = None
    status_replicas: int | None = None
    ready_replicas: int | None = None
    cpu_pods: tuple[PodCpu, ...] | None = None
    external: Mapping[int, ExternalMetric] | None = None
    pod_metrics: tuple[PodMetric, ...] | None = None

    @property
    def status(self) -> int:
        """``status_replicas`` with its default applied."""
        return self.current_replicas if self.status_replicas is None else self.status_replicas

    @property
    def ready(self) -> int:
        """``ready_replicas`` with its default applied."""
        return self.status if self.ready_replicas is None else self.ready_replicas
