"""Time as an input (contract layer: the harness and the replica program share it).

``control`` never reads a clock: the loops that call it pass ``now`` from a :class:`Clock`.
Runs use :class:`RealClock` (monotonic seconds); tests use :class:`FakeClock`.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A source of monotonic time in float seconds."""

    def now(self) -> float:
        """Monotonic time in seconds (arbitrary origin)."""

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds`` (a fake clock advances instead)."""


class RealClock:
    """The process's monotonic clock (``time.monotonic``)."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that only moves when told to; ``sleep`` advances it instantly.

    Args:
        start_s: initial value of ``now()`` in seconds.
    """

    def __init__(self, start_s: float = 0.0):
        self._now = float(start_s)

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (must be >= 0)."""
        if seconds < 0:
            raise ValueError(f"seconds: {seconds!r} is negative; a clock only moves forward")
        self._now += seconds
