"""``increase_partitions``: add partitions to the run's topic while producer and replicas run
(experiment 7: 24 -> 48 mid-run). Kafka only grows partition counts.

Source: Kafka's CreatePartitions admin API (confluent-kafka ``AdminClient.create_partitions``);
the producer and the replicas see the new partitions at their next metadata refresh
(``topic.metadata.refresh.interval.ms``), which forces the group to rebalance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from .base import ActionContext, ParamsChecked, PlanFacts


@dataclass(frozen=True)
class IncreasePartitions(ParamsChecked):
    """Grow the topic to ``to`` partitions.

    Attributes:
        to: the new total partition count (more than the topic has, at most 1024).
    """

    to: int
    name: ClassVar[str] = "increase_partitions"

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        to = params.get("to")
        if isinstance(to, bool) or not isinstance(to, int) or \
                not facts.partitions < to <= facts.max_partitions:
            return [f"{where}.to: {to!r} is not allowed; allowed: an integer in "
                    f"[{facts.partitions + 1}, {facts.max_partitions}] partitions (more than the "
                    "topic has at that time); set 'to'"]
        return []

    def label(self) -> str:
        return f"increase_partitions to={self.to}"

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        before = ctx.admin.partition_count(ctx.topic)
        ctx.admin.increase_partitions(ctx.topic, self.to)
        return {"partitions_before": before, "partitions_after": ctx.admin.partition_count(
            ctx.topic)}
