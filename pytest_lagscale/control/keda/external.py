"""KEDA's ``external`` trigger: a gRPC scaler's metric, decided on by the HPA.

Pure: the trigger's ``metadata`` (``scalerAddress`` and whatever the scaler reads; KEDA sends the
whole map as ``ScaledObjectRef.scalerMetadata``) is read by
:mod:`pytest_lagscale.config.trigger_metadata.external`; the trigger computes the HPA's
proposal from what the runner read over gRPC just before the step (``observation.external``:
GetMetricSpec's name and target, GetMetrics' value, IsActive's result;
:class:`~pytest_lagscale.control.observation.ExternalMetric`). The gRPC calls themselves are
the runner's (``pytest_lagscale.platform.external``), which reads :meth:`ExternalTrigger.call`
to know whom to ask.

``scalerAddress`` is ``host:port`` (a real KEDA dials it as is), or :data:`LOCAL_SCALER`
(``lagscale://local``): "the run's own scaler". The ScaledObject's annotation
``lagscale.dev/local-scaler-address`` names one more address the run stands in for (the
committed manifests: the Service of ``k8s/persistent-lag-scaler.yaml``, so the same file works
on a cluster). A run whose policy has such a *local* trigger starts ``lagscale scaler serve``
(the persistent-lag scaler) as a child process, sends it the run's ``bootstrapServers``,
``consumerGroup`` and ``topic`` in place of the manifest's, and calls it on its real port;
any other address is dialled as given.

Source: kedacore/keda pkg/scalers/external_scaler.go (NewExternalScaler, parseExternalScalerMetadata,
GetMetricSpecForScaling, GetMetricsAndActivity) v2.20.2; docs/semantics.md §2.3, §2.6
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from pytest_lagscale.config.trigger_metadata.external import LOCAL_SCALER, RUN_KEYS, ExternalTriggerMetadata
from pytest_lagscale.control.keda.base import MetricTarget, TriggerError, TriggerResult, external_metric_proposal
from pytest_lagscale.contract.errors import ConfigError

if TYPE_CHECKING:
    from pytest_lagscale.config.triggers import TriggerConfig
    from pytest_lagscale.control.observation import Observation

__all__ = ["LOCAL_SCALER", "RUN_KEYS", "ExternalScalerCall", "ExternalTrigger", "ExternalTriggerMetadata"]


@dataclass(frozen=True)
class ExternalScalerCall:
    """Whom the runner asks for one external trigger, and with what (a ``ScaledObjectRef``).

    Attributes:
        trigger_index: the trigger's position in ``spec.triggers``.
        scaler_address: ``host:port`` or :data:`LOCAL_SCALER`, as written.
        name: the ScaledObject's name.
        namespace: its namespace.
        metadata: the trigger's metadata (``scalerMetadata``).
        local: the call goes to the run's own scaler (``lagscale://local``, or the address of
            ``lagscale.dev/local-scaler-address``).
    """

    trigger_index: int
    scaler_address: str
    name: str
    namespace: str
    metadata: Mapping[str, str]
    local: bool = False


class ExternalTrigger:
    """A ``type: external`` trigger (KEDA's external scaler, pull mode).

    Args:
        settings: the validated metadata.
        trigger_index: position in ``spec.triggers`` (the ``s<i>-`` metric-name prefix).
        metric_type: ``AverageValue`` (default) or ``Value``.

    Raises:
        ConfigError: ``metric_type`` is not allowed.

    Attributes:
        metric_name: ``s<i>-<GetMetricSpec's name>``, ``s<i>-external`` until a spec was read.
        metric_target: the spec's target (value 0 until a spec was read).
    """

    metric_types: ClassVar[tuple[str, ...]] = ("AverageValue", "Value")
    resource_metric: ClassVar[bool] = False
    needs_lag: ClassVar[bool] = False
    needs_cpu: ClassVar[bool] = False

    def __init__(self, settings: ExternalTriggerMetadata, *, trigger_index: int = 0,
                 metric_type: str = "AverageValue"):
        if metric_type not in self.metric_types:
            raise ConfigError(f"'metricType': got {metric_type!r}, expected one of {{'AverageValue', 'Value'}} "
                              "in external trigger; use 'AverageValue'")
        self.settings, self.trigger_index = settings, trigger_index
        self.metric_name = f"s{trigger_index}-external"
        self.metric_target = MetricTarget(metric_type, 0.0)

    @classmethod
    def from_config(cls, config: TriggerConfig) -> ExternalTrigger:
        """Build from a validated ``spec.triggers[i]``."""
        return cls(config.settings, trigger_index=config.index, metric_type=config.metric_type)

    @property
    def lag_threshold_records(self) -> int | None:
        """The metadata's ``lagThreshold`` in records (see :attr:`ExternalTriggerMetadata.lag_threshold`)."""
        return self.settings.lag_threshold

    def call(self, name: str, namespace: str, local_address: str | None = None) -> ExternalScalerCall:
        """What the runner sends this trigger's scaler for ScaledObject ``namespace/name``.

        Args:
            name: the ScaledObject's name.
            namespace: its namespace.
            local_address: the address the run's own scaler stands in for
                (``lagscale.dev/local-scaler-address``), besides ``lagscale://local``.
        """
        address = self.settings.scaler_address
        return ExternalScalerCall(self.trigger_index, address, name, namespace, self.settings.metadata,
                                  local=self.settings.local or (local_address is not None and address == local_address))

    def evaluate(self, observation: Observation, now_s: float) -> TriggerResult:
        """The scaler's value and activity as the runner read them just before the step.

        Args:
            observation: ``external[trigger_index]`` holds the reading.
            now_s: time of the step in seconds (unused: the scaler keeps its own time).

        Raises:
            TriggerError: nothing was read, a call failed, or the spec has no positive target.
        """
        reading = (observation.external or {}).get(self.trigger_index)
        where = f"external scaler {self.settings.scaler_address}"
        if reading is None:
            raise TriggerError(f"{where}: not read")
        if reading.error is not None:
            raise TriggerError(f"{where}: {reading.error}")
        if reading.metric_name is not None:
            self.metric_name = f"s{self.trigger_index}-{reading.metric_name}"
        if reading.target is not None:
            self.metric_target = MetricTarget(self.metric_target.type, float(reading.target))
        if self.metric_target.value <= 0:
            raise TriggerError(f"{where}: GetMetricSpec gave target {self.metric_target.value:g}, expected > 0")
        if reading.value is None or reading.active is None:
            raise TriggerError(f"{where}: GetMetrics or IsActive gave no answer")
        return TriggerResult(metric_value=max(0.0, float(reading.value)), active=bool(reading.active),
                             total_lag=None, total_lag_with_persistent=None)

    def proposal(self, metric_value: float | None, observation: Observation, tolerance: float) -> int | None:
        """The HPA's proposal for this External metric (None without a value or a target yet)."""
        if self.metric_target.value <= 0:
            return None
        return external_metric_proposal(self.metric_target, metric_value, observation, tolerance)
