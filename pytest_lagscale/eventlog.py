"""JSONL event logs: one line per event, with wall and monotonic timestamps.

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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from .clock import Clock, RealClock


class EventLog:
    """An append-only JSONL event log, safe to use from several threads.

    Args:
        path: the file (parents created; appended to).
        source: the writer's name, stored in every line (``platform``, ``controller``, ...).
        clock: monotonic time source (``RealClock`` by default).
    """

    def __init__(self, path: str | Path, source: str, clock: Clock | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.source = source
        self.clock = clock or RealClock()
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one event; returns the record written."""
        wall_ns = time.time_ns()
        record = {
            "event": event,
            "source": self.source,
            "wall_time": datetime.fromtimestamp(wall_ns / 1e9, tz=timezone.utc).isoformat(),
            "wall_ns": wall_ns,
            "monotonic_s": round(self.clock.now(), 6),
            **fields,
        }
        line = json.dumps(record, default=str, separators=(",", ":"))
        with self._lock, open(self.path, "a") as fh:
            fh.write(line + "\n")
        return record


def read_events(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the records of one JSONL event log (a torn last line is skipped)."""
    with open(path) as fh:
        for line in fh:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue
