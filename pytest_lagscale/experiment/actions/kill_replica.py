"""``kill_replica``: send a signal to one replica, as a node failure or an OOM kill would.

The platform's Deployment replaces a replica that exits (a ReplicaSet keeps its count).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from ...errors import ConfigError
from .base import ActionContext, PlanFacts, unknown_params

_SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT", "SIGSTOP", "SIGCONT")
_WHICH = ("newest", "oldest")


@dataclass(frozen=True)
class KillReplica:
    """Signal one live replica.

    Attributes:
        replica: ``newest``, ``oldest`` or a replica id (``replica-0002``).
        signal_name: ``SIGKILL`` (default), ``SIGTERM``, ``SIGINT``, ``SIGSTOP`` or ``SIGCONT``.
    """

    replica: str = "newest"
    signal_name: str = "SIGKILL"
    name: ClassVar[str] = "kill_replica"

    @classmethod
    def from_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> "KillReplica":
        problems = unknown_params(params, ("replica", "signal"), where)
        replica, signum = params.get("replica", "newest"), params.get("signal", "SIGKILL")
        if not isinstance(replica, str) or not (replica in _WHICH or replica.startswith("replica-")):
            problems.append(f"{where}.replica: {replica!r} is not allowed; allowed: newest, oldest "
                            "or a replica id such as replica-0002; set 'replica'")
        if signum not in _SIGNALS:
            problems.append(f"{where}.signal: {signum!r} is not allowed; allowed: "
                            f"{', '.join(_SIGNALS)}; set 'signal'")
        if problems:
            raise ConfigError(problems)
        return cls(replica, signum)

    def label(self) -> str:
        return f"kill_replica {self.replica} {self.signal_name}"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        live = [r.replica_id for r in ctx.platform.replicas()]
        if not live:
            raise ConfigError(f"kill_replica: no live replica to signal ({self.replica!r})")
        target = {"newest": live[-1], "oldest": live[0]}.get(self.replica, self.replica)
        ctx.platform.kill_replica(target, int(getattr(signal, self.signal_name)))
        return {"replica_id": target, "signal": self.signal_name}
