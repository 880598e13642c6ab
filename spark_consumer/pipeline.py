"""One micro-batch: decode, enrich, simulate the downstream write, write to the sink.

The simulated write is I/O, not CPU: records are written in waves of ``inflight`` records and
each wave costs ``process_ms`` of sleeping, so a batch of n records sleeps
``ceil(n / inflight) * process_ms`` (deadline-based, so sleep overheads do not accumulate; waves
shorter than 2 ms are grouped per sleep). A stop request is honoured between waves: the waves in
flight finish, no new wave starts, and only the finished prefix of the batch is written and
committed; the rest stays uncommitted for the partitions' next owner.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from pytest_lagscale.contract.clock import Clock

from .engine import ENRICHED_SCHEMA, Engine
from .metrics import ReplicaMetrics
from .records import DecodedBatch, Message, decode_messages, next_offsets
from .store import Sink

MIN_STEP_S = 0.002


class WriteSimulator:
    """Sleeps like a downstream sink with bounded concurrency.

    Args:
        process_ms: wall time per record, in ms (0 = no sleeping).
        inflight: records written concurrently.
        clock: provides ``now()`` and ``sleep()`` (a FakeClock in tests).
        wall_ns: wall clock in ns since the epoch, stamped on finished records.
    """

    def __init__(self, process_ms: float, inflight: int, clock: Clock,
                 wall_ns: Callable[[], int] = time.time_ns):
        self.process_s = process_ms / 1000.0
        self.inflight = inflight
        self._clock = clock
        self._wall_ns = wall_ns
        waves = 1 if self.process_s <= 0 else max(1, math.ceil(MIN_STEP_S / self.process_s))
        self._waves_per_step = waves

    def duration_s(self, n: int) -> float:
        """Sleep time for ``n`` records: ``ceil(n / inflight) * process_ms`` in seconds."""
        return math.ceil(n / self.inflight) * self.process_s

    def run(self, n: int, should_stop: Callable[[], bool],
            on_progress: Callable[[int, int], None]) -> np.ndarray:
        """Write ``n`` records, or a prefix of them if ``should_stop()`` turns true.

        Args:
            n: records in the batch.
            should_stop: polled before each step; True ends the batch after the steps so far.
            on_progress: called after each step with (first record index, records finished).

        Returns:
            int64 ns timestamps, one per finished record (the finished prefix's length).
        """
        written = np.empty(n, dtype=np.int64)
        if self.process_s <= 0:
            if n and not should_stop():
                written[:] = self._wall_ns()
                on_progress(0, n)
                return written
            return written[:0]
        step = self.inflight * self._waves_per_step
        start, done = self._clock.now(), 0
        while done < n and not should_stop():
            k = min(step, n - done)
            deadline = start + self.duration_s(done + k)
            self._clock.sleep(deadline - self._clock.now())
            written[done:done + k] = self._wall_ns()
            on_progress(done, k)
            done += k
        return written[:done]


@dataclass(frozen=True)
class BatchOutcome:
    """What one batch did.

    Attributes:
        messages: messages polled.
        records_done: records written downstream (a prefix when stopped early).
        messages_done: leading messages finished (records done plus malformed among them).
        offsets: ``{partition: next offset}`` to commit for the finished prefix.
        engine_s: seconds spent in the engine.
        stopped_early: True when a stop request cut the batch short.
    """

    messages: int
    records_done: int
    messages_done: int
    offsets: dict[int, int]
    engine_s: float
    stopped_early: bool


class BatchProcessor:
    """Runs the per-batch pipeline (everything but the commit).

    Args:
        engine: started enrichment engine.
        store: the replica's sink: the Parquet store or the output topic.
        simulator: the downstream write simulation.
        metrics: the replica's metrics.
        clock: monotonic clock for engine timing.
        on_first_record: called once, after the first record's write finished.
        wall_ns: wall clock in ns since the epoch.
    """

    def __init__(self, engine: Engine, store: Sink, simulator: WriteSimulator,
                 metrics: ReplicaMetrics, clock: Clock,
                 on_first_record: Callable[[], None] = lambda: None,
                 wall_ns: Callable[[], int] = time.time_ns):
        self._engine = engine
        self._store = store
        self._sim = simulator
        self._metrics = metrics
        self._clock = clock
        self._on_first_record = on_first_record
        self._wall_ns = wall_ns
        self._first_done = False

    def process(self, messages: Sequence[Message],
                should_stop: Callable[[], bool]) -> BatchOutcome:
        """Decode, enrich, write (a prefix, if stopped) one batch; returns what to commit."""
        batch = decode_messages(messages, self._wall_ns())
        if batch.malformed:
            self._metrics.records_malformed.inc(batch.malformed)
        n = batch.records.num_rows
        self._metrics.batch_records.observe(n)
        t0 = self._clock.now()
        enriched = self._engine.enrich(batch.records) if n else ENRICHED_SCHEMA.empty_table()
        engine_s = self._clock.now() - t0
        self._metrics.batch_engine.observe(engine_s)
        written = self._sim.run(n, should_stop, self._progress)
        done = len(written)
        if done:
            self._store.write(enriched.slice(0, done), written)
            self._count_partitions(batch, done)
        k = batch.messages_done(done)
        offsets = next_offsets(batch.partitions[:k], batch.offsets[:k])
        return BatchOutcome(len(messages), done, k, offsets, engine_s, k < len(messages))

    def _progress(self, first: int, count: int) -> None:
        self._metrics.processed(count)
        if not self._first_done:
            self._first_done = True
            self._on_first_record()

    def _count_partitions(self, batch: DecodedBatch, done: int) -> None:
        parts = batch.records.column("partition").to_numpy()[:done]
        counts = np.bincount(parts)
        for p in np.flatnonzero(counts):
            self._metrics.partition_records_processed.labels(partition=str(p)).inc(
                int(counts[p]))

