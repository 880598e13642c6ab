"""JSONL event logs: one line per event, with wall and monotonic timestamps (contract layer).

Every component (platform, controller, replicas, producer) writes its own file; the recorder
merges them into one ordered event table. A line is
``{"event": "<snake_case>", "source": "...", "wall_time": "<UTC ISO-8601>", "wall_ns": int,
"monotonic_s": float, ...fields}``. ``monotonic_s`` is ``time.monotonic()`` of this host (all
local processes share it), so events of different processes order exactly.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterator, Mapping

from .clock import Clock, RealClock


class EventLog:
    """An append-only JSONL event log, safe to use from several threads and from a signal
    handler that interrupts :meth:`emit`: the lock is re-entrant, and a line emitted by a
    handler while the interrupted thread is inside a file write is queued and written by that
    thread right after its own line (file objects raise ``RuntimeError`` on a re-entrant
    write).

    Args:
        path: the file (parents created; appended to), or None for no file.
        source: the writer's name, stored in every line (``platform``, ``controller``, a
            replica id, ...).
        clock: monotonic time source (``RealClock`` by default).
        fields: stamped on every line after the header (e.g. ``replica_id``, ``pid``).
        echo: a stream that receives every line too (e.g. stderr), or None.

    The file is opened at the first line and kept open; :meth:`close` closes it, and a later
    line opens it again (owners close at stop; late events of their threads still land).
    """

    def __init__(self, path: str | Path | None, source: str, clock: Clock | None = None, *,
                 fields: Mapping[str, Any] | None = None, echo: IO[str] | None = None):
        self.path = None if path is None else Path(path)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.source = source
        self.clock = clock or RealClock()
        self.fields = dict(fields or {})
        self._echo = echo
        self._lock = threading.RLock()
        self._fh: IO[str] | None = None
        self._writing = False  # this object is inside a file write (see emit)
        self._pending: deque[str] = deque()

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one event (flushed); returns the record written."""
        wall_ns = time.time_ns()
        record = {
            "event": event,
            "source": self.source,
            "wall_time": datetime.fromtimestamp(wall_ns / 1e9, tz=timezone.utc).isoformat(),
            "wall_ns": wall_ns,
            "monotonic_s": round(self.clock.now(), 6),
            **self.fields,
            **fields,
        }
        line = json.dumps(record, default=str, separators=(",", ":")) + "\n"
        with self._lock:
            self._pending.append(line)
            self._drain()
        return record

    def _drain(self) -> None:
        """Write the queued lines, unless this call interrupted a write (lock held)."""
        if self._writing:
            # A signal handler interrupted this thread inside a file write: the file object
            # raises on re-entry ("reentrant call inside BufferedWriter"), so the line waits
            # for the interrupted call, which writes it before it returns.
            return
        while self._pending:  # again after the flag drops: a line queued just before it
            self._writing = True
            try:
                while self._pending:
                    self._write(self._pending.popleft())
            finally:
                self._writing = False

    def _write(self, line: str) -> None:
        if self.path is not None:
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            self._fh.write(line)
            self._fh.flush()
        if self._echo is not None:
            self._echo.write(line)
            self._echo.flush()

    def close(self) -> None:
        """Close the file (idempotent; a later :meth:`emit` reopens it)."""
        with self._lock:
            if self._writing:  # called from a signal handler that interrupted a write
                return
            self._writing = True
            try:
                if self._fh is not None:
                    self._fh.close()
                    self._fh = None
            finally:
                self._writing = False
            self._drain()


def read_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the records of one JSONL event log (a torn last line is skipped)."""
    with open(path) as fh:
        for line in fh:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue
