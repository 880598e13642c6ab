"""One sampling thread per ScaledObject trigger: lag read every samplingInterval into its window.

The I/O half of the persistent-lag scaler (the README's "Metrics Scraper"): a daemon thread
reads the group's offsets from a :class:`~pytest_lagscale.sources.base.LagSource`, turns them
into lag per partition and adds the sample to the trigger's
:class:`~pytest_lagscale.scalers.persistent_lag.window.PersistentLagWindow`. The first read
happens as soon as the sampler starts; a failed read is remembered (GetMetrics then answers
UNAVAILABLE, which KEDA counts toward its fallback) and leaves a gap in the window.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ...contract.clock import Clock, RealClock
from ...sources.base import GroupOffsets, LagSource
from .metadata import PersistentLagSettings
from .window import Assessment, PersistentLagWindow

log = logging.getLogger(__name__)

#: ``factory(settings) -> LagSource``: how a sampler gets its lag source.
SourceFactory = Callable[[PersistentLagSettings], LagSource]


def broker_lag_source(settings: PersistentLagSettings) -> LagSource:
    """The lag source ``settings.lag_source`` (``broker``: the group's offsets from
    ``bootstrapServers`` through the AdminClient), from :data:`pytest_lagscale.sources.LAG_SOURCES`."""
    from ...kafka.admin import KafkaAdmin
    from ...sources import make_lag_source

    return make_lag_source(settings.lag_source, KafkaAdmin(settings.bootstrap_servers),
                           settings.consumer_group, settings.topic)


def lag_by_partition(offsets: GroupOffsets) -> dict[int, int]:
    """Records not yet committed per partition: ``log_end - committed``, the whole ``log_end``
    when nothing is committed (committed -1, as kafka_exporter counts it), partitions with an
    unknown log end left out, never negative."""
    out = {}
    for partition, (committed, log_end) in offsets.items():
        if log_end is not None:
            out[partition] = max(0, log_end - committed if committed >= 0 else log_end)
    return out


class LagSampler:
    """Samples one trigger's lag into its window on a daemon thread.

    Args:
        label: who it samples for, in logs (``default/consumer``).
        settings: the trigger's validated metadata.
        source: the lag source (read once per sample).
        clock: time source of the samples (monotonic seconds).

    Attributes:
        window: the pure window (read its ``assessment``).
        last_error: the newest read's error (None after a successful read).
        last_used_s: when a caller last asked (:meth:`touch`), clock seconds.
    """

    def __init__(self, label: str, settings: PersistentLagSettings, source: LagSource,
                 clock: Clock | None = None):
        self.label, self.settings, self.source = label, settings, source
        self.clock = clock or RealClock()
        self.window = PersistentLagWindow(settings)
        self.last_error: str | None = None
        self.last_used_s = self.clock.now()
        self.changed = threading.Condition()
        self.version = 0
        self._first = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> LagSampler:
        """Start the thread (its first read at once); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"lagscale-sampler-{self.label}",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread (waits up to ``timeout_s`` seconds). Idempotent."""
        self._stop.set()
        with self.changed:
            self.changed.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    @property
    def stopped(self) -> bool:
        """:meth:`stop` was called."""
        return self._stop.is_set()

    def touch(self) -> None:
        """Record that a caller used this sampler now."""
        self.last_used_s = self.clock.now()

    def wait_first(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for the first read (success or failure)."""
        return self._first.wait(timeout_s)

    def current(self) -> tuple[Assessment, str | None]:
        """The newest assessment and the newest read's error (None when it succeeded)."""
        with self.changed:
            return self.window.assessment, self.last_error

    def sample_once(self) -> None:
        """Read lag once and add the sample (or record the read's error); wakes waiters."""
        now_s = self.clock.now()
        error, assessment = None, None
        try:
            offsets = self.source.read()
        except Exception as exc:  # BrokerError, transport: reported to callers as UNAVAILABLE
            error = f"{type(exc).__name__}: {exc}"
        with self.changed:
            if error is None:
                before = self.window.assessment
                assessment = self.window.add(now_s, lag_by_partition(offsets))
                if (before.state, before.active) != (assessment.state, assessment.active):
                    log.info("%s: %s (%s) total lag %s, value %g, active %s", self.label, assessment.state,
                             assessment.reason, assessment.total_lag, assessment.metric_value, assessment.active)
            elif error != self.last_error:
                log.warning("%s: lag read failed: %s", self.label, error)
            self.last_error = error
            self.version += 1
            self.changed.notify_all()
        self._first.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.window.due(self.clock.now()) or self.last_error is not None:
                self.sample_once()
            wait_s = self.settings.sampling_interval_s
            samples = self.window.samples
            if samples and self.last_error is None:
                wait_s = max(0.0, samples[-1].at_s + self.settings.sampling_interval_s - self.clock.now())
            self._stop.wait(wait_s)
        close = getattr(self.source, "close", None)
        if callable(close):
            _quietly(close)


def _quietly(call: Callable[[], Any]) -> None:
    try:
        call()
    except Exception:  # closing a lag source at shutdown must not raise
        log.debug("closing the lag source failed", exc_info=True)
