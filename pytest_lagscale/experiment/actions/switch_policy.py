"""``switch_policy``: replace the autoscaler's scaling policy mid-run (e.g. from a CPU HPA to
the KEDA lag trigger, or to a tuned ScaledObject); the new policy starts with fresh history, as
a re-applied HPA object would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from ...contract.errors import ConfigError
from .base import ActionContext, ParamsChecked, PlanFacts


@dataclass(frozen=True)
class SwitchPolicy(ParamsChecked):
    """Switch to the policy ``policy`` (a bundled manifest name or a YAML path).

    Attributes:
        policy: what ``--policy`` accepts.
    """

    policy: str
    name: ClassVar[str] = "switch_policy"

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        policy = params.get("policy")
        if not isinstance(policy, str) or not policy:
            return [f"{where}.policy: {policy!r} is not allowed; allowed: a bundled policy name "
                    "(e.g. scaledobject-ci) or a YAML path; set 'policy'"]
        from ...config.bundled import resolve_manifest

        try:
            resolve_manifest(policy, f"{where}.policy")
        except ConfigError as exc:
            return exc.problems
        return []

    def label(self) -> str:
        return f"switch_policy {self.policy}"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        policy = ctx.build_policy(self.policy)
        ctx.autoscaler.set_policy(policy, ctx.now_s())
        return {"policy": self.policy}
