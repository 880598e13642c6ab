"""``hang_replica``: stop one replica's process group (SIGSTOP) for ``duration_s`` seconds, then
SIGCONT it, as a replica stuck in a long GC pause or a hung native call would be.

Its readiness and liveness probes time out while it hangs: a platform with a livenessProbe
restarts it (the committed Deployments have one); its partitions are reassigned once its session
expires. SIGCONT goes to the process it stopped, also when that one was replaced meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from ...contract.errors import ConfigError
from .base import ActionContext, ParamsChecked, PlanFacts, check_duration, hold_stopped
from .kill_replica import check_replica, pick_replica


@dataclass(frozen=True)
class HangReplica(ParamsChecked):
    """SIGSTOP one replica (``newest``, ``oldest`` or an id) for ``duration_s`` seconds."""

    duration_s: float = 20.0
    replica: str = "newest"
    name: ClassVar[str] = "hang_replica"
    background: ClassVar[bool] = True
    fault: ClassVar[bool] = True

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        return check_duration(params, where, default=20.0) + check_replica(params, where)

    def label(self) -> str:
        return f"hang_replica {self.replica} {self.duration_s:g} s"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        replica = pick_replica(ctx, self.replica, self.name)
        process = getattr(replica, "process", None)
        if process is None:
            raise ConfigError(f"{self.name}: the platform gives no process of "
                              f"{replica.replica_id} to stop")
        ctx.events.emit("replica_hung", replica_id=replica.replica_id, pid=process.pid,
                        duration_s=self.duration_s)
        return {"replica_id": replica.replica_id,
                "fault_s": hold_stopped(process, self.duration_s, ctx.stopping)}
