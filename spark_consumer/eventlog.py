"""The replica's event log: JSON Lines, one object per event, flushed per line.

Every line has the header of :mod:`pytest_lagscale.contract.eventlog` (``event``, ``source`` = the
replica id, ``wall_time`` in UTC ISO-8601, ``wall_ns``, ``monotonic_s``: the host's monotonic
clock, shared with the harness), then ``replica_id`` and ``pid``, plus the event's own
fields. Events, in the order a replica's life produces them:

* ``started`` (engine, balancer, group, topic, commit, instance_id, ...), ``metrics_listening``
  (host, port), ``engine_ready`` (engine, startup_s, cds_archive) and, for Spark,
  ``spark_ready`` (startup_s), ``subscribed``;
* ``joined`` (first assignment; ``via`` when found by describing the group; a share replica's
  ``via`` is ``stats`` or ``poll``, after ``share_offset_reset`` (group, value)), ``ready``;
* ``assigned`` / ``revoked`` / ``lost`` (partitions: incremental lists; assigned also carries
  the whole assignment), ``rebalance_done`` (duration_s), ``first_record``;
* ``batch`` (only with ``--log-batches``: messages, records, poll_s, engine_s, commit_s,
  partitions), ``commit_failed`` (offsets, error), ``commit_abandoned`` (offsets a revoke
  could not commit, left to the next owner), ``kafka_error`` (error, fatal);
* ``sigterm`` (signal), ``batch_cut`` (the batch in progress stopped after the write waves in
  flight: messages, messages_done, committed offsets), ``drained`` (pending_offsets),
  ``commit_settled`` (only when the drain's commit failed: committed, waited_s, discarded,
  pending_offsets), ``closed`` (left_group, static_member), ``exited`` (code);
* problems: ``error`` (where, error) and ``drain_timeout`` (timeout_s, code);
  ``liveness_failed`` (reason, since_healthy_s, session_timeout_s, cgrp: the last statistics'
  group state) when ``/healthz`` turns 503, ``liveness_recovered`` (failed_for_s, via) when it
  turns 200 again (:mod:`spark_consumer.liveness`).

Every line is also written to stderr, so the process log carries the same story.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO, Any

from pytest_lagscale.contract import eventlog
from pytest_lagscale.contract.clock import Clock


class EventLog(eventlog.EventLog):
    """The replica's :class:`pytest_lagscale.contract.eventlog.EventLog`: ``source`` and
    ``replica_id`` are the replica id, ``pid`` is stamped on every line, and every line is
    echoed to stderr.

    Args:
        replica_id: stamped on every line.
        path: the JSONL file (appended; parent directories created), or None.
        clock: monotonic time source for ``monotonic_s``.
        echo: stream receiving each line too, or None.
    """

    def __init__(self, replica_id: str, path: str | Path | None = None,
                 clock: Clock | None = None, echo: IO[str] | None = sys.stderr):
        super().__init__(path, replica_id, clock,
                         fields={"replica_id": replica_id, "pid": os.getpid()}, echo=echo)
        self.replica_id = replica_id


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """All events of a JSONL event log, in file order (a torn last line is skipped)."""
    return list(eventlog.read_events(path))
