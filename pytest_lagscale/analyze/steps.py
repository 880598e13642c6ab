"""Scale steps of the timeline: each one's rebalance, consume-rate dip, recovery and cost, and
direction reversals.

Definitions (DESIGN.md "Measurements"): a scale step is one change of the replica count in the
timeline; it is anchored at the rebalance it causes (:mod:`.rebalance`: the first revoke /
assign / loss of that membership change, after the new members' cold start on a scale-up); its
dip, recovery and rebalance cost come from the store's exact per-record times over a sliding
window of at least two micro-batch intervals (:mod:`.store_rate`, :mod:`.dip`), and are
measured only while the group is saturated. A direction reversal (flip) is a step whose
direction differs from the previous step's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .dip import RECOVERED_FRACTION, STEP_WINDOW_S, Dip, rebalance_dip
from .rebalance import Rebalance, StepTime, step_rebalances
from .store_rate import StoreTimes

__all__ = ["RECOVERED_FRACTION", "STEP_WINDOW_S", "ScaleStep", "direction_reversals",
           "scale_steps"]


@dataclass(frozen=True)
class ScaleStep:
    """One change of replica count.

    Attributes:
        t_s: first timeline step (seconds since run start) with the new count.
        replicas_before, replicas_after: the counts.
        direction: ``"up"`` or ``"down"``.
        reversal: True when ``direction`` differs from the previous step's.
        dip: 1 - min(windowed rate in the 10 s after the rebalance) / median(windowed rate in
            the 10 s before), a fraction clamped at 0; None when not measured (``dip_reason``).
        recovery_s: seconds from the rebalance until the windowed rate is back to >= 95 % of
            that median; 0.0 when it never fell below; None when never or not measured.
        rebalance_s: the anchor, the start of the step's rebalance (seconds since run start);
            None when no rebalance followed.
        dip_reason: why ``dip`` is None: ``"no store"``, ``"no rebalance"``,
            ``"no rate before"``, ``"not saturated"``, ``"no rate after"``; None when measured.
        rebalance_cost_records: integral of the rate deficit below that median over the 10 s
            after the rebalance, records; None when the dip is not measured.
        rebalance_duration_s: the largest ``rebalance_done.duration_s`` of the step's
            rebalance events, seconds; None without any.
        partitions_stopped: distinct partitions revoked or lost in the step's rebalance;
            None without a rebalance.
        rate_before_per_s: the median windowed rate in the 10 s before, records/s.
    """

    t_s: float
    replicas_before: int
    replicas_after: int
    direction: str
    reversal: bool
    dip: float | None
    recovery_s: float | None
    rebalance_s: float | None = None
    dip_reason: str | None = None
    rebalance_cost_records: float | None = None
    rebalance_duration_s: float | None = None
    partitions_stopped: int | None = None
    rate_before_per_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (JSON-able)."""
        return asdict(self)


def _changes(timeline: pd.DataFrame, column: str) -> list[tuple[float, int, int]]:
    counts = timeline[column].to_numpy()
    return [(float(timeline["t_s"].iloc[i]), int(counts[i - 1]), int(counts[i]))
            for i in np.flatnonzero(np.diff(counts)) + 1]


def _measure(store: StoreTimes | None, timeline: pd.DataFrame,
             rebalance: Rebalance) -> Dip:
    if store is None:
        return Dip(None, "no store")
    if rebalance.start_s is None:
        return Dip(None, "no rebalance")
    return rebalance_dip(store, timeline, rebalance.start_s)


def scale_steps(timeline: pd.DataFrame, column: str = "current_replicas",
                events: pd.DataFrame | None = None,
                store: StoreTimes | None = None) -> list[ScaleStep]:
    """Every change of ``column`` (default the Deployment's replica count), in time order.

    Args:
        timeline: the timeline table (one row per 1 s step).
        column: the replica-count column to follow (``current_replicas``, ``ready_replicas``
            or ``desired_replicas``).
        events: the event table; None: no rebalance is found (dips None, "no rebalance").
        store: the store's record times; None: dips None with the reason ``"no store"``.

    Returns:
        One :class:`ScaleStep` per row whose count differs from the previous row's.
    """
    changes = _changes(timeline, column)
    directions = ["up" if after > before else "down" for _, before, after in changes]
    rebalances = step_rebalances(events, [StepTime(t, d) for (t, _, _), d
                                          in zip(changes, directions)])
    steps: list[ScaleStep] = []
    for (t_s, before, after), direction, rebalance in zip(changes, directions, rebalances):
        dip = _measure(store, timeline, rebalance)
        steps.append(ScaleStep(
            t_s, before, after, direction,
            reversal=bool(steps) and steps[-1].direction != direction,
            dip=dip.dip, recovery_s=dip.recovery_s, rebalance_s=rebalance.start_s,
            dip_reason=dip.reason, rebalance_cost_records=dip.cost_records,
            rebalance_duration_s=rebalance.duration_s,
            partitions_stopped=rebalance.partitions_stopped,
            rate_before_per_s=dip.rate_before_per_s))
    return steps


def direction_reversals(steps: list[ScaleStep]) -> int:
    """Number of direction reversals (flips) among ``steps``."""
    return sum(step.reversal for step in steps)
