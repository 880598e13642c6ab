"""Progress of a long run on the terminal: phase, elapsed/total, lag, replicas (rich).

On a terminal :class:`RunProgress` is a live one-line display (``rich.live.Live``); elsewhere
(CI logs, captured output) it prints one plain line per phase change and every
``every_s`` seconds, so a log shows where a 10-minute run spends its time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Snapshot:
    """What the display shows.

    Attributes:
        phase: ``starting``, ``load``, ``settling``, ``recording``, ``analysing``, ``done``.
        elapsed_s: seconds since the load started (0 before).
        total_s: the profile's duration, seconds.
        lag_records: total lag of the group, records (None before the first read).
        desired_replicas, ready_replicas: the Deployment's state.
    """

    phase: str = "starting"
    elapsed_s: float = 0.0
    total_s: float = 0.0
    lag_records: int | None = None
    desired_replicas: int = 0
    ready_replicas: int = 0

    def line(self) -> str:
        """One human line, e.g. ``load  62/240 s  lag 1,204  replicas 3 desired / 2 ready``."""
        lag = "-" if self.lag_records is None else f"{self.lag_records:,}"
        return (f"{self.phase:<10} {self.elapsed_s:5.0f}/{self.total_s:.0f} s  lag {lag:>10}  "
                f"replicas {self.desired_replicas} desired / {self.ready_replicas} ready")


class RunProgress:
    """Shows :class:`Snapshot` updates; a context manager.

    Args:
        console: a ``rich.console.Console`` (default: a new one on stderr).
        every_s: seconds between plain lines when the console is not a terminal.
    """

    def __init__(self, console: Any = None, every_s: float = 10.0):
        from rich.console import Console

        self.console = console or Console(stderr=True)
        self.every_s = every_s
        self.snapshot = Snapshot()
        self._live: Any = None
        self._last_print_s = float("-inf")

    def __enter__(self) -> "RunProgress":
        if self.console.is_terminal:
            from rich.live import Live

            self._live = Live(self._render(), console=self.console, refresh_per_second=2,
                              transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc_info)
            self._live = None

    def update(self, **changes: Any) -> None:
        """Apply ``changes`` (fields of :class:`Snapshot`) and refresh the display."""
        before = self.snapshot.phase
        self.snapshot = replace(self.snapshot, **changes)
        if self._live is not None:
            self._live.update(self._render())
            return
        now = time.monotonic()
        if self.snapshot.phase != before or now - self._last_print_s >= self.every_s:
            self._last_print_s = now
            self.console.print(f"lagscale: {self.snapshot.line()}", highlight=False)

    def _render(self) -> Any:
        from rich.text import Text

        return Text(f"lagscale  {self.snapshot.line()}", style="bold cyan")
