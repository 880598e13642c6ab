"""The Kafka side of the load generator: a tuned confluent-kafka producer fed by the pacing loop.

Settings (``PRODUCER_DEFAULTS``): ``acks=all`` and ``enable.idempotence=true`` (no loss, no
duplicates, per-partition order), ``linger.ms=5`` and ``batch.size=1000000`` (large batches),
``compression.type=none``, a client queue of 2,000,000 records / 1 GiB so that bursts queue in
the client rather than block the pacing loop. Records are partitioned by key with librdkafka's
``murmur2_random`` partitioner, which is the Java client's default (murmur2 of the key bytes,
positive, modulo the partition count), so Java and Python producers agree on placement.

Each pacing chunk is encoded once (a void-dtype view of the stamped events turned into one
``bytes`` per record by numpy, keys likewise from one big-endian array) and handed to
``Producer.produce`` in a loop that runs in C (``map`` driven by ``deque.extend``); delivery
reports go to a :class:`~.manifest.DeliveryTracker` and are served by ``poll(0)`` after every
chunk. A full client queue makes the loop wait (``poll(0.005)``) and retry: the delay shows in
the report as send delay, it is never hidden.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections import deque
from itertools import repeat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..contract.clock import Clock, RealClock
from ..contract.errors import BrokerError
from ..contract.rundir import MANIFEST_JSON, REPORT_JSON
from ..kafka.client_log import librdkafka_config
from .events import EVENT_SIZE_BYTES, KEY_SIZE_BYTES, EventSource
from .manifest import DeliveryTracker, Manifest
from .pacing import PacingOptions, PacingResult, run_open_model
from .profiles import Profile
from .report import ProduceReport
from .schedule import Schedule

log = logging.getLogger(__name__)
_VALUE_VOID = np.dtype((np.void, EVENT_SIZE_BYTES))
_KEY_VOID = np.dtype((np.void, KEY_SIZE_BYTES))
_SECRET = re.compile(r"sasl|password|secret|token|key\.pem", re.IGNORECASE)

PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "compression.type": "none",
    "queue.buffering.max.messages": 2_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "partitioner": "murmur2_random",
    # New partitions (a scheduled increase_partitions) are used within 5 s, not 5 min.
    "topic.metadata.refresh.interval.ms": 5000,
}


@dataclass(frozen=True)
class ProduceSettings:
    """Where and how to produce.

    Attributes:
        bootstrap_servers: ``host:port[,...]``.
        client_config: extra librdkafka settings (SASL/TLS), applied over the defaults.
        producer_config: librdkafka overrides of ``PRODUCER_DEFAULTS``.
        pacing: pacing tuning and kept-up tolerances.
        flush_timeout_s: seconds to wait for outstanding acknowledgements at the end; records
            still unacknowledged then are purged and counted as failed.
        metadata_timeout_s: seconds to wait for the topic's metadata before the first send.
    """

    bootstrap_servers: str
    client_config: Mapping[str, Any] = field(default_factory=dict)
    producer_config: Mapping[str, Any] = field(default_factory=dict)
    pacing: PacingOptions = PacingOptions()
    flush_timeout_s: float = 120.0
    metadata_timeout_s: float = 30.0

    def librdkafka_config(self) -> dict[str, Any]:
        """The producer's configuration (without the delivery callback)."""
        return {**PRODUCER_DEFAULTS, "bootstrap.servers": self.bootstrap_servers,
                **dict(self.client_config), **dict(self.producer_config)}


class KafkaSink:
    """A pacing :class:`~.pacing.Sink` producing to one topic.

    Args:
        producer: a ``confluent_kafka.Producer`` whose ``on_delivery`` is set.
        topic: destination topic.
    """

    def __init__(self, producer: Any, topic: str):
        self._producer = producer
        self._topic = topic
        self.queue_full_waits = 0

    def send(self, events: np.ndarray) -> None:
        """Produce one record per event: key = big-endian entity_id, value = the 280 bytes."""
        events = np.ascontiguousarray(events)
        values = events.view(_VALUE_VOID).tolist()  # one bytes object per record, in C
        keys = events["entity_id"].astype(">u8").view(_KEY_VOID).tolist()
        last: deque[tuple[int, None]] = deque(maxlen=1)
        try:  # the loop runs in C: map() calls produce, deque.extend() drives it
            last.extend(enumerate(map(self._producer.produce, repeat(self._topic), values,
                                      keys)))
        except BufferError:
            self._send_waiting(values, keys, last[0][0] + 1 if last else 0)
        self._producer.poll(0)

    def _send_waiting(self, values: list[bytes], keys: list[bytes], start: int) -> None:
        """Produce records ``start..``, waiting 5 ms whenever the client queue is full."""
        i = start
        while i < len(values):
            try:
                self._producer.produce(self._topic, values[i], keys[i])
                i += 1
            except BufferError:
                self.queue_full_waits += 1
                self._producer.poll(0.005)

    def poll(self) -> None:
        """Serve delivery reports without blocking."""
        self._producer.poll(0)


@dataclass(frozen=True)
class ProduceResult:
    """A produce run: the report (rates) and the manifest (acknowledged offsets)."""

    report: ProduceReport
    manifest: Manifest


#: Seconds a stopped run's producer waits for acknowledgements before it purges the rest.
INTERRUPTED_FLUSH_S = 5.0


def produce_profile(profile: Profile, settings: ProduceSettings, *,
                    clock: Clock | None = None,
                    should_stop: Callable[[], bool] = lambda: False,
                    acks_lost: Callable[[], bool] = lambda: False,
                    progress: Callable[[float, int], None] | None = None,
                    max_partitions: int | None = None) -> ProduceResult:
    """Produce ``profile`` to its topic under the open model and wait for acknowledgements.

    Args:
        profile: the validated profile (topic, partitions, seed, schedule).
        settings: broker address and producer tuning.
        clock: pacing clock (default: ``RealClock``).
        should_stop: polled every tick; True ends the run early (report ``interrupted``).
        acks_lost: polled while a stopped run waits for acknowledgements; True (the broker
            that would send them is gone) purges what is unacknowledged at once.
        progress: called as ``progress(elapsed_s, sent_records)`` every 10 s of the run.
        max_partitions: the most partitions the topic gets during the run (a scheduled
            ``increase_partitions``); the manifest covers that many. Default: the profile's.

    Returns:
        The per-step report and the per-partition manifest.

    Raises:
        BrokerError: the topic does not exist, has another partition count than the profile,
            or its metadata does not arrive within ``settings.metadata_timeout_s``.
    """
    from confluent_kafka import Producer

    tracker = DeliveryTracker(max(profile.partitions, max_partitions or 0))
    config = settings.librdkafka_config()
    producer = Producer({**config, "on_delivery": tracker.callback, **librdkafka_config()})
    _check_topic(producer, profile, settings.metadata_timeout_s)
    source = EventSource(profile.seed, entities=profile.entities, zipf_s=profile.zipf_s)
    source.chunk(0)  # build the first block before the clock starts
    schedule = Schedule(profile.schedule())
    sink = KafkaSink(producer, profile.topic)
    try:
        pacing = run_open_model(schedule, source, sink, clock or RealClock(),
                                options=settings.pacing, should_stop=should_stop,
                                progress=progress)
    except BaseException:
        producer.purge()  # a crashed or killed run: drop what is queued, do not block
        producer.flush(1.0)
        raise
    # a stopped run (Ctrl-C, a part of the run died) waits a few seconds for acknowledgements,
    # not the whole flush timeout: what is not acknowledged by then is purged and not counted
    flush_s = _flush(producer, min(settings.flush_timeout_s, INTERRUPTED_FLUSH_S)
                     if pacing.interrupted else settings.flush_timeout_s,
                     acks_lost if pacing.interrupted else None)
    if sink.queue_full_waits:
        log.warning("%s: the client queue was full %d times", profile.topic,
                    sink.queue_full_waits)
    report = _report(profile, schedule, pacing, tracker, config, flush_s)
    manifest = tracker.manifest(topic=profile.topic, seed=profile.seed, profile=profile.name,
                                created_at=_utc(time.time_ns()))
    return ProduceResult(report, manifest)


def _report(profile: Profile, schedule: Schedule, pacing: PacingResult, tracker: DeliveryTracker,
            config: Mapping[str, Any], flush_s: float) -> ProduceReport:
    return ProduceReport(
        profile=profile.name, topic=profile.topic, partitions=profile.partitions,
        seed=profile.seed, started_at=_utc(pacing.started_wall_ns), elapsed_s=pacing.elapsed_s,
        flush_s=flush_s, requested_records=schedule.total_records,
        sent_records=pacing.sent_records, acked_records=tracker.acked,
        failed_records=tracker.failed, max_send_delay_s=pacing.max_send_delay_s,
        kept_up=pacing.kept_up and tracker.failed == 0 and not pacing.interrupted,
        steps=pacing.steps, interrupted=pacing.interrupted,
        settings={k: v for k, v in config.items() if not _SECRET.search(k)})


def write_run(result: ProduceResult, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``manifest.json`` and ``report.json`` into ``out_dir``; returns both paths."""
    out = Path(out_dir)
    return (result.manifest.write_json(out / MANIFEST_JSON),
            result.report.write_json(out / REPORT_JSON))


def _check_topic(producer: Any, profile: Profile, timeout_s: float) -> None:
    from confluent_kafka import KafkaException

    try:
        md = producer.list_topics(profile.topic, timeout=timeout_s)
    except KafkaException as exc:
        raise BrokerError(f"topic {profile.topic!r}: no metadata within {timeout_s:g} s "
                          f"({exc.args[0].str()}); check the bootstrap address") from exc
    meta = md.topics.get(profile.topic)
    if meta is None or meta.error is not None:
        why = meta.error.str() if meta is not None and meta.error else "missing"
        raise BrokerError(f"topic {profile.topic!r}: {why}; create it with "
                          f"{profile.partitions} partitions first")
    if len(meta.partitions) != profile.partitions:
        raise BrokerError(f"topic {profile.topic!r}: has {len(meta.partitions)} partitions but "
                          f"profile {profile.name!r} asks for {profile.partitions}; use another "
                          f"topic or set partitions to {len(meta.partitions)}")


def flush(producer: Any, timeout_s: float, step_s: float = 0.5,
          give_up: Callable[[], bool] | None = None) -> int:
    """``producer.flush(timeout_s)`` in steps of ``step_s`` seconds, ended early once
    ``give_up()`` is True; returns what is still queued (messages + requests, as
    ``Producer.flush``).

    Ctrl-C during one long ``Producer.flush`` surfaces as ``SystemError: ... returned NULL
    without setting an exception`` (confluent-kafka 2.x, seen in a pytest session that then
    went on to the next test); between short flushes the interpreter raises the
    ``KeyboardInterrupt`` itself.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = producer.flush(max(0.0, min(step_s, deadline - time.monotonic())))
        if remaining == 0 or time.monotonic() >= deadline or (give_up and give_up()):
            return remaining


def _flush(producer: Any, timeout_s: float, acks_lost: Callable[[], bool] | None = None
           ) -> float:
    """Wait for acknowledgements; purge (and so fail) what is left after ``timeout_s``, or
    as soon as ``acks_lost()`` is True."""
    started = time.monotonic()
    remaining = flush(producer, timeout_s, give_up=acks_lost)
    if remaining:
        waited_s = time.monotonic() - started
        why = "; the broker is gone" if acks_lost is not None and acks_lost() else ""
        log.warning("%d records unacknowledged after %.1f s%s; purging them", remaining,
                    waited_s, why)
        producer.purge()
        flush(producer, 10.0)
    return time.monotonic() - started


def _utc(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.timezone.utc).isoformat().replace("+00:00", "Z")
