"""The twin's world: partitions, batch-level replicas and the Deployment, on a fixed-step clock.

One :class:`World` is one simulated run. Every ``tick_s`` (0.125 s) :meth:`World.tick`:

1. the producer: each partition's log end follows :class:`~.load.Production` (the profile's
   schedule and the seeded generator's exact key-to-partition mapping);
2. the platform: replicas starting share the machine's cores with each other and with the
   running replicas (each of n concurrent starters with m members progresses at
   ``min(1, cores / (n + member_load x m))`` of its alone speed), then engine ready -> subscribed ->
   the group (:mod:`.group`); the readiness probe marks a joined replica ready at its next probe
   tick; SIGTERM -> drain (the batch in progress is cut at the records written, committed) ->
   revoked and left -> process gone;
3. the replicas: a batch ends (its offsets committed) -> the replica is at a batch boundary,
   where the group's callbacks run (:meth:`~.group.Group.boundary`) -> a new batch starts when
   records are fetchable and the trigger allows (no earlier than ``trigger_interval_s`` after the
   previous start; at once when the previous batch ran longer; after a time with nothing to
   fetch, when the ``idle_poll_s`` poll slice the records arrived in ends): up to
   ``max_batch_records``,
   lasting ``engine_s(members, starting, k) + records x per_record_ms`` (the engine's fixed time
   grows with the replicas running and starting at the batch's start: CPU contention on the
   machine; and is longer for the replica's first batches k: the JVM's warm-up); records count
   as processed evenly over the write;
4. the group's timers (round completions, KIP-848 heartbeats).

Events go to :class:`EventSink` with the names and fields of the real replica, platform and
producer logs (see docs/twin.md); the driver (:mod:`.driver`) adds the controller's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .load import Production
from .params import TwinParams

#: Seconds from the platform's ``replica_terminating`` to the replica's own ``sigterm``.
SIGTERM_DELAY_S = 0.1


class EventSink:
    """Collects event records shaped like :class:`~pytest_lagscale.contract.eventlog.EventLog`'s."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def emit(self, t_s: float, source: str, event: str, **fields: Any) -> None:
        """Record ``event`` from ``source`` at twin time ``t_s`` (seconds) with ``fields``."""
        self.records.append({"event": event, "source": source, "monotonic_s": round(t_s, 6),
                             **fields})


@dataclass
class Batch:
    """One micro-batch in progress: times in seconds, ``counts`` records per partition."""

    start_s: float
    write_start_s: float
    end_s: float
    counts: dict[int, int]
    records: int
    credited: float = 0.0
    #: the world's time of the tick the batch started in (``start_s`` may lie up to a tick
    #: before it: a replica is not on the tick grid)
    tick_s: float = 0.0


@dataclass(eq=False)
class Replica:
    """One consumer replica (a pod) and its place in the group.

    ``owned`` maps each owned partition to the time it becomes fetchable (assignment + first
    fetch). ``phase`` is ``starting``, ``subscribing``, ``member``, ``stopping`` or ``gone``.
    """

    rid: str
    ordinal: int
    started_s: float
    work_s: float
    probe_phase_s: float
    phase: str = "starting"
    ready_at_s: float | None = None
    subscribe_at_s: float | None = None
    joined: bool = False
    joined_s: float | None = None
    probe_ready: bool = False
    owned: dict[int, float] = field(default_factory=dict)
    batch: Batch | None = None
    next_start_s: float = -math.inf
    waiting_s: float | None = None
    idle_since_s: float | None = None
    pending_revoke: set[int] = field(default_factory=set)
    pending_assign: list[int] = field(default_factory=list)
    rejoin: bool = False
    sigterm_s: float | None = None
    leave_s: float | None = None
    exit_s: float | None = None
    first_record: bool = False
    records_done: float = 0.0
    batches: int = 0

    @property
    def busy(self) -> bool:
        """In a batch (not at a batch boundary)."""
        return self.batch is not None


def _is_member(replica: Replica) -> bool:
    """Past its engine start and not gone (a member of the engine's CPU load)."""
    return replica.phase in ("subscribing", "member") or (
        replica.phase == "stopping" and replica.subscribe_at_s is not None)


@dataclass(frozen=True)
class Draw:
    """The random inputs of one run: the controller's phase (seconds: with a calibrated
    ``controller`` section the runner's lead beyond its nominal, else the policy's first decide
    before ``AUTOSCALE_LEAD_S``, ``twin/driver.py``); each replica start's cold-start factor and
    probe phase come from ``rng``."""

    seed: int
    controller_phase_s: float
    rng: np.random.Generator

    def stream(self, key: int) -> np.random.Generator:
        """An independent generator for one optional part of the model (``key`` >= 1: the Pods
        metric's scrape phases, the external scaler's sampling phase), derived from ``rng``'s
        seed without drawing from it, so a part that a policy uses leaves every other draw of
        the run (cold starts, probes) as it is."""
        seq = self.rng.bit_generator.seed_seq
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            seq.entropy, spawn_key=(*seq.spawn_key, 1_000 + key))))


class World:
    """The simulated partitions, replicas and Deployment of one run.

    Args:
        params: the twin's parameters.
        production: per-partition produced records on the tick grid.
        draw: the random inputs.
        events: where events go.
    """

    def __init__(self, params: TwinParams, production: Production, draw: Draw,
                 events: EventSink):
        from .group import make_group

        self.params, self.production, self.draw, self.events = params, production, draw, events
        self.tick_s = production.tick_s
        partitions = production.cumulative.shape[1]
        self.partitions = partitions
        self.log_end = np.zeros(partitions, dtype=np.int64)
        self.prev_log_end = self.log_end  # at the previous tick: a start between ticks
        self.now_s = 0.0
        self.committed = np.zeros(partitions, dtype=np.int64)
        self.position = np.zeros(partitions, dtype=np.int64)
        self.processed = np.zeros(partitions, dtype=np.int64)
        self.owner: list[Replica | None] = [None] * partitions
        self.replicas: list[Replica] = []
        self.spec_replicas = 0
        self._next_id = 1
        self.consumed_in_tick = 0.0
        self.group = make_group(self)

    # -- the Deployment --------------------------------------------------------------------
    def live(self) -> list[Replica]:
        """Replicas that exist and are not terminating, oldest first."""
        return [r for r in self.replicas if r.sigterm_s is None and r.phase != "gone"]

    @property
    def ready_replicas(self) -> int:
        """Live replicas whose readiness probe passed."""
        return sum(1 for r in self.live() if r.probe_ready)

    def scale(self, replicas: int, t_s: float) -> None:
        """Set ``spec.replicas``: start replicas or terminate the newest (events ``scaled``,
        ``replica_started`` / ``replica_terminating``)."""
        live = self.live()
        before, self.spec_replicas = len(live), replicas
        for _ in range(replicas - len(live)):
            self._start(t_s)
        for replica in sorted(live, key=lambda r: r.ordinal, reverse=True)[:max(0, len(live)
                                                                              - replicas)]:
            self._terminate(replica, t_s)
        if before != replicas:
            self.events.emit(t_s, "platform", "scaled", replicas_before=before,
                             replicas_after=replicas)

    def _start(self, t_s: float) -> None:
        used = {r.ordinal for r in self.live()}
        ordinal = next(i for i in range(len(used) + 1) if i not in used)
        rng, p = self.draw.rng, self.params
        factor = math.exp(rng.normal(0.0, p.cold_start_jitter)) if p.cold_start_jitter else 1.0
        replica = Replica(rid=f"replica-{self._next_id:04d}", ordinal=ordinal, started_s=t_s,
                          work_s=p.cold_start_alone_s * factor,
                          probe_phase_s=float(rng.uniform(0, p.probe_period_s)))
        self._next_id += 1
        self.replicas.append(replica)
        self.events.emit(t_s, "platform", "replica_started", replica_id=replica.rid,
                         ordinal=ordinal, pod_name=f"lagscale-consumer-{ordinal}")
        self.events.emit(t_s, replica.rid, "started", replica_id=replica.rid,
                         engine=p.engine, balancer=p.balancer)

    def _terminate(self, replica: Replica, t_s: float) -> None:
        replica.sigterm_s = t_s + SIGTERM_DELAY_S
        replica.leave_s = replica.sigterm_s + self.params.drain_s
        replica.exit_s = replica.sigterm_s + self.params.exit_s
        self.events.emit(t_s, "platform", "replica_terminating", replica_id=replica.rid,
                         graceful=True)

    # -- one tick --------------------------------------------------------------------------
    def tick(self, k: int, t: float | None = None) -> None:
        """Advance the world to tick ``k`` (time ``t``: ``round(k * tick_s, 6)``, computed
        when not given)."""
        if t is None:
            t = round(k * self.tick_s, 6)  # no float drift against the policy's timers
        self.prev_log_end, self.now_s = self.log_end, t
        if k >= 0:
            self.log_end = self.production.at(k)
        self.consumed_in_tick = 0.0
        self._cold_starts(t)
        for replica in list(self.replicas):
            batch = replica.batch
            if batch is not None and t < batch.end_s and replica.probe_ready \
                    and replica.sigterm_s is None and replica.phase == "member":
                continue  # a ready member in a batch: neither step below has anything to do
            self._lifecycle(replica, t)
            if replica.phase in ("member", "stopping"):
                self._batches(replica, t)
        self.group.tick(t)
        for replica in self.replicas:
            if replica.batch is not None:
                replica.records_done += self._credit(replica.batch, t)

    def load(self, t_s: float | None = None) -> tuple[int, int]:
        """``(members, starting)``: replicas past their engine start and not gone, and replicas
        whose engine is starting (the CPU load the contention model counts); given ``t_s``
        (seconds), only those started ``engine_starting_delay_s`` or more before it count as
        starting (the engine's contention terms); without, every one (cold starts, the
        controller's slip)."""
        # _is_member's test, inline: this runs at every batch start and every tick of a start
        members = sum(1 for r in self.replicas if r.phase in ("subscribing", "member")
                      or (r.phase == "stopping" and r.subscribe_at_s is not None))
        delay_s = self.params.engine_starting_delay_s
        since_s = t_s - delay_s if t_s is not None and delay_s else math.inf
        starting = sum(1 for r in self.replicas if r.phase == "starting" and r.sigterm_s is None
                       and r.started_s <= since_s)
        return members, starting

    def warming(self, t_s: float, exclude: Replica | None = None) -> int:
        """Members (as :meth:`load` counts them) other than ``exclude`` whose engine became
        ready less than ``engine_warming_s`` seconds before ``t_s``."""
        since_s = t_s - self.params.engine_warming_s
        return sum(1 for r in self.replicas if r is not exclude and r.ready_at_s is not None
                   and r.ready_at_s > since_s and _is_member(r))

    def _cold_starts(self, t: float) -> None:
        starting = [r for r in self.replicas if r.phase == "starting" and r.sigterm_s is None]
        if not starting:
            return
        members = self.load()[0] if self.params.cold_start_member_load else 0
        demand = len(starting) + self.params.cold_start_member_load * members
        rate = min(1.0, self.params.cold_start_cores / demand)
        for replica in starting:
            replica.work_s -= rate * self.tick_s
            if replica.work_s <= 0:
                replica.phase = "subscribing"
                replica.ready_at_s = t
                replica.subscribe_at_s = t + self.params.subscribe_s
                self.events.emit(t, replica.rid, "engine_ready", replica_id=replica.rid,
                                 engine=self.params.engine,
                                 startup_s=round(t - replica.started_s, 3))

    def _lifecycle(self, replica: Replica, t: float) -> None:
        p = self.params
        if replica.phase == "subscribing" and replica.sigterm_s is None \
                and t >= (replica.subscribe_at_s or 0.0):
            replica.phase = "member"
            self.events.emit(t, replica.rid, "subscribed", replica_id=replica.rid)
            self.group.join(replica, t)
        if replica.joined and not replica.probe_ready and replica.sigterm_s is None:
            since = t - replica.started_s - replica.probe_phase_s
            if since >= 0 and (since % p.probe_period_s) < self.tick_s - 1e-9 \
                    and t > (replica.joined_s or 0.0):
                replica.probe_ready = True
                self.events.emit(t, "platform", "replica_ready", replica_id=replica.rid,
                                 cold_start_s=round(t - replica.started_s, 3))
        if replica.sigterm_s is not None:
            self._stopping(replica, t)

    def _stopping(self, replica: Replica, t: float) -> None:
        if replica.phase in ("starting", "subscribing") and t >= replica.sigterm_s:
            replica.phase = "stopping"
        if replica.phase == "member" and t >= replica.sigterm_s:
            replica.phase = "stopping"
            self.events.emit(t, replica.rid, "sigterm", replica_id=replica.rid,
                             signal="SIGTERM")
            if replica.batch is not None:
                self._cut(replica, t)
        if replica.phase == "stopping" and replica.leave_s is not None and t >= replica.leave_s:
            replica.leave_s = None
            self.events.emit(t, replica.rid, "drained", replica_id=replica.rid)
            if replica.joined:
                self.group.leave(replica, t)
            self.events.emit(t, replica.rid, "closed", replica_id=replica.rid,
                             left_group=replica.joined)
        if replica.phase == "stopping" and t >= (replica.exit_s or math.inf):
            replica.phase = "gone"
            self.events.emit(t, "platform", "replica_stopped", replica_id=replica.rid,
                             outcome="terminated", exit_code=0)
            self.replicas.remove(replica)

    # -- batches ---------------------------------------------------------------------------
    def _batches(self, replica: Replica, t: float) -> None:
        """Commit a written batch and start the next one. The real replica is not on the tick
        grid: it starts its next batch as soon as the last one is written and its trigger
        interval has passed, so a batch starts at ``max(free, next_start_s)`` (free: when the
        last batch ended, or since when it waited for its trigger), not at the next tick; on
        the grid a saturated replica would lose up to a tick per batch (arrow at full scale:
        1.275 s batches on 0.125 s ticks, 7.3 % of its capacity)."""
        free_s = replica.waiting_s if replica.waiting_s is not None else t
        if replica.batch is not None and t >= replica.batch.end_s:
            free_s = replica.batch.end_s
            self._commit(replica, replica.batch, replica.batch.records)
        if replica.batch is None:
            self.group.boundary(replica, t)
            replica.waiting_s = None
            if replica.phase == "member" and replica.owned:
                start = max(free_s, replica.next_start_s)
                if start > t:
                    replica.waiting_s = free_s
                elif replica.idle_since_s is not None:
                    self._start_after_idle(replica, t)
                else:
                    self._start_batch(replica, start, t)

    def _start_after_idle(self, replica: Replica, t: float) -> None:
        """An idle replica polls in slices of ``idle_poll_s`` from when it found nothing to
        fetch (``spark_consumer/trigger.py``: a ``consume()`` slice returns at its timeout, or
        early with a full batch): its next batch starts at the end of the slice the first
        records arrived in, or at once when ``max_batch_records`` are fetchable."""
        wait = self.params.idle_poll_s
        since = t - replica.idle_since_s
        boundary = replica.idle_since_s + math.floor(since / wait + 1e-9) * wait
        if boundary > t - self.tick_s + 1e-9 and boundary > replica.idle_since_s:
            self._start_batch(replica, boundary, t)
        elif sum(self._fetchable(replica, t).values()) >= self.params.max_batch_records:
            self._start_batch(replica, t, t)

    def _fetchable(self, replica: Replica, t: float) -> dict[int, int]:
        """Records per owned partition fetchable at ``t`` (assigned and first fetch done): the
        log end interpolated within the tick when ``t`` lies before the world's time (a start
        off the tick grid takes only what was produced by then)."""
        # ``.item``: Python ints, not numpy scalars (whose arithmetic is several times slower)
        end, position = self.log_end.item, self.position.item
        if t >= self.now_s:
            return {q: end(q) - position(q) for q, at in replica.owned.items() if at <= t}
        frac = max(0.0, 1.0 - (self.now_s - t) / self.tick_s)
        prev = self.prev_log_end.item
        return {q: max(0, prev(q) + math.floor((end(q) - prev(q)) * frac) - position(q))
                for q, at in replica.owned.items() if at <= t}

    def _start_batch(self, replica: Replica, t: float, now_s: float) -> None:
        """Start a batch at ``t`` (seconds; up to a tick before the world's time ``now_s``) of
        what the replica's fetchable partitions hold. Finding them empty, with an
        ``idle_poll_s``, the replica is idle from ``t`` (:meth:`_start_after_idle`)."""
        avail = self._fetchable(replica, t)
        total = sum(avail.values())
        if total <= 0:
            if avail and self.params.idle_poll_s > 0 and replica.idle_since_s is None:
                # polling since the later of now and its last partition's first fetch (within
                # the last tick: the slices run off the tick grid)
                fetched_s = max(replica.owned[q] for q in avail)
                replica.idle_since_s = fetched_s if fetched_s > now_s - self.tick_s else t
            return
        replica.idle_since_s = None
        limit = self.params.max_batch_records
        counts = avail if total <= limit else _share(avail, limit)
        records = sum(counts.values())
        for q, n in counts.items():
            self.position[q] += n
        p = self.params
        # the load only matters through the contention terms (a cluster's are 0: skip the
        # O(replicas) count, the result is the same)
        members, starting = (self.load(t) if p.engine_s_per_member or p.engine_s_per_starting
                             or p.engine_s_per_warming else (1, 0))
        warming = self.warming(t, replica) if p.engine_s_per_warming else 0
        replica.batches += 1
        engine_s = p.engine_s(max(1, members), starting, replica.batches, warming)
        # batch_s's own sum, without computing the engine time twice per batch
        replica.batch = Batch(t, t + engine_s, engine_s + records * p.per_record_ms / 1000.0 + t,
                              {q: n for q, n in counts.items() if n}, records, tick_s=now_s)
        replica.next_start_s = t + self.params.trigger_interval_s
        if not replica.first_record:
            replica.first_record = True
            self.events.emit(t, replica.rid, "first_record", replica_id=replica.rid)

    def _credit(self, batch: Batch, t: float) -> float:
        """Count records written in ``(t - tick, t]`` as consumed (evenly over the write);
        returns how many."""
        span = batch.end_s - batch.write_start_s
        if span <= 0:
            return 0.0
        done = (t + self.tick_s - batch.write_start_s) / span
        due = batch.records * (1.0 if done > 1.0 else 0.0 if done < 0.0 else done) \
            - batch.credited
        if due <= 0:
            return 0.0
        batch.credited += due
        self.consumed_in_tick += due
        return due

    def _commit(self, replica: Replica, batch: Batch, records: int) -> None:
        full = records >= batch.records
        counts = batch.counts if full else _share(batch.counts, records)
        for q, n in counts.items():
            self.committed[q] += n
            self.processed[q] += n
        self.consumed_in_tick += records - batch.credited
        replica.records_done += records - batch.credited
        if not full:  # a cut batch's unwritten records are fetched again by the next owner
            for q in batch.counts:
                self.position[q] = self.committed[q]
        replica.batch = None

    def _cut(self, replica: Replica, t: float) -> None:
        """SIGTERM during a batch: stop after the records written so far (whole waves)."""
        batch = replica.batch
        span = batch.end_s - batch.write_start_s
        done = 0.0 if span <= 0 else min(1.0, max(0.0, (t - batch.write_start_s) / span))
        written = int(batch.records * done)
        self.events.emit(t, replica.rid, "batch_cut", replica_id=replica.rid,
                         written=written, dropped=batch.records - written)
        self._commit(replica, batch, written)

    # -- what the controller reads ---------------------------------------------------------
    def offsets(self) -> dict[int, tuple[int, int]]:
        """``{partition: (committed, log_end)}`` as the lag source reads them."""
        committed, end = self.committed.tolist(), self.log_end.tolist()
        return {q: (committed[q], end[q]) for q in range(self.partitions)}

    @property
    def total_lag(self) -> int:
        """Sum over partitions of log end minus committed, records."""
        return int((self.log_end - self.committed).sum())

    def in_flight(self) -> bool:
        """Some replica is starting, stopping or in a batch."""
        return any(r.phase != "member" or r.batch is not None for r in self.replicas)


def _share(avail: dict[int, int], limit: int) -> dict[int, int]:
    """Split ``limit`` records over partitions in proportion to ``avail`` (largest remainder,
    never more than a partition has)."""
    total = sum(avail.values())
    if total <= limit:
        return dict(avail)
    exact = {q: a * limit / total for q, a in avail.items()}
    out = {q: int(v) for q, v in exact.items()}
    rest = limit - sum(out.values())
    for q in sorted(exact, key=lambda q: (out[q] - exact[q], q))[:rest]:
        out[q] += 1
    return out


__all__ = ["SIGTERM_DELAY_S", "Batch", "Draw", "EventSink", "Replica", "World"]
