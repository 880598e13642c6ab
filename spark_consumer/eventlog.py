"""The replica's event log: JSON Lines, one object per event, flushed per line.

Every line has ``event`` (snake_case name), ``wall_time`` (UTC ISO-8601 with microseconds),
``monotonic_s`` (the replica's monotonic clock, float seconds), ``replica_id`` and ``pid``, plus
the event's own fields. Events, in the order a replica's life produces them:

* ``started`` (engine, balancer, group, topic, commit, instance_id, ...), ``metrics_listening``
  (host, port), ``engine_ready`` (engine, startup_s, cds_archive) and, for Spark,
  ``spark_ready`` (startup_s), ``subscribed``;
* ``joined`` (first assignment; ``via`` when found by describing the group), ``ready``;
* ``assigned`` / ``revoked`` / ``lost`` (partitions: incremental lists; assigned also carries
  the whole assignment), ``rebalance_done`` (duration_s), ``first_record``;
* ``batch`` (only with ``--log-batches``: messages, records, poll_s, engine_s, commit_s,
  partitions), ``commit_failed`` (offsets, error), ``kafka_error`` (error, fatal);
* ``sigterm`` (signal), ``batch_cut`` (the batch in progress stopped after the write waves in
  flight: messages, messages_done, committed offsets), ``drained`` (pending_offsets),
  ``closed`` (left_group, static_member), ``exited`` (code);
* problems: ``error`` (where, error) and ``drain_timeout`` (timeout_s, code).

Every line is also written to stderr, so the process log carries the same story.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from pytest_lagscale.clock import Clock, RealClock


def utc_iso(ns: int) -> str:
    """``ns`` since the Unix epoch as UTC ISO-8601 with microseconds and a ``Z`` suffix."""
    stamp = dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventLog:
    """Append events to a JSONL file (optional) and to ``echo`` (stderr by default).

    Args:
        replica_id: stamped on every line.
        path: the JSONL file (appended; parent directories created), or None.
        clock: monotonic time source for ``monotonic_s``.
        echo: stream receiving each line too, or None.
    """

    def __init__(self, replica_id: str, path: str | Path | None = None,
                 clock: Clock | None = None, echo: IO[str] | None = sys.stderr):
        self.replica_id = replica_id
        self._clock = clock or RealClock()
        self._echo = echo
        # Re-entrant: the SIGTERM handler emits from the main thread, possibly inside emit().
        self._lock = threading.RLock()
        self._fh: IO[str] | None = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Write one event line now; returns the object written."""
        record = {
            "event": event,
            "wall_time": utc_iso(time.time_ns()),
            "monotonic_s": round(self._clock.now(), 6),
            "replica_id": self.replica_id,
            "pid": os.getpid(),
            **fields,
        }
        line = json.dumps(record, separators=(",", ":"), default=str)
        with self._lock:
            if self._fh is not None:
                self._fh.write(line + "\n")
                self._fh.flush()
            if self._echo is not None:
                self._echo.write(line + "\n")
                self._echo.flush()
        return record

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """All events of a JSONL event log, in file order (a torn last line is skipped)."""
    events = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events
