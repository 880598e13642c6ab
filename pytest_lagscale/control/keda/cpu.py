"""KEDA's ``cpu`` trigger: a Resource metric with an Utilization target, decided by the HPA.

KEDA only publishes the metric spec; the HPA computes the proposal from per-pod usage and
requests (:func:`pytest_lagscale.control.hpa.proposal_for_utilization`). The trigger's
``metadata`` (``value``, ``containerName``) is read by
:mod:`pytest_lagscale.config.trigger_metadata.cpu`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from pytest_lagscale.config.trigger_metadata.cpu import CpuTriggerMetadata
from pytest_lagscale.control.hpa.replica_calculator import MetricError, PodCpu, proposal_for_utilization
from pytest_lagscale.control.keda.base import MetricTarget, TriggerError, TriggerResult
from pytest_lagscale.contract.errors import ConfigError

if TYPE_CHECKING:
    from pytest_lagscale.config.triggers import TriggerConfig
    from pytest_lagscale.control.observation import Observation


class CpuTrigger:
    """CPU utilization target, in percent of the pods' CPU requests.

    Args:
        target_utilization_percent: target average utilization (> 0), e.g. 70.
        container_name: KEDA ``containerName`` (informational; usage is given per pod).

    Raises:
        ConfigError: the target is not a positive integer.

    Attributes:
        metric_name: ``cpu`` (a Resource metric, no ``s<i>-`` prefix).
        metric_target: ``MetricTarget('Utilization', percent)``.

    Source: kedacore/keda pkg/scalers/cpu_memory_scaler.go GetMetricSpecForScaling v2.20.2;
    docs/semantics.md §2.3, §4.1
    """

    metric_types: ClassVar[tuple[str, ...]] = ("Utilization",)
    resource_metric: ClassVar[bool] = True
    needs_lag: ClassVar[bool] = False
    needs_cpu: ClassVar[bool] = True
    lag_threshold_records: ClassVar[int | None] = None

    def __init__(self, target_utilization_percent: int, *, container_name: str | None = None):
        if isinstance(target_utilization_percent, bool) or not isinstance(target_utilization_percent, int) \
                or target_utilization_percent <= 0:
            raise ConfigError(f"'value': got {target_utilization_percent!r}, expected an integer > 0 "
                              f"(percent of CPU requests) in cpu trigger; pass e.g. 70")
        self.target_utilization_percent = target_utilization_percent
        self.container_name = container_name
        self.metric_name = "cpu"
        self.metric_target = MetricTarget("Utilization", float(target_utilization_percent))

    @classmethod
    def from_config(cls, config: TriggerConfig) -> CpuTrigger:
        """Build from a validated ``spec.triggers[i]`` (or a plain HPA's cpu metric)."""
        settings: CpuTriggerMetadata = config.settings
        return cls(settings.target_utilization_percent, container_name=settings.container_name)

    def evaluate(self, observation: Observation, now_s: float) -> TriggerResult:
        """The average utilization of the observed pods (never active, never an error).

        Args:
            observation: ``cpu_pods`` (None or empty: no value).
            now_s: time of the step in seconds (unused).
        """
        utilization = self.utilization_percent(observation.cpu_pods or ())
        return TriggerResult(metric_value=None if utilization is None else float(utilization), active=False,
                             total_lag=None, total_lag_with_persistent=None)

    def proposal(self, metric_value: float | None, observation: Observation, tolerance: float) -> int | None:
        """The HPA's proposal from the observed pods (None when the metric is invalid this sync)."""
        try:
            return self.proposal_for_pods(observation.cpu_pods or (), observation.current_replicas, tolerance)
        except TriggerError:
            return None

    def proposal_for_pods(self, pods: Sequence[PodCpu], current_replicas: int, tolerance: float = 0.1) -> int:
        """The HPA's proposal for this metric.

        Args:
            pods: one entry per pod of the scale target (usage and request in millicores).
            current_replicas: the scale target's ``spec.replicas``.
            tolerance: half-width of the no-change band around ratio 1.0.

        Raises:
            TriggerError: the metric is invalid this sync (no pods, no requests, no ready metrics).
        """
        try:
            return proposal_for_utilization(pods, self.target_utilization_percent, current_replicas, tolerance)
        except MetricError as exc:
            raise TriggerError(f"cpu: {exc}") from exc

    @staticmethod
    def utilization_percent(pods: Sequence[PodCpu]) -> int | None:
        """Average utilization of ready pods with metrics, in integer percent (None if none)."""
        used = [(p.usage_millicores, p.request_millicores) for p in pods
                if p.usage_millicores is not None and p.ready and p.request_millicores > 0]
        total_request = sum(r for _, r in used)
        return (sum(u for u, _ in used) * 100) // total_request if total_request else None
