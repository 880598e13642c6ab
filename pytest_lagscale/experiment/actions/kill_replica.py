"""``kill_replica``: send a signal to one replica, as a node failure or an OOM kill would.

The platform's Deployment replaces a replica that exits (a ReplicaSet keeps its count).
"""

from __future__ import annotations

import signal as signal_module
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from ...errors import ConfigError
from .base import ActionContext, ParamsChecked, PlanFacts

_SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT", "SIGSTOP", "SIGCONT")
_WHICH = ("newest", "oldest")


@dataclass(frozen=True)
class KillReplica(ParamsChecked):
    """Signal one live replica.

    Attributes:
        replica: ``newest``, ``oldest`` or a replica id (``replica-0002``).
        signal: ``SIGKILL`` (default), ``SIGTERM``, ``SIGINT``, ``SIGSTOP`` or ``SIGCONT``.
    """

    replica: str = "newest"
    signal: str = "SIGKILL"
    name: ClassVar[str] = "kill_replica"


    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        problems = []
        replica, signum = params.get("replica", "newest"), params.get("signal", "SIGKILL")
        if not isinstance(replica, str) or not (replica in _WHICH or replica.startswith("replica-")):
            problems.append(f"{where}.replica: {replica!r} is not allowed; allowed: newest, oldest "
                            "or a replica id such as replica-0002; set 'replica'")
        if signum not in _SIGNALS:
            problems.append(f"{where}.signal: {signum!r} is not allowed; allowed: "
                            f"{', '.join(_SIGNALS)}; set 'signal'")
        return problems

    def label(self) -> str:
        return f"kill_replica {self.replica} {self.signal}"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        live = [r.replica_id for r in ctx.platform.replicas()]
        if not live:
            raise ConfigError(f"kill_replica: no live replica to signal ({self.replica!r})")
        target = {"newest": live[-1], "oldest": live[0]}.get(self.replica, self.replica)
        ctx.platform.kill_replica(target, int(getattr(signal_module, self.signal)))
        return {"replica_id": target, "signal": self.signal}
