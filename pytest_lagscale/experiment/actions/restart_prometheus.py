"""``restart_prometheus``: stop the run's Prometheus (SIGTERM: it writes its head block) and start
it again on the same data directory and port, as a rollout of the monitoring stack would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .base import ActionContext, ParamsChecked


@dataclass(frozen=True)
class RestartPrometheus(ParamsChecked):
    """Restart Prometheus on its data directory and port."""

    name: ClassVar[str] = "restart_prometheus"
    fault: ClassVar[bool] = True

    def label(self) -> str:
        return "restart_prometheus"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        with ctx.watch.expected_down("prometheus"):
            fault_s = ctx.prometheus.restart(graceful=True)
        return {"fault_s": round(fault_s, 3), "pid": ctx.prometheus.process.pid}
