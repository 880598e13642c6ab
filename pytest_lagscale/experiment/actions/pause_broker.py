"""``pause_broker``: stop the embedded broker's process (SIGSTOP) for ``duration_s`` seconds, then
let it go on (SIGCONT), as a long GC pause, a frozen VM or a stalled disk would.

Clients see no closed connection, only requests without answers: the group's members miss their
heartbeats (the broker expires their sessions once it runs again) and the harness's lag reads
time out. The broker's process is continued on every exit path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from .base import ActionContext, ParamsChecked, PlanFacts, broker_process, check_duration, \
    hold_stopped


@dataclass(frozen=True)
class PauseBroker(ParamsChecked):
    """SIGSTOP the broker for ``duration_s`` seconds (0.1 to 3600), then SIGCONT."""

    duration_s: float = 20.0
    name: ClassVar[str] = "pause_broker"
    background: ClassVar[bool] = True
    fault: ClassVar[bool] = True
    #: the run starts its own broker rather than pause or restart a shared one
    needs_own_broker: ClassVar[bool] = True

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        return check_duration(params, where, default=20.0)

    def label(self) -> str:
        return f"pause_broker {self.duration_s:g} s"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        process = broker_process(ctx, self.name)
        return {"pid": process.pid, "fault_s": hold_stopped(process, self.duration_s,
                                                            ctx.stopping)}
