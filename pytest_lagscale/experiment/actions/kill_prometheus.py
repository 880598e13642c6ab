"""``kill_prometheus``: SIGKILL the run's Prometheus, as an OOM kill would.

The harness notices the exit within a second and starts Prometheus again on its data directory
(its WAL keeps what was scraped before); the outage is a ``part_restarted`` event and a gap in the
timeline, never a stale value.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from .base import ActionContext, ParamsChecked


@dataclass(frozen=True)
class KillPrometheus(ParamsChecked):
    """SIGKILL Prometheus; the run's part watch restarts it."""

    name: ClassVar[str] = "kill_prometheus"
    fault: ClassVar[bool] = True

    def label(self) -> str:
        return "kill_prometheus"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        process = ctx.prometheus.process
        started = time.monotonic()
        process.signal(signal.SIGKILL)
        # the fault lasts until the watch has Prometheus back (bounded: the run goes on)
        while ctx.prometheus.process is process and not ctx.stopping.wait(0.2):
            if time.monotonic() - started > 60:
                break
        return {"pid": process.pid, "fault_s": round(time.monotonic() - started, 3)}
