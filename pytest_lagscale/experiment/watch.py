"""Watching the run's managed parts: a part that dies is noticed within seconds and named.

:class:`PartWatch` polls the process of every part the run registered (the broker, Prometheus,
the Spark Connect server, the run's scaler, a platform's control plane) once a second. When one
has exited and nobody asked it to:

* a part registered with a ``restart`` callable (Prometheus, on its data directory: its WAL
  keeps what was scraped) is started again; the outage is a ``part_restarted`` event with the
  part's exit status and the seconds it was down (``gap_s``);
* any other part cannot come back: a ``part_died`` event (name, exit status, log tail) and
  :attr:`PartWatch.failure`, which the runner's load and settle loops check every second to end
  the run (:class:`PartDied`).

An action that stops a part on purpose (``restart_broker``) wraps the stop in
:meth:`PartWatch.expected_down`.
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..contract.errors import LagscaleError
from ..exit_status import describe_exit

log = logging.getLogger(__name__)

#: Seconds between two looks at the parts' processes.
WATCH_PERIOD_S = 1.0
#: Log lines a part's death report carries.
TAIL_LINES = 10


class PartDied(LagscaleError):
    """A part the run manages exited and cannot come back; the message names it, its exit
    status and its log tail, and :attr:`part` is its name (``"kafka"`` for the broker)."""

    def __init__(self, message: str, part: str | None = None):
        super().__init__(message)
        self.part = part


@dataclass
class _Part:
    name: str
    process: Callable[[], Any]
    restart: Callable[[], None] | None
    tail: Callable[[], str] | None = None
    down: int = 0  # expected_down() nesting
    seen_alive_s: float | None = None  # the last look that found it running


class PartWatch:
    """Polls registered parts' processes in a daemon thread (every :data:`WATCH_PERIOD_S`).

    Args:
        events: the runner's event log (``part_died``, ``part_restarted``,
            ``part_restart_failed``).
        now_s: the runner's clock (monotonic seconds).

    Attributes:
        failure: the :class:`PartDied` of the first part that died for good, else None.
        outages: ``[{"part", "start_s", "duration_s", "exit"}]`` for every outage seen (clock
            seconds, from the last look that found the part running, so an upper bound by at
            most :data:`WATCH_PERIOD_S`; duration None when the part never came back).
    """

    def __init__(self, events: Any, now_s: Callable[[], float] = time.monotonic):
        self.events, self.now_s = events, now_s
        self.failure: PartDied | None = None
        self.outages: list[dict[str, Any]] = []
        self._parts: dict[str, _Part] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, name: str, process: Callable[[], Any],
            restart: Callable[[], None] | None = None,
            tail: Callable[[], str] | None = None) -> None:
        """Watch ``process()`` (a :class:`~pytest_lagscale.process.ManagedProcess` or None, read
        at each look, so a restarted part's new process is seen) under ``name``; ``tail()`` gives
        its log's last lines when the process's own output is not its log (the broker's
        ``server.log``)."""
        with self._lock:
            self._parts[name] = _Part(name, process, restart, tail)

    @contextmanager
    def expected_down(self, name: str) -> Iterator[None]:
        """While inside, ``name``'s exit is not a death (an action stops it on purpose)."""
        with self._lock:
            part = self._parts.get(name)
            if part is not None:
                part.down += 1
        try:
            yield
        finally:
            with self._lock:
                if part is not None:
                    part.down -= 1

    def start(self) -> "PartWatch":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="lagscale-part-watch",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (before the parts are stopped). Idempotent."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)

    def check(self) -> None:
        """Raise :attr:`failure` if a part died for good."""
        if self.failure is not None:
            raise self.failure

    # -- internals -----------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(WATCH_PERIOD_S):
            self.look()

    def look(self) -> None:
        """One look at every part (the thread's body; callable directly in tests)."""
        with self._lock:
            parts = [p for p in self._parts.values() if p.down == 0]
        for part in parts:
            process = part.process()
            code = None if process is None else process.poll()
            if code is None:
                part.seen_alive_s = self.now_s()
                continue
            if self._stop.is_set():
                continue
            with self._lock:
                if part.down:
                    continue
            self._exited(part, process, code)

    def _exited(self, part: _Part, process: Any, code: int) -> None:
        # it died after the last look that found it running: the outage counts from there
        start_s = self.now_s() if part.seen_alive_s is None else part.seen_alive_s
        how = describe_exit(code)
        tail = self._tail(part, process)
        outage: dict[str, Any] = {"part": part.name, "start_s": start_s, "duration_s": None,
                                  "exit": how}
        self.outages.append(outage)
        if part.restart is not None:
            try:
                part.restart()
            except Exception as exc:  # could not come back: a death after all
                self.events.emit("part_restart_failed", part=part.name, exit=how,
                                 error=f"{type(exc).__name__}: {exc}")
                self._died(part, how, tail, f"; restart failed: {exc}")
                return
            outage["duration_s"] = round(self.now_s() - start_s, 3)
            self.events.emit("part_restarted", part=part.name, exit=how,
                             gap_s=outage["duration_s"], log_tail=tail)
            log.warning("%s %s; restarted after %.1f s", part.name, how, outage["duration_s"])
            return
        self._died(part, how, tail, "")

    @staticmethod
    def _tail(part: _Part, process: Any) -> list[str]:
        try:
            if part.tail is not None:
                return part.tail().splitlines()[-TAIL_LINES:]
            return list(process.tail(TAIL_LINES)) if hasattr(process, "tail") else []
        except Exception as exc:  # a report without its log tail, not a crash of the watch
            return [f"(log tail unreadable: {exc})"]

    def _died(self, part: _Part, how: str, tail: list[str], extra: str) -> None:
        with self._lock:
            self._parts.pop(part.name, None)
        self.events.emit("part_died", part=part.name, exit=how, log_tail=tail)
        if self.failure is None:
            last = (" | ".join(line.strip() for line in tail[-3:] if line.strip())
                    if tail else "")
            last = f"; log tail: {last}" if last else ""
            self.failure = PartDied(f"{part.name} {how}{extra}: the run cannot go on without it"
                                    f"{last}", part.name)
            log.error("%s", self.failure)
