"""The replica's life: start, join, poll-process-commit, drain on SIGTERM, close, exit.

Drain. SIGTERM or SIGINT sets a stop flag and arms a watchdog of ``--drain-timeout`` seconds.
The poll loop stops fetching; a batch in progress finishes the write waves in flight, writes the
finished prefix and commits exactly it; records the trigger (``--trigger-interval``, see
:mod:`spark_consumer.trigger`) buffered for a later batch are neither processed nor committed (the
``drained`` event counts them); ``close()`` then runs the final revoke callback (which
retries any pending commit) and leaves the group. Static members (``--instance-id``) do not
leave: classic groups keep their partitions until the session timeout, KIP-848 groups get a
temporary leave (epoch -2) — a restart within the timeout gets the same partitions back without
a rebalance. The engine stops last; exit code 0. If the watchdog fires first, the replica exits
1 at once (``drain_timeout`` event); whatever was processed and not committed is reprocessed by
the next owner, as after SIGKILL.

Share groups. ``--group-type share`` makes the replica a KIP-932 share-group member instead
(:mod:`spark_consumer.share`: explicit acknowledgements, one poll's records per batch run);
the drain, the watchdog, the engine and the sink are the same.

Liveness. ``GET /healthz`` and ``replica_live`` say whether the group session still works
(:mod:`spark_consumer.liveness`): 503 once a joined replica went longer than its session timeout
without a healthy group moment (librdkafka's statistics, an assignment, a batch), so a
livenessProbe restarts a replica whose session broke for good.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pytest_lagscale.contract.clock import Clock

from .engine import Engine
from .eventlog import EventLog
from .group import (
    GroupConsumer,
    MembershipProbe,
    OffsetCommitter,
    RebalanceHandler,
    consumer_config,
    describe_members,
    session_timeout_s,
)
from .lag import ConsumerLagCollector
from .liveness import STATS_INTERVAL_MS, GroupLiveness
from .metrics import MetricsServer, ReplicaMetrics
from .options import ConsumerOptions
from .pipeline import BatchProcessor, WriteSimulator
from .share import (SHARE_SESSION_TIMEOUT_S, DeliveryCountSink, ShareConsumerLike, ShareLoop,
                    ShareMembership, apply_offset_reset, share_consumer_config)
from .store import Sink
from .trigger import MicroBatch, MicroBatchTrigger, TriggerSettings

EXIT_OK, EXIT_FAILED = 0, 1
PENDING_RETRY_S = 1.0
"""Seconds between retries of pending offsets while no batch arrives (idle partitions)."""
SETTLE_MAX_S = 5.0
"""Longest a draining replica serves a rebalance to retry its failed last commit (capped
at half of ``--drain-timeout``)."""
SETTLE_POLL_S = 0.2
"""Seconds per ``consume()`` while settling: each call serves the group's callbacks."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that start the drain."""
HARD_EXIT_AFTER_S = 2.0
"""Seconds past ``--drain-timeout`` at which faulthandler's C watchdog ends a replica whose
Python threads cannot run (a C call holding the GIL): it prints every thread's stack and exits
1, when the Python watchdog (which writes ``drain_timeout``) could not."""


def _wake_only(signum: int, frame: object) -> None:
    """The Python-level handler of :data:`STOP_SIGNALS`: the watcher thread starts the drain."""


def _make_consumer(config: dict[str, Any]) -> GroupConsumer:
    from confluent_kafka import Consumer

    return Consumer(config)


def _make_share_consumer(config: dict[str, Any]) -> ShareConsumerLike:
    from confluent_kafka import ShareConsumer

    return ShareConsumer(config)


@dataclass
class ReplicaParts:
    """What a replica is built from (tests swap the engine, consumer factories, the share
    group's offset-reset call and the clock)."""

    opts: ConsumerOptions
    engine: Engine
    events: EventLog
    metrics: ReplicaMetrics
    store: Sink
    clock: Clock
    make_consumer: Callable[[dict[str, Any]], GroupConsumer] = _make_consumer
    describe_members: Callable[[], set[str]] | None = None
    serve_http: bool = True
    make_share_consumer: Callable[[dict[str, Any]], ShareConsumerLike] = _make_share_consumer
    set_share_offset_reset: Callable[[str, str, str], None] = apply_offset_reset


class Replica:
    """One consumer replica; :meth:`run` returns the process exit code."""

    def __init__(self, parts: ReplicaParts):
        self.p = parts
        self.opts = parts.opts
        self.stop_requested = threading.Event()
        self._stop_lock = threading.Lock()
        self._hard_exit_armed = False
        self._engine_ready = False
        self._watchdog: threading.Timer | None = None
        self._fatal: str | None = None
        self.handler: RebalanceHandler | ShareMembership | None = None
        self.share = self.opts.group_type == "share"
        # consumer_records_lag{topic,partition}: read by the poll thread between batches (1/s).
        self.lag = ConsumerLagCollector(self.opts.topic, self._owned)
        parts.metrics.registry.register(self.lag)
        timeout_s = SHARE_SESSION_TIMEOUT_S if self.share else session_timeout_s(self.opts)
        self.group_liveness = GroupLiveness(timeout_s, parts.clock, parts.events,
                                            self.opts.replica_id)
        self.server = MetricsServer(parts.metrics, self.readiness, self.opts.metrics_host,
                                    self.opts.metrics_port, is_live=self.liveness)
        # Read at scrape time: the gauge is never set, so the signal handler takes no
        # metric lock (a non-reentrant lock the interrupted main thread might hold).
        parts.metrics.ready.set_function(lambda: float(self.readiness()[0]))
        parts.metrics.live.set_function(lambda: float(self.liveness()[0]))

    # -- signals and readiness -------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT start the drain, even while the main thread waits inside C.

        Python runs a signal's handler in the main thread, between two bytecodes; a main thread
        inside a C call that outlives the signal never gets there. librdkafka's synchronous
        commit is one: it waits for a group coordinator with no timeout, so for ever once the
        broker is gone, and a replica signalled then would never arm its drain watchdog. So the
        C-level handler's wakeup byte (``signal.set_wakeup_fd``: the signal's number, written
        whatever the main thread is doing) is read by a watcher thread, which starts the drain;
        the Python-level handler does nothing. The watcher also arms faulthandler's watchdog
        (a C thread, no GIL needed) for :data:`HARD_EXIT_AFTER_S` past the drain timeout: a
        close() that hangs inside librdkafka holding the GIL (seen in a rolling restart: every
        Python thread stopped, /healthz unanswered) still ends, with every thread's stack in
        the log. Call from the main thread, once.
        """
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        for sig in STOP_SIGNALS:
            signal.signal(sig, _wake_only)
        threading.Thread(target=self._watch_signals, args=(read_fd,), name="stop-signals",
                         daemon=True).start()

    def _watch_signals(self, read_fd: int) -> None:
        while True:
            for signum in os.read(read_fd, 64):
                if signum in STOP_SIGNALS:
                    self._on_signal(signum, None)
                    if not self._hard_exit_armed:
                        self._hard_exit_armed = True
                        faulthandler.dump_traceback_later(
                            self.opts.drain_timeout_s + HARD_EXIT_AFTER_S, exit=True)

    def _on_signal(self, signum: int, frame: object) -> None:
        """Start the drain: set the stop flag and arm the ``--drain-timeout`` watchdog (once;
        any thread)."""
        with self._stop_lock:
            if self.stop_requested.is_set():
                return
            # Written before the flag is set: the watcher thread calls this, and a main thread
            # that saw the flag first wrote its drained (or batch_cut) ahead of the sigterm.
            self.p.events.emit("sigterm", signal=signal.Signals(signum).name)
            self.stop_requested.set()
            self._watchdog = threading.Timer(self.opts.drain_timeout_s, self._drain_expired)
            self._watchdog.daemon = True
            self._watchdog.start()

    def _drain_expired(self) -> None:
        joined = self.handler is not None and self.handler.joined
        code = EXIT_FAILED if joined else EXIT_OK
        self.p.events.emit("drain_timeout", timeout_s=self.opts.drain_timeout_s, code=code)
        os._exit(code)

    def readiness(self) -> tuple[bool, str]:
        """(ready, reason) for ``GET /ready``: engine up and first assignment received."""
        if not self._engine_ready:
            return False, f"{self.opts.replica_id}: engine {self.opts.engine} starting"
        if self.handler is None or not self.handler.joined:
            return False, f"{self.opts.replica_id}: {self._join_wait}"
        if self.stop_requested.is_set():
            return False, f"{self.opts.replica_id}: draining"
        return True, f"{self.opts.replica_id}: ready"

    def liveness(self) -> tuple[bool, str]:
        """(live, reason) for ``GET /healthz`` (:mod:`spark_consumer.liveness`): live while
        starting, before the first assignment and while draining; afterwards, not live once the
        group went longer than the session timeout without a healthy moment."""
        exempt = None
        if not self._engine_ready:
            exempt = f"engine {self.opts.engine} starting"
        elif self.handler is None or not self.handler.joined:
            exempt = self._join_wait
        elif self.stop_requested.is_set():
            exempt = "draining"
        return self.group_liveness.check(exempt)

    @property
    def _join_wait(self) -> str:
        return "waiting to join the share group" if self.share else \
            "waiting for the first assignment"

    # -- life ------------------------------------------------------------------------------
    def run(self) -> int:
        """Start, consume until stopped, drain and close; returns the exit code."""
        ev, opts = self.p.events, self.opts
        share = {"group_type": "share", "share_offset_reset": opts.share_offset_reset} \
            if self.share else {}
        ev.emit("started", engine=opts.engine, balancer=opts.balancer, group=opts.group,
                topic=opts.topic, commit=opts.commit, instance_id=opts.instance_id,
                process_ms=opts.process_ms, inflight=opts.inflight, max_batch=opts.max_batch,
                trigger_interval_s=opts.trigger_interval_s, sink=opts.sink,
                output_topic=opts.output_topic, **share)
        self.p.metrics.info.info({
            "replica_id": opts.replica_id, "engine": opts.engine, "balancer": opts.balancer,
            "group": opts.group, "topic": opts.topic, "commit": opts.commit,
            "instance_id": opts.instance_id or "", **({"group_type": "share"} if share else {})})
        try:
            self._start_server()
            if not self._start_engine():
                return self._exit(EXIT_FAILED)
            if self.stop_requested.is_set():
                return self._exit(EXIT_OK, engine=True)
            return self._exit(self._consume(), engine=True)
        finally:
            self.server.stop()

    def _start_server(self) -> None:
        if self.p.serve_http:
            self.server.start()
        port = self.server.port
        if self.opts.port_file is not None:
            tmp = Path(f"{self.opts.port_file}.tmp")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(f"{port}\n")
            os.replace(tmp, self.opts.port_file)
        self.p.events.emit("metrics_listening", host=self.opts.metrics_host, port=port)

    def _start_engine(self) -> bool:
        t0 = self.p.clock.now()
        try:
            self.p.engine.start()
        except Exception as exc:  # anything the JVM or pyspark raises is fatal here
            self.p.events.emit("error", where="engine_start", error=repr(exc))
            return False
        startup_s = round(self.p.clock.now() - t0, 3)
        self._engine_ready = True
        cds = getattr(self.p.engine, "cds_archive", None)
        self.p.events.emit("engine_ready", engine=self.p.engine.name, startup_s=startup_s,
                           cds_archive=None if cds is None else str(cds))
        if self.p.engine.name == "spark":
            self.p.events.emit("spark_ready", startup_s=startup_s)
        return True

    def _consume(self) -> int:
        if self.share:
            return self._consume_share()
        ev, m = self.p.events, self.p.metrics
        conf = {**consumer_config(self.opts), "error_cb": self._on_kafka_error,
                "statistics.interval.ms": STATS_INTERVAL_MS,
                "stats_cb": self.group_liveness.on_stats}
        consumer = self.p.make_consumer(conf)
        committer = OffsetCommitter(consumer, self.opts.topic, self.opts.commit, m, ev)
        self.handler = RebalanceHandler(committer, m, ev, self.p.clock, self._on_joined)
        consumer.subscribe([self.opts.topic], on_assign=self._on_assign,
                           on_revoke=self.handler.on_revoke, on_lost=self.handler.on_lost)
        ev.emit("subscribed", topic=self.opts.topic, group=self.opts.group)
        processor = BatchProcessor(
            self.p.engine, self.p.store,
            WriteSimulator(self.opts.process_ms, self.opts.inflight, self.p.clock), m,
            self.p.clock, on_first_record=lambda: ev.emit("first_record"))
        trigger = MicroBatchTrigger(consumer, TriggerSettings.from_options(self.opts),
                                    self.p.clock, should_stop=self.stop_requested.is_set,
                                    is_error=self._is_error, on_poll=m.batch_poll.observe)
        self.handler.add_removed_listener(trigger.drop)
        code = self._poll_loop(consumer, trigger, processor, committer)
        self._close(consumer, committer, trigger)
        return code

    def _consume_share(self) -> int:
        """Set the group's offset reset, join the share group, run :class:`ShareLoop`, close."""
        ev, m, opts = self.p.events, self.p.metrics, self.opts
        m.add_share_series()
        t0 = self.p.clock.now()
        try:
            self.p.set_share_offset_reset(opts.bootstrap, opts.group, opts.share_offset_reset)
        except Exception as exc:  # KafkaException: a group that may skip its backlog is fatal
            ev.emit("error", where="share_offset_reset", error=repr(exc))
            return EXIT_FAILED
        ev.emit("share_offset_reset", group=opts.group, value=opts.share_offset_reset,
                took_s=round(self.p.clock.now() - t0, 3))
        membership = ShareMembership(ev, self._on_joined)
        self.handler = membership

        def on_stats(text: str) -> None:
            self.group_liveness.on_stats(text)
            membership.on_stats(self.group_liveness.last_stats)

        conf = {**share_consumer_config(opts), "error_cb": self._on_kafka_error,
                "statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": on_stats}
        consumer = self.p.make_share_consumer(conf)
        consumer.subscribe([opts.topic])
        ev.emit("subscribed", topic=opts.topic, group=opts.group, group_type="share")
        sink = DeliveryCountSink(self.p.store)
        processor = BatchProcessor(
            self.p.engine, sink, WriteSimulator(opts.process_ms, opts.inflight, self.p.clock), m,
            self.p.clock, on_first_record=lambda: ev.emit("first_record"))
        loop = ShareLoop(consumer, processor, sink, TriggerSettings.from_options(opts), m, ev,
                         self.p.clock, membership, should_stop=self.stop_requested.is_set,
                         fatal=lambda: self._fatal, is_error=self._is_error,
                         liveness=self.group_liveness, on_idle=self.liveness,
                         log_batches=opts.log_batches)
        code = loop.run()
        loop.close()
        return code

    def _poll_loop(self, consumer: GroupConsumer, trigger: MicroBatchTrigger,
                   processor: BatchProcessor, committer: OffsetCommitter) -> int:
        """Poll slices and run the batches the trigger hands out until stopped or failed."""
        probe = self._probe(consumer)
        retry_at_s = 0.0
        while not self.stop_requested.is_set() and self._fatal is None:
            batch = trigger.poll()
            if probe is not None and self.handler is not None and not self.handler.joined:
                if probe.joined():
                    self.handler.mark_joined(via="describe_group")
            if batch is not None and not self._run_batch(batch, processor, committer):
                return EXIT_FAILED
            self.liveness()  # liveness_failed is written even when nothing probes /healthz
            self.lag.refresh(consumer, self.p.clock.now())  # between batches, at most 1/s
            if batch is None and committer.pending and self.p.clock.now() >= retry_at_s:
                # A commit that failed in a rebalance (ILLEGAL_GENERATION) of partitions this
                # member kept: with no next batch to carry its retry, the group's lag would
                # stay at the uncommitted tail for good.
                committer.commit({}, 0)
                retry_at_s = self.p.clock.now() + PENDING_RETRY_S
        if self._fatal is not None:
            self.p.events.emit("error", where="kafka", error=self._fatal)
            return EXIT_FAILED
        return EXIT_OK

    def _run_batch(self, batch: MicroBatch, processor: BatchProcessor,
                   committer: OffsetCommitter) -> bool:
        """Process and commit one batch; False when the engine or the store failed."""
        m = self.p.metrics
        m.inflight.set(len(batch.messages))
        # The poll thread serves no statistics callback until the batch is committed.
        self.group_liveness.batch_started()
        try:
            outcome, commit_s = self._process_and_commit(batch, processor, committer)
        finally:
            self.group_liveness.batch_finished()
        if outcome is None:
            return False
        m.batch_commit.observe(commit_s)
        m.inflight.set(0)
        if self.opts.log_batches:
            self.p.events.emit("batch", messages=outcome.messages, records=outcome.records_done,
                               poll_s=round(batch.poll_s, 4), engine_s=round(outcome.engine_s, 4),
                               commit_s=round(commit_s, 4), partitions=sorted(outcome.offsets),
                               trigger_wait_s=round(batch.trigger_wait_s, 4),
                               started_monotonic_s=round(batch.started_s, 6))
        if outcome.stopped_early:
            self.p.events.emit("batch_cut", messages=outcome.messages,
                               messages_done=outcome.messages_done,
                               offsets={str(k): v for k, v in sorted(outcome.offsets.items())})
        return True

    def _process_and_commit(self, batch: MicroBatch, processor: BatchProcessor,
                            committer: OffsetCommitter) -> tuple[Any, float]:
        """(outcome, commit seconds) of one batch; (None, 0) when the engine or store failed."""
        try:
            outcome = processor.process(batch.messages, self.stop_requested.is_set)
        except Exception as exc:  # engine or store failure: stop without committing
            self.p.events.emit("error", where="batch", error=repr(exc))
            self.p.metrics.inflight.set(0)
            return None, 0.0
        t0 = self.p.clock.now()
        committer.commit(outcome.offsets, outcome.records_done)
        return outcome, self.p.clock.now() - t0

    def _probe(self, consumer: GroupConsumer) -> MembershipProbe | None:
        if self.opts.balancer != "consumer":
            return None  # classic groups always call on_assign, with an empty list if need be
        describe = self.p.describe_members or describe_members(self.opts.bootstrap,
                                                               self.opts.group)
        member_id = getattr(consumer, "memberid", lambda: None)
        return MembershipProbe(member_id, describe, self.p.clock)

    def _close(self, consumer: GroupConsumer, committer: OffsetCommitter,
               trigger: MicroBatchTrigger) -> None:
        self.p.events.emit("drained", pending_offsets={str(k): v for k, v in
                                                       sorted(committer.pending.items())},
                           buffered_dropped=trigger.discard())
        self._settle(consumer, committer)
        if self.handler is not None:
            self.handler.closing = True
        self.lag.clear()
        consumer.close()
        self.p.events.emit("closed", left_group=self.opts.instance_id is None,
                           static_member=self.opts.instance_id is not None)

    def _settle(self, consumer: GroupConsumer, committer: OffsetCommitter) -> None:
        """Retry a drain's failed commit while the group rebalances, before ``close()``.

        A commit refused with ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS (another member
        joined or left as this one drained) cannot succeed until this member has rejoined;
        ``close()`` right away retries it in a revoke that the coordinator refuses too, and the
        next owner reprocesses the batch (duplicates after a graceful stop; seen in CI). Here
        ``consume()`` serves the rebalance (its callbacks commit or drop revoked partitions'
        offsets) and the pending offsets of the partitions still owned are retried, for at most
        :data:`SETTLE_MAX_S` (half the drain timeout at most). Records fetched meanwhile are
        neither processed nor committed: the next owner reads them. Emits ``commit_settled``
        (committed, waited_s, discarded records) when there was anything to settle.
        """
        if not committer.pending:
            return
        clock = self.p.clock
        t0 = clock.now()
        deadline = t0 + min(SETTLE_MAX_S, self.opts.drain_timeout_s / 2)
        discarded = 0
        while committer.pending and clock.now() < deadline:
            discarded += len(consumer.consume(num_messages=1000, timeout=SETTLE_POLL_S) or [])
            if committer.pending and not committer.commit({}, 0):
                clock.sleep(SETTLE_POLL_S)
        self.p.events.emit("commit_settled", committed=not committer.pending,
                           waited_s=round(clock.now() - t0, 3), discarded=discarded,
                           pending_offsets={str(k): v for k, v in
                                            sorted(committer.pending.items())})

    def _exit(self, code: int, engine: bool = False) -> int:
        if engine:
            try:
                self.p.engine.stop()
            except Exception as exc:  # the exit code already says what matters
                self.p.events.emit("error", where="engine_stop", error=repr(exc))
        try:
            self.p.store.close()
        except Exception as exc:  # every batch's write was complete when it was committed
            self.p.events.emit("error", where="sink_close", error=repr(exc))
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._hard_exit_armed:
            faulthandler.cancel_dump_traceback_later()
        self.p.events.emit("exited", code=code)
        return code

    # -- callbacks -------------------------------------------------------------------------
    def _owned(self) -> frozenset[int]:
        """The partitions this replica owns now (read by the lag collector's scrape thread)."""
        return frozenset(self.handler.assigned) if self.handler is not None else frozenset()

    def _on_joined(self) -> None:
        self.group_liveness.healthy("joined")
        self.p.events.emit("ready")

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.group_liveness.healthy("assign")
        assert self.handler is not None
        self.handler.on_assign(consumer, partitions)

    def _on_kafka_error(self, err: Any) -> None:
        fatal = bool(getattr(err, "fatal", lambda: False)())
        self.p.events.emit("kafka_error", error=str(err), fatal=fatal)
        if fatal:
            self._fatal = str(err)

    def _is_error(self, msg: Any) -> bool:
        err = msg.error()
        if err is None:
            return False
        self._on_kafka_error(err)
        return True
