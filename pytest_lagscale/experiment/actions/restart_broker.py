"""``restart_broker``: stop the embedded broker and start it again on the same data directory and
ports, as a rolling restart or a crash and restart of the only broker would.

``graceful: true`` (default) is a controlled shutdown (SIGTERM); ``false`` is a crash (SIGKILL).
``down_s`` keeps it down that long before the start. Topics, committed offsets and the log are
kept; the clients reconnect to the same address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from .base import ActionContext, ParamsChecked, PlanFacts, broker_process, check_duration


@dataclass(frozen=True)
class RestartBroker(ParamsChecked):
    """Restart the broker; ``down_s`` (0 to 3600) seconds down; ``graceful`` SIGTERM or SIGKILL."""

    down_s: float = 0.0
    graceful: bool = True
    name: ClassVar[str] = "restart_broker"
    background: ClassVar[bool] = True
    fault: ClassVar[bool] = True
    #: the run starts its own broker rather than pause or restart a shared one
    needs_own_broker: ClassVar[bool] = True

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        problems = check_duration(params, where, "down_s", default=0.0, lo=0.0)
        if not isinstance(params.get("graceful", True), bool):
            problems.append(f"{where}.graceful: {params['graceful']!r} is not allowed; allowed: "
                            "true (SIGTERM) or false (SIGKILL); set 'graceful'")
        return problems

    def label(self) -> str:
        return f"restart_broker{'' if self.graceful else ' SIGKILL'}" + \
            (f" down {self.down_s:g} s" if self.down_s else "")

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        broker_process(ctx, self.name)
        with ctx.watch.expected_down("kafka"):
            fault_s = ctx.cluster.restart(graceful=self.graceful, down_s=self.down_s,
                                          wait=ctx.stopping.wait)
        return {"fault_s": round(fault_s, 3), "pid": ctx.cluster.process.pid}
