"""The run's own persistent-lag scaler, in the twin: ``Observation.external``.

In a real run the autoscaler calls ``lagscale scaler serve`` over gRPC before every KEDA poll
and HPA sync (``platform/external.py``): ``GetMetricSpec`` once per trigger, then ``GetMetrics``
and ``IsActive``, answered from the scaler's pure window (``scalers/persistent_lag/``). The twin
runs that core in-process on its clock: per ``type: external`` trigger the run serves itself
(``scalerAddress: lagscale://local`` or ``lagscale.dev/local-scaler-address``), the metadata the
reader would send is checked by the scaler's own
:func:`~pytest_lagscale.scalers.persistent_lag.metadata.parse_metadata`, and samples of
:func:`~pytest_lagscale.scalers.persistent_lag.sampler.lag_by_partition` of the world's offsets
go into a :class:`~pytest_lagscale.scalers.persistent_lag.window.PersistentLagWindow`, one per
(namespace, ScaledObject, metadata) as the servicer keeps them: the first sample at the first
call, then one every ``samplingInterval`` at a phase drawn per draw. docs/twin.md ("What is
modelled", external scaler) gives the schedule and the answers.

Not modelled: the transport (a loopback gRPC call of a few ms, three per step), the sampler
thread's wake-up latency, failed lag reads (``UNAVAILABLE``), the 10-minute idle timeout, and
scalers at any other address (refused by :func:`~.run.plan_of`).

Source: platform/external.py (ExternalScalerReader); scalers/persistent_lag/servicer.py
(GetMetricSpec, GetMetrics, IsActive), sampler.py (LagSampler._loop, sample_once);
kedacore/keda v2.20.2 pkg/scalers/external_scaler.go GetMetricsAndActivity; docs/semantics.md
section 2.6 (the external scaler gRPC protocol).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..control.keda.external import ExternalScalerCall
from ..control.observation import ExternalMetric
from ..contract.errors import ConfigError
from ..scalers.persistent_lag.metadata import PersistentLagSettings, parse_metadata
from ..scalers.persistent_lag.sampler import lag_by_partition
from ..scalers.persistent_lag.window import PersistentLagWindow
from .world import World

#: Key of the draw's stream for the sampling phase (:meth:`~.world.Draw.stream`).
STREAM_KEY = 2


@dataclass
class _Window:
    """One window and its sampling schedule (``next_s``: seconds, the next sample's time)."""

    window: PersistentLagWindow
    next_s: float


class TwinScalers:
    """The persistent-lag scaler the run serves itself, in-process on the twin's clock.

    Args:
        world: the simulated run (its offsets are sampled).
        run_metadata: ``bootstrapServers``, ``consumerGroup`` and ``topic`` of the run, sent in
            place of the manifest's (as ``ExternalScalerReader.local_metadata``).

    Call :meth:`tick` after every :meth:`World.tick <.world.World.tick>` and :meth:`read` at a
    controller step.
    """

    def __init__(self, world: World, run_metadata: Mapping[str, str] | None = None):
        self.world = world
        self.run_metadata = dict(run_metadata or {})
        self._rng = world.draw.stream(STREAM_KEY)
        self._windows: dict[tuple[str, str, PersistentLagSettings], _Window] = {}

    def tick(self, k: int) -> None:
        """Take the samples due at tick ``k`` (time ``k x tick_s``)."""
        t = round(k * self.world.tick_s, 6)
        for entry in self._windows.values():
            if t >= entry.next_s - 1e-9:
                entry.next_s += entry.window.settings.sampling_interval_s
                self._sample(entry.window, t)

    def read(self, calls: Sequence[ExternalScalerCall], now_s: float) -> dict[int, ExternalMetric]:
        """One reading per call, by trigger index, as ``ExternalScalerReader.read`` gives it."""
        return {call.trigger_index: self._read_one(call, now_s) for call in calls}

    def window(self, call: ExternalScalerCall) -> PersistentLagWindow | None:
        """The window serving ``call`` (None before its first read or when its metadata is bad)."""
        try:
            settings = self._settings(call)
        except ConfigError:
            return None
        entry = self._windows.get((call.namespace, call.name, settings))
        return entry.window if entry else None

    def _read_one(self, call: ExternalScalerCall, now_s: float) -> ExternalMetric:
        if not call.local:
            return ExternalMetric(error=f"scalerAddress {call.scaler_address!r}: the twin serves "
                                        "only the run's own persistent-lag scaler")
        try:
            settings = self._settings(call)
        except ConfigError as exc:  # the servicer's INVALID_ARGUMENT
            return ExternalMetric(error="INVALID_ARGUMENT: " + "\n".join(exc.problems))
        key = (call.namespace, call.name, settings)
        entry = self._windows.get(key)
        if entry is None:  # GetMetricSpec names a new window: its sampler reads at once
            interval = settings.sampling_interval_s
            ticks = max(1, int(round(interval / self.world.tick_s)))
            phase_s = int(self._rng.integers(ticks)) * self.world.tick_s
            entry = self._windows[key] = _Window(PersistentLagWindow(settings),
                                                 now_s + phase_s + interval)
            self._sample(entry.window, now_s)
        target = float(settings.lag_threshold)
        assessment = entry.window.assessment
        value = assessment.metric_value
        return ExternalMetric(settings.metric_name, _keda_number(target, settings.lag_threshold),
                              _keda_number(value, round(value)), assessment.active)

    def _settings(self, call: ExternalScalerCall) -> PersistentLagSettings:
        from ..sources import PARTITION_LAG_SOURCES

        metadata = {**call.metadata, **self.run_metadata}
        return parse_metadata(metadata, lag_sources=PARTITION_LAG_SOURCES,
                              source=f"ScaledObject {call.namespace}/{call.name} scalerMetadata")

    def _sample(self, window: PersistentLagWindow, t: float) -> None:
        window.add(t, lag_by_partition(self.world.offsets()))


def _keda_number(float_field: float, int_field: int) -> float:
    """KEDA's reading of a number the scaler sent twice: the float field when > 0, else the
    int field (``externalscaler/client.py``)."""
    return float_field if float_field > 0 else float(int_field)


__all__ = ["TwinScalers"]
