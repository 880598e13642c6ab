"""What the runner measured just before a controller step: the input of every trigger and policy.

Pure data: the runner (``platform.autoscaler``) fills it from the lag source, the platform's
replica counts, for CPU triggers per-pod CPU samples, for ``type: external`` triggers what
their gRPC scalers answered, for value-reading triggers their services' answers, the total
lag of a source without per-partition offsets and, for a Pods metric, its per-pod values from Prometheus;
``control`` only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_lagscale.control.hpa.replica_calculator import PodCpu, PodMetric

if TYPE_CHECKING:
    from pytest_lagscale.sources.base import TotalLag

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
class ValueReading:
    """One value-reading trigger's answer (``prometheus``, ``aws-cloudwatch``, ``metrics-api``), as
    the runner fetched it just before a step (``pytest_lagscale.platform.value_triggers``).

    Attributes:
        response: the service's answer as the trigger parses it: a ``GET /api/v1/query`` JSON
            mapping (prometheus), a ``GetMetricData`` response mapping (aws-cloudwatch), the
            body bytes (metrics-api); None when the call failed.
        error: the failed call's message, None on success.
        datapoint_utc: UTC ISO-8601 time of the datapoint the value came from (the query's
            evaluation time; the newest CloudWatch period's start), None when unknown.
        staleness_s: seconds between that datapoint and the read, None when unknown.
    """

    response: Any = None
    error: str | None = None
    datapoint_utc: str | None = None
    staleness_s: float | None = None


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
        values: trigger index -> its answer, for value-reading triggers (``prometheus``,
            ``aws-cloudwatch``, ``metrics-api``); None when the policy has none.
        total_lag: the run's total-lag source's reading
            (:class:`~pytest_lagscale.sources.base.TotalLag`) for a policy that reads total lag
            when the source has no offsets per partition (``--lag-source`` other than broker);
            None otherwise or when the read failed.
    """

    current_replicas: int
    offsets: Offsets | None = None
    status_replicas: int | None = None
    ready_replicas: int | None = None
    cpu_pods: tuple[PodCpu, ...] | None = None
    external: Mapping[int, ExternalMetric] | None = None
    pod_metrics: tuple[PodMetric, ...] | None = None
    values: Mapping[int, ValueReading] | None = None
    total_lag: TotalLag | None = None

    @property
    def status(self) -> int:
        """``status_replicas`` with its default applied."""
        return self.current_replicas if self.status_replicas is None else self.status_replicas

    @property
    def ready(self) -> int:
        """``ready_replicas`` with its default applied."""
        return self.status if self.ready_replicas is None else self.ready_replicas
