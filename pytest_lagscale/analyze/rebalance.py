"""The consumer-group rebalance each scale step causes, from the replicas' event logs.

A scale step (one change of the timeline's ``current_replicas``) is anchored at its rebalance:
the first ``revoked``, ``assigned`` or ``lost`` event of any replica that belongs to the
membership change, found as follows.

* The step's members come from the platform's events in ``[t_s - 2 s, t_s + 1 s]``: the
  ``replica_started`` replicas of a scale-up, the ``replica_terminating`` ones of a scale-down.
* Scale-up: the rebalance starts when a new member joins, after its cold start. The anchor is
  the earlier of the new members' first ``assigned`` and the first ``revoked`` / ``lost`` of any
  replica after their first ``subscribed`` (an eager group revokes before the newcomer's
  assignment arrives); None when none was ever assigned. Other replicas' ``assigned`` events
  between ``subscribed`` and the join are not taken: on Spark they are often the tail of the
  previous step's cooperative rebalance, delivered late by replicas busy in a micro-batch.
* Scale-down: the first rebalance event at or after the step's first ``replica_terminating``,
  before the next step's members; None when none came.
* Without platform events, the first rebalance event in ``[t_s, next step's t_s)``.
* A share group (KIP-932; its replicas log ``share_offset_reset``) has no rebalance callbacks:
  its members' ``joined`` stands for ``assigned`` and ``closed`` for ``revoked``; no partition
  is stopped (a leaving member releases its records).

The step's rebalance events are those in ``[anchor, anchor + 10 s)``, cut at the next step's
anchor. From them: **rebalance duration** = from the anchor to the step's last ``revoked`` /
``assigned`` / ``lost`` callback (both rounds of a cooperative one; the replicas'
``rebalance_done.duration_s`` is only the time inside one callback) and **partitions stopped** =
distinct partitions in ``revoked`` and ``lost`` events (docs/experiments.md, "Notes moved from
module docstrings", says why the join is the anchor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

#: Replica events that mark a rebalance.
REBALANCE_EVENTS = ("revoked", "assigned", "lost")
#: Replica events whose partitions stopped being consumed.
STOP_EVENTS = ("revoked", "lost")
#: A share group's membership events and the rebalance events they stand for.
SHARE_MEMBERSHIP_EVENTS = {"joined": "assigned", "closed": "revoked"}
#: Every event :func:`step_rebalances` reads (after a share group's renaming).
_READ_EVENTS = (*REBALANCE_EVENTS, "replica_started", "replica_terminating", "subscribed")
#: Platform events up to this many seconds before a step's row belong to it ...
MATCH_BEFORE_S = 2.0
#: ... and up to this many after.
MATCH_AFTER_S = 1.0
#: Seconds after the anchor whose rebalance events belong to the step.
REBALANCE_WINDOW_S = 10.0


@dataclass(frozen=True)
class StepTime:
    """What the anchoring needs of a scale step: its row time (s) and direction."""

    t_s: float
    direction: str


@dataclass(frozen=True)
class Rebalance:
    """The rebalance of one scale step.

    Attributes:
        start_s: the anchor, seconds since run start; None when no rebalance followed.
        members: replica ids that joined (scale-up) or left (scale-down) in the step.
        duration_s: the largest ``rebalance_done.duration_s`` of the step's rebalance events,
            seconds; None without any.
        partitions_stopped: distinct partitions revoked or lost in them; None without anchor.
    """

    start_s: float | None
    members: tuple[str, ...] = ()
    duration_s: float | None = None
    partitions_stopped: int | None = None


def _platform_members(events: pd.DataFrame, step: StepTime) -> tuple[tuple[str, ...], float]:
    """(the step's members, when the platform acted: its first such event, else ``t_s``)."""
    name = "replica_started" if step.direction == "up" else "replica_terminating"
    rows = events[(events["event"] == name) & (events["t_s"] >= step.t_s - MATCH_BEFORE_S)
                  & (events["t_s"] <= step.t_s + MATCH_AFTER_S) & events["replica_id"].notna()]
    members = tuple(str(r) for r in rows["replica_id"])
    return members, (float(rows["t_s"].min()) if members else step.t_s)


def _first_rebalance(rebalances: pd.DataFrame, after_s: float,
                     before_s: float = np.inf) -> float | None:
    rows = rebalances[(rebalances["t_s"] >= after_s) & (rebalances["t_s"] < before_s)]
    return float(rows["t_s"].iloc[0]) if len(rows) else None


def _join_s(events: pd.DataFrame, rebalances: pd.DataFrame,
            members: tuple[str, ...]) -> float | None:
    """The earlier of the new members' first ``assigned`` and the first revoke or loss of any
    replica at or after their first ``subscribed``; None when no new member was assigned."""
    mine = rebalances[rebalances["replica_id"].isin(members)
                      & (rebalances["event"] == "assigned")]
    if not len(mine):
        return None
    joined_s = float(mine["t_s"].min())
    asked = events[events["replica_id"].isin(members) & (events["event"] == "subscribed")]
    if len(asked):
        stops = rebalances[rebalances["event"].isin(STOP_EVENTS)]
        stop_s = _first_rebalance(stops, float(asked["t_s"].min()), joined_s)
        joined_s = joined_s if stop_s is None else stop_s
    return joined_s


def _anchor(events: pd.DataFrame, rebalances: pd.DataFrame, step: StepTime,
            members: tuple[str, ...], acted_s: float, next_s: float) -> float | None:
    """The step's anchor; ``acted_s``: when the platform acted; ``next_s``: the next step's."""
    if step.direction == "up" and members:
        return _join_s(events, rebalances, members)
    return _first_rebalance(rebalances, acted_s, next_s)


def _stats(events: pd.DataFrame, start_s: float, end_s: float) -> tuple[float | None, int]:
    rows = events[(events["t_s"] >= start_s) & (events["t_s"] < end_s)
                  & events["replica_id"].notna()]
    callbacks = rows.loc[rows["event"].isin(REBALANCE_EVENTS), "t_s"]
    duration = float(callbacks.max()) - start_s if len(callbacks) else None
    stopped = {int(p) for f in rows.loc[rows["event"].isin(STOP_EVENTS), "fields"]
               for p in (f.get("partitions") or ())}
    return duration, len(stopped)


def step_rebalances(events: pd.DataFrame | None, steps: Sequence[StepTime]) -> list[Rebalance]:
    """The rebalance of each step (see the module docstring), in step order.

    Args:
        events: the event table (:mod:`.tables`); None or empty: no rebalance is found.
        steps: the scale steps in time order.

    Returns:
        One :class:`Rebalance` per step.
    """
    if events is None or not len(events):
        return [Rebalance(None) for _ in steps]
    if (events["event"] == "share_offset_reset").any():  # a share group: membership stands in
        events = events.assign(event=events["event"].replace(SHARE_MEMBERSHIP_EVENTS))
    events = events[events["event"].isin(_READ_EVENTS)]  # the only rows read below
    rebalances = events[events["event"].isin(REBALANCE_EVENTS) & events["replica_id"].notna()]
    matched = [_platform_members(events, step) for step in steps]
    members = [m for m, _ in matched]
    acted = [a for _, a in matched] + [np.inf]
    anchors = [_anchor(events, rebalances, step, members[i], acted[i], acted[i + 1])
               for i, step in enumerate(steps)]
    out = []
    for i, start in enumerate(anchors):
        if start is None:
            out.append(Rebalance(None, members[i]))
            continue
        later = [a for a in anchors[i + 1:] if a is not None and a > start]
        end = min([start + REBALANCE_WINDOW_S, *later])
        duration, stopped = _stats(events, start, end)
        out.append(Rebalance(start, members[i], duration, stopped))
    return out
