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


class _Events:
    """The columns of the event table the anchoring reads, as arrays (one pass of pandas per
    run, then numpy masks per step: a run's steps times a dozen filters were most of a twin
    draw's analysis)."""

    def __init__(self, events: pd.DataFrame) -> None:
        self.t_s = events["t_s"].to_numpy(dtype=float)
        self.event = events["event"].to_numpy(dtype=object)
        self.replica_id = events["replica_id"].to_numpy(dtype=object)
        self.fields = events["fields"].to_numpy(dtype=object)
        by_replica = events["replica_id"].notna().to_numpy()
        self.rebalance = np.isin(self.event, REBALANCE_EVENTS) & by_replica
        self.stop = np.isin(self.event, STOP_EVENTS) & by_replica
        self.by_replica = by_replica

    def named(self, name: str) -> np.ndarray:
        return self.event == name

    def of(self, members: tuple[str, ...]) -> np.ndarray:
        wanted = set(members)
        return np.fromiter((r in wanted for r in self.replica_id), dtype=bool,
                           count=len(self.replica_id))

    def first_t(self, mask: np.ndarray) -> float | None:
        """The time of the first row (in table order) of ``mask``; None without one."""
        rows = np.flatnonzero(mask)
        return float(self.t_s[rows[0]]) if len(rows) else None


def _platform_members(ev: _Events, step: StepTime) -> tuple[tuple[str, ...], float]:
    """(the step's members, when the platform acted: its first such event, else ``t_s``)."""
    name = "replica_started" if step.direction == "up" else "replica_terminating"
    rows = (ev.named(name) & (ev.t_s >= step.t_s - MATCH_BEFORE_S)
            & (ev.t_s <= step.t_s + MATCH_AFTER_S) & ev.by_replica)
    members = tuple(str(r) for r in ev.replica_id[rows])
    return members, (float(ev.t_s[rows].min()) if members else step.t_s)


def _first_rebalance(ev: _Events, kind: np.ndarray, after_s: float,
                     before_s: float = np.inf) -> float | None:
    return ev.first_t(kind & (ev.t_s >= after_s) & (ev.t_s < before_s))


def _join_s(ev: _Events, members: tuple[str, ...]) -> float | None:
    """The earlier of the new members' first ``assigned`` and the first revoke or loss of any
    replica at or after their first ``subscribed``; None when no new member was assigned."""
    theirs = ev.of(members)
    mine = ev.rebalance & theirs & ev.named("assigned")
    if not mine.any():
        return None
    joined_s = float(ev.t_s[mine].min())
    asked = theirs & ev.named("subscribed")
    if asked.any():
        stop_s = _first_rebalance(ev, ev.stop, float(ev.t_s[asked].min()), joined_s)
        joined_s = joined_s if stop_s is None else stop_s
    return joined_s


def _anchor(ev: _Events, step: StepTime, members: tuple[str, ...], acted_s: float,
            next_s: float) -> float | None:
    """The step's anchor; ``acted_s``: when the platform acted; ``next_s``: the next step's."""
    if step.direction == "up" and members:
        return _join_s(ev, members)
    return _first_rebalance(ev, ev.rebalance, acted_s, next_s)


def _stats(ev: _Events, start_s: float, end_s: float) -> tuple[float | None, int]:
    rows = (ev.t_s >= start_s) & (ev.t_s < end_s)
    callbacks = rows & ev.rebalance
    duration = float(ev.t_s[callbacks].max()) - start_s if callbacks.any() else None
    stopped = {int(p) for f in ev.fields[rows & ev.stop] for p in (f.get("partitions") or ())}
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
    ev = _Events(events[events["event"].isin(_READ_EVENTS)])  # the only rows read below
    matched = [_platform_members(ev, step) for step in steps]
    members = [m for m, _ in matched]
    acted = [a for _, a in matched] + [np.inf]
    anchors = [_anchor(ev, step, members[i], acted[i], acted[i + 1])
               for i, step in enumerate(steps)]
    out = []
    for i, start in enumerate(anchors):
        if start is None:
            out.append(Rebalance(None, members[i]))
            continue
        later = [a for a in anchors[i + 1:] if a is not None and a > start]
        end = min([start + REBALANCE_WINDOW_S, *later])
        duration, stopped = _stats(ev, start, end)
        out.append(Rebalance(start, members[i], duration, stopped))
    return out
