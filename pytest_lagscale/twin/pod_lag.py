"""The replicas' own lag as a Pods-metric HPA reads it, in the twin: ``Observation.pod_metrics``.

A real run's chain, and the twin's model of each link (docs/twin.md, "What is modelled", Pods
metric, gives the details):

1. **The replica's gauge** (``spark_consumer/lag.py`` ``ConsumerLagCollector.refresh``), read
   between batches at most once per :data:`GAUGE_REFRESH_S`: per owned partition it has taken
   records from since its assignment, ``log_end - position`` (position: committed plus the
   records of the batch in progress).
2. **The scrape** (the run's Prometheus, every :data:`SCRAPE_INTERVAL_S`): each replica at its
   own phase drawn on the tick grid, exporting the last reading for the partitions it owns then.
3. **The query** (``platform/pod_metrics.py``, at each HPA sync): per live replica the sum of
   its newest scrape; None (a missing pod) before its first series or after a scrape without
   one; milli-units truncated, none Pending.

Not modelled: the high watermark is the log end at the reading (the real one is the last fetch
response's, lower in the steepest part of a spike); the trigger's poll buffer (records a waiting
replica already polled count as lag here, up to one trigger interval of its input); the ~1 s
until Prometheus discovers a new replica.

Source: spark_consumer/lag.py (ConsumerLagCollector.refresh, sample, collect);
platform/pod_metrics.py (PrometheusPodMetrics.read); kubernetes-sigs/prometheus-adapter
metricsQuery ``sum(...) by (pod)`` v0.12.0; docs/policies.md "Pods-metric HPA on the consumers'
own lag"
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..control.hpa import PodMetric
from .world import Replica, World

#: Seconds between two readings of a replica's gauge, at least (``ConsumerLagCollector``'s
#: ``interval_s`` default, which the replica uses).
GAUGE_REFRESH_S = 1.0
#: Seconds between two scrapes of a replica: the run's Prometheus (``PrometheusServer``'s
#: ``scrape_interval_s`` default, which ``experiment/runner.py`` uses).
SCRAPE_INTERVAL_S = 1.0
#: Key of the draw's stream for the scrape phases (:meth:`~.world.Draw.stream`).
STREAM_KEY = 1


@dataclass
class _Gauge:
    """One replica's exporter state.

    Attributes:
        phase_ticks: its scrape phase, ticks into each scrape interval.
        next_read_s: the earliest time of its next reading, seconds (None: never read).
        known: partition -> the ``owned`` value of the assignment it was first taken from in
            (a new assignment forgets it: position unknown again).
        reading: partition -> records of lag at the last reading.
        scraped: the newest scrape's sum in records, None without a series or before a scrape.
    """

    phase_ticks: int
    next_read_s: float | None = None
    known: dict[int, float] = field(default_factory=dict)
    reading: dict[int, int] = field(default_factory=dict)
    scraped: int | None = None


class PodLagMetric:
    """``consumer_records_lag`` per replica, read, scraped and queried as in a real run.

    Args:
        world: the simulated run (read only).

    Call :meth:`tick` after every :meth:`World.tick <.world.World.tick>` and :meth:`read` at a
    controller step.
    """

    def __init__(self, world: World):
        self.world = world
        self.per_scrape = max(1, int(round(SCRAPE_INTERVAL_S / world.tick_s)))
        self._rng = world.draw.stream(STREAM_KEY)
        self._gauges: dict[str, _Gauge] = {}

    def tick(self, k: int) -> None:
        """Refresh the gauges due at tick ``k`` (time ``k x tick_s``), then scrape those whose
        phase it is."""
        t = round(k * self.world.tick_s, 6)
        for replica in self.world.replicas:
            gauge = self._gauge(replica)
            if replica.phase == "member" and _between_batches(replica, t) \
                    and (gauge.next_read_s is None or t >= gauge.next_read_s - 1e-9):
                gauge.next_read_s = t + GAUGE_REFRESH_S
                gauge.reading = self._reading(replica, gauge, t)
            self._learn_positions(replica, gauge, t)
            if k % self.per_scrape == gauge.phase_ticks:
                series = [v for q, v in gauge.reading.items() if q in replica.owned]
                gauge.scraped = sum(series) if series else None
        gone = {r.rid for r in self.world.replicas}
        for rid in [rid for rid in self._gauges if rid not in gone]:
            del self._gauges[rid]

    def values(self) -> dict[str, int | None]:
        """``{replica_id: records}`` of the live replicas, oldest first (None: missing), as the
        ``pod_metrics`` event's ``values``."""
        return {r.rid: (self._gauges[r.rid].scraped if r.rid in self._gauges else None)
                for r in self.world.live()}

    def read(self) -> tuple[PodMetric, ...]:
        """One :class:`PodMetric` per live replica, oldest first, in milli-units (none
        Pending: a replica's process runs from its start)."""
        return tuple(PodMetric(None if v is None else int(v * 1000))
                     for v in self.values().values())

    # -- the replica's side ------------------------------------------------------------------
    def _gauge(self, replica: Replica) -> _Gauge:
        gauge = self._gauges.get(replica.rid)
        if gauge is None:
            gauge = self._gauges[replica.rid] = _Gauge(int(self._rng.integers(self.per_scrape)))
        return gauge

    def _reading(self, replica: Replica, gauge: _Gauge, t: float) -> dict[int, int]:
        """``{partition: log_end - position}`` of its owned partitions with a known position, the
        records of a batch started at ``t`` not yet taken."""
        w, started = self.world, _started_at(replica, t)
        out = {}
        for q, since in replica.owned.items():
            if gauge.known.get(q) != since:
                continue
            position = int(w.position[q]) - started.get(q, 0)
            out[q] = max(0, int(w.log_end[q]) - position)
        return out

    @staticmethod
    def _learn_positions(replica: Replica, gauge: _Gauge, t: float) -> None:
        """A partition's position is known once a batch took records from it (after this
        tick's reading: the real replica polls them after its refresh)."""
        gauge.known = {q: s for q, s in gauge.known.items() if replica.owned.get(q) == s}
        for q in _started_at(replica, t):
            if q in replica.owned:
                gauge.known[q] = replica.owned[q]


def _started_at(replica: Replica, t: float) -> dict[int, int]:
    """Records per partition of the batch ``replica`` started in the tick at ``t`` (empty if
    none)."""
    batch = replica.batch
    return batch.counts if batch is not None and abs(batch.tick_s - t) < 1e-9 else {}


def _between_batches(replica: Replica, t: float) -> bool:
    """No batch in progress, or the one in progress started in the tick at ``t``."""
    return replica.batch is None or abs(replica.batch.tick_s - t) < 1e-9


__all__ = ["GAUGE_REFRESH_S", "SCRAPE_INTERVAL_S", "PodLagMetric"]
