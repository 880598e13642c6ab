"""``kill_replica``: send a signal to one replica, as a node failure or an OOM kill would.

The platform's Deployment replaces a replica that exits (a ReplicaSet keeps its count).
"""

from __future__ import annotations

import signal as signal_module
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from ...contract.errors import ConfigError
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
    fault: ClassVar[bool] = True


    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        problems = check_replica(params, where)
        signum = params.get("signal", "SIGKILL")
        if signum not in _SIGNALS:
            problems.append(f"{where}.signal: {signum!r} is not allowed; allowed: "
                            f"{', '.join(_SIGNALS)}; set 'signal'")
        return problems

    def label(self) -> str:
        return f"kill_replica {self.replica} {self.signal}"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        target = pick_replica(ctx, self.replica, self.name).replica_id
        ctx.platform.kill_replica(target, int(getattr(signal_module, self.signal)))
        return {"replica_id": target, "signal": self.signal, "fault_s": 0.0}


def check_replica(params: Mapping[str, Any], where: str) -> list[str]:
    """One problem line when ``params["replica"]`` is not ``newest``, ``oldest`` or an id."""
    replica = params.get("replica", "newest")
    if not isinstance(replica, str) or not (replica in _WHICH or replica.startswith("replica-")):
        return [f"{where}.replica: {replica!r} is not allowed; allowed: newest, oldest "
                "or a replica id such as replica-0002; set 'replica'"]
    return []


def pick_replica(ctx: ActionContext, which: str, action: str) -> Any:
    """The live replica ``which`` names (``newest``, ``oldest`` or an id).

    Raises:
        ConfigError: no live replica, or none with that id (the live ones listed).
    """
    live = list(ctx.platform.replicas())
    if not live:
        raise ConfigError(f"{action}: no live replica to act on ({which!r})")
    by_id = {r.replica_id: r for r in live}
    target = {"newest": live[-1], "oldest": live[0]}.get(which) or by_id.get(which)
    if target is None:
        raise ConfigError(f"{action}: replica {which!r} is not a live replica; live: "
                          f"{', '.join(by_id)}")
    return target
