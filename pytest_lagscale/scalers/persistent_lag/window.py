"""The persistent-lag scaler's pure core: a sliding window of lag samples and what it reports.

Time and lag are inputs (no clock, no I/O). The sampler adds one sample every
``samplingInterval`` seconds (:meth:`PersistentLagWindow.due`); every sample re-evaluates the
window, and GetMetrics / IsActive return the latest :class:`Assessment`.

With T = lagThreshold, S = sustainSeconds and L the newest sample's total lag, GetMetrics
reports 0 with no sample yet, L while L <= T, T while L > T for less than S seconds, and then
the persistent lag: the lowest total lag of the samples of the last S seconds, i.e. the level
lag stayed above for S seconds (one sample at or below T starts the wait again). IsActive is
the reported value > activationLagThreshold. ``scaleUpStabilization`` caps the value at a
replica level (``ceil(value / T)``) for that many seconds after a rise; ``scaleDownStabilization``
is refused (it is the HPA's scale-down window). The table of states, the reasons and what
differs from the README: docs/policies.md, "Persistent-lag external scaler", "Behaviour".

Source: sarkarshuvojit/keda-persistent-kafka-lag-scaler readme.md ("How Persistent Lag is
Calculated", "Configuration Reference", "Example Scenario") at 27a6260.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .metadata import PersistentLagSettings

STATES = ("empty", "below", "pending", "sustained")


@dataclass(frozen=True)
class LagSample:
    """One read of the group's lag.

    Attributes:
        at_s: when, in seconds on the sampler's monotonic clock.
        total_lag: records of lag summed over the partitions.
        partition_lag: partition -> records of lag.
    """

    at_s: float
    total_lag: int
    partition_lag: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Assessment:
    """What the window reports after its newest sample.

    Attributes:
        state: one of :data:`STATES`.
        metric_value: the value GetMetrics returns, in records (see the module's table).
        active: IsActive's answer (``metric_value`` > activationLagThreshold).
        reason: CamelCase: ``NoSamples``, ``BelowThreshold``, ``NotSustained``, ``Sustained``,
            ``ScaleUpStabilized`` (the value was capped by scaleUpStabilization).
        at_s: the newest sample's time in seconds (None when empty).
        total_lag: the newest sample's total lag in records (None when empty).
        above_for_s: seconds the newest run of samples above lagThreshold lasts (0 when below).
        persistent_lag: the lowest total lag of the last sustainSeconds, records (sustained
            only, else None).
        partition_lag: partition -> the newest sample's lag, records.
        partition_persistent_lag: partition -> its lowest lag over the last sustainSeconds
            (sustained only, else empty).
        samples: samples in the window.
    """

    state: str
    metric_value: float
    active: bool
    reason: str
    at_s: float | None = None
    total_lag: int | None = None
    above_for_s: float = 0.0
    persistent_lag: int | None = None
    partition_lag: Mapping[int, int] = field(default_factory=dict)
    partition_persistent_lag: Mapping[int, int] = field(default_factory=dict)
    samples: int = 0


class PersistentLagWindow:
    """The sliding window of one ScaledObject trigger and its scale-up stabilization state.

    Args:
        settings: the validated metadata (threshold, sustain, window size, interval, ...).

    Example:
        >>> from pytest_lagscale.scalers.persistent_lag.metadata import PersistentLagSettings
        >>> w = PersistentLagWindow(PersistentLagSettings("k:9092", "g", "t", lag_threshold=1000,
        ...                                               sustain_s=20, sampling_interval_s=10))
        >>> [w.add(t, {0: lag}).state for t, lag in ((0, 3000), (10, 2500), (20, 2000))]
        ['pending', 'pending', 'sustained']
        >>> w.assessment.metric_value
        2000.0
    """

    def __init__(self, settings: PersistentLagSettings):
        self.settings = settings
        self._samples: deque[LagSample] = deque(maxlen=settings.window_size)
        self._latest = Assessment("empty", 0.0, False, "NoSamples")
        self._rise_at_s: float | None = None
        self._cap = 0.0

    @property
    def samples(self) -> tuple[LagSample, ...]:
        """The samples in the window, oldest first (at most windowSize)."""
        return tuple(self._samples)

    @property
    def assessment(self) -> Assessment:
        """The newest assessment (``empty`` before the first sample)."""
        return self._latest

    def due(self, now_s: float) -> bool:
        """A sample is due at ``now_s``: none yet, or samplingInterval seconds since the last."""
        return not self._samples or now_s >= self._samples[-1].at_s + self.settings.sampling_interval_s

    def add(self, now_s: float, partition_lag: Mapping[int, int]) -> Assessment:
        """Add one sample and re-evaluate (the oldest sample leaves a full window).

        Args:
            now_s: the sample's time in seconds (monotonic; not before the previous sample).
            partition_lag: partition -> records of lag (negative values count 0).

        Returns:
            The new :attr:`assessment`.

        Raises:
            ValueError: ``now_s`` is before the newest sample's time.
        """
        if self._samples and now_s < self._samples[-1].at_s:
            raise ValueError(f"now_s: {now_s!r} is before the newest sample ({self._samples[-1].at_s!r}); "
                             "pass monotonic times")
        lags = MappingProxyType({int(p): max(0, int(v)) for p, v in partition_lag.items()})
        self._samples.append(LagSample(now_s, sum(lags.values()), lags))
        self._latest = self._stabilized(self._evaluate())
        return self._latest

    def _evaluate(self) -> Assessment:
        """The unstabilized assessment of the window (the module's table)."""
        s, samples = self.settings, self._samples
        newest = samples[-1]
        common = dict(at_s=newest.at_s, total_lag=newest.total_lag, partition_lag=newest.partition_lag,
                      samples=len(samples))
        threshold = s.lag_threshold
        if newest.total_lag <= threshold:
            return self._assess("below", float(newest.total_lag), "BelowThreshold", common)
        run_start = newest
        for sample in reversed(samples):
            if sample.total_lag <= threshold:
                break
            run_start = sample
        above_for_s = newest.at_s - run_start.at_s
        if above_for_s < s.sustain_s:
            return self._assess("pending", float(threshold), "NotSustained", common, above_for_s=above_for_s)
        span = [x for x in samples if x.at_s >= newest.at_s - s.sustain_s]
        persistent = min(x.total_lag for x in span)
        partitions = {p: min(x.partition_lag.get(p, 0) for x in span) for p in newest.partition_lag}
        return self._assess("sustained", float(persistent), "Sustained", common, above_for_s=above_for_s,
                            persistent_lag=persistent, partition_persistent_lag=MappingProxyType(partitions))

    def _assess(self, state: str, value: float, reason: str, common: dict, **extra: object) -> Assessment:
        return Assessment(state, value, value > self.settings.activation_lag_threshold, reason,
                          **common, **extra)  # type: ignore[arg-type]

    def _stabilized(self, raw: Assessment) -> Assessment:
        """Apply scaleUpStabilization: within the cool-down after a rise, cap at the rise's value."""
        hold_s = self.settings.scale_up_stabilization_s
        if hold_s <= 0 or raw.at_s is None:
            return raw
        if self._rise_at_s is not None and raw.at_s < self._rise_at_s + hold_s:
            if raw.metric_value <= self._cap:
                return raw
            return Assessment(raw.state, self._cap, self._cap > self.settings.activation_lag_threshold,
                              "ScaleUpStabilized", raw.at_s, raw.total_lag, raw.above_for_s, raw.persistent_lag,
                              raw.partition_lag, raw.partition_persistent_lag, raw.samples)
        previous = self._previous_value
        if self.level(raw.metric_value) > self.level(previous):
            self._rise_at_s, self._cap = raw.at_s, raw.metric_value
        return raw

    @property
    def _previous_value(self) -> float:
        return self._latest.metric_value

    def level(self, value: float) -> int:
        """The replica level a value asks for under the AverageValue target: ceil(value / T)."""
        return math.ceil(value / self.settings.lag_threshold)
