"""Reaction time of a scale-out and its five-part breakdown, from the event table.

Definition (DESIGN.md "Measurements"): reaction time = spike start -> first record processed by
a replica that did not exist before the spike. The breakdown follows that one replica (the
*new replica*: the first replica started after the spike start to process a record, or, when no
new replica processed anything, the first one started):

* detection: spike start -> first ``decision`` with ``desired_replicas > current_replicas``;
* actuation: that decision -> the new replica's ``replica_started``;
* cold start: ``replica_started`` -> ready;
* join: ready -> its first ``assigned`` with at least one partition;

"Ready" is the earlier of the replica's own ``engine_ready`` (its engine is up and it is about
to subscribe) and the platform's ``replica_ready`` (the readiness probe's first 200). The probe
alone would not do: the replica's ``/ready`` waits for its first assignment, and the probe
polls once a second, so ``replica_ready`` can follow the assignment and make the join negative.
* first fetch: ``assigned`` -> its ``first_record``.

A share-group member (KIP-932) has no assignment callback: its join ends at its ``joined`` event
(``group_type: share``: the group's statistics show it steady, or a poll returned records).

When every event is present the five parts add up to the reaction time exactly.

A group that scales *in* after the spike start before any scale-out absorbed the spike with the
replicas it had (for instance already at maxReplicaCount, as a tiny lagThreshold keeps it): a
later scale-out answers other lag, not the spike, so there is no reaction (``ScaledInFirst``).
Seen in CI: lagThreshold 50 held 8 of 8 replicas through the spike, scaled in to 3 in the tail
and out to 4 at +180 s, which counted as a 180 s reaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .tables import events_named, first_event_time

_STAGES = ("replica_started", "replica_ready", "assigned", "first_record")
#: Every event :func:`_replica_times` reads.
_TIMES_EVENTS = (*_STAGES, "engine_ready", "joined")


@dataclass(frozen=True)
class Reaction:
    """One scale-out's reaction, every duration in seconds (None when an event is missing).

    Attributes:
        total_s: spike start -> first record of the new replica.
        detection_s, actuation_s, cold_start_s, join_s, first_fetch_s: the breakdown.
        replica_id: the new replica followed, or None.
        reason: None when all six numbers are known; otherwise one line starting with a
            CamelCase token (``NoSpikeStart``, ``ScaledInFirst``, ``NoScaleOutDecision``,
            ``NoNewReplica``,
            ``NoReplicaReady``, ``NoAssignment``, ``NoFirstRecord``) naming the first gap.
    """

    total_s: float | None
    detection_s: float | None
    actuation_s: float | None
    cold_start_s: float | None
    join_s: float | None
    first_fetch_s: float | None
    replica_id: str | None = None
    reason: str | None = None


def _diff(end: float | None, start: float | None) -> float | None:
    return None if end is None or start is None else end - start


def _first_scale_out_decision(events: pd.DataFrame, spike_s: float) -> float | None:
    for row in events_named(events, "decision").itertuples():
        desired = row.fields.get("desired_replicas")
        current = row.fields.get("current_replicas")
        if row.t_s >= spike_s and desired is not None and current is not None \
                and desired > current:
            return float(row.t_s)
    return None


def _first_scale_in_decision(events: pd.DataFrame, spike_s: float) -> float | None:
    for row in events_named(events, "decision").itertuples():
        desired = row.fields.get("desired_replicas")
        current = row.fields.get("current_replicas")
        if row.t_s >= spike_s and desired is not None and current is not None \
                and desired < current:
            return float(row.t_s)
    return None


def _has_partitions(fields: dict) -> bool:
    return "partitions" not in fields or bool(fields["partitions"])


def _times_events(events: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``events`` that :func:`_replica_times` reads. A caller that asks for many
    replicas filters once with it: the times are the same, the table much shorter."""
    return events[events["event"].isin(_TIMES_EVENTS)]


def _replica_times(events: pd.DataFrame, replica_id: str) -> dict[str, float | None]:
    """The replica's first time (s) at each of :data:`_STAGES`, None where it has none:
    ``replica_ready`` is the earlier of ``replica_ready`` and ``engine_ready``; ``assigned``
    the first with partitions, else (a share-group member) its first share-group ``joined``."""
    own = events[events["replica_id"] == replica_id]
    firsts: dict[str, float] = {}
    for event, t_s, fields in zip(own["event"], own["t_s"].astype(float), own["fields"]):
        if t_s != t_s:  # NaN: no time, as pandas' min skips it
            continue
        if event == "engine_ready":
            event = "replica_ready"
        elif event == "assigned" and not _has_partitions(fields):
            continue
        elif event == "joined":
            if fields.get("group_type") != "share":
                continue
            event = "share_joined"
        if event in firsts:
            firsts[event] = min(firsts[event], t_s)
        else:
            firsts[event] = t_s
    times: dict[str, float | None] = {stage: firsts.get(stage) for stage in _STAGES}
    if times["assigned"] is None:
        times["assigned"] = firsts.get("share_joined")
    return times


def _new_replica(events: pd.DataFrame, spike_s: float) -> str | None:
    started = events_named(events, "replica_started")
    before = set(started.loc[started["t_s"] < spike_s, "replica_id"])
    new = started[(started["t_s"] >= spike_s) & ~started["replica_id"].isin(before)]
    if not len(new):
        return None
    firsts = events_named(events, "first_record")
    firsts = firsts[firsts["replica_id"].isin(set(new["replica_id"]))]
    return str(firsts["replica_id"].iloc[0] if len(firsts) else new["replica_id"].iloc[0])


def _reason(spike_s: float | None, decision_s: float | None, replica_id: str | None,
            times: dict[str, float | None]) -> str | None:
    if spike_s is None:
        return "NoSpikeStart: no 'spike_start' event; the producer must log the spike"
    if decision_s is None:
        return (f"NoScaleOutDecision: no 'decision' with desired_replicas > current_replicas "
                f"after the spike start at {spike_s:.1f} s")
    if replica_id is None:
        return f"NoNewReplica: no replica started after the spike start at {spike_s:.1f} s"
    for stage, token in zip(_STAGES[1:], ("NoReplicaReady", "NoAssignment", "NoFirstRecord")):
        if times[stage] is None:
            return f"{token}: replica {replica_id!r} has no {stage!r} event"
    return None


def reaction_time(events: pd.DataFrame, spike_start_s: float | None = None) -> Reaction:
    """Measure the reaction to the first spike.

    Args:
        events: the event table (see :mod:`pytest_lagscale.analyze.tables`); needs the events
            ``spike_start``, ``decision`` (fields ``desired_replicas``, ``current_replicas``),
            ``replica_started``, ``replica_ready`` and/or ``engine_ready``, ``assigned``
            (field ``partitions``) and ``first_record``.
        spike_start_s: spike start in run seconds; default: the first ``spike_start`` event.

    Returns:
        A :class:`Reaction`; missing events give None parts and a ``reason``. Never raises.
    """
    spike_s = spike_start_s if spike_start_s is not None else first_event_time(events,
                                                                               "spike_start")
    if spike_s is None:
        return Reaction(None, None, None, None, None, None, reason=_reason(None, None, None, {}))
    decision_s = _first_scale_out_decision(events, spike_s)
    scale_in_s = _first_scale_in_decision(events, spike_s)
    if scale_in_s is not None and (decision_s is None or scale_in_s < decision_s):
        return Reaction(None, None, None, None, None, None, reason=(
            f"ScaledInFirst: the group scaled in at {scale_in_s:.1f} s, after the spike start "
            f"at {spike_s:.1f} s and before any scale-out: it absorbed the spike with the "
            "replicas it had"))
    replica_id = _new_replica(events, spike_s)
    times = (_replica_times(events, replica_id) if replica_id is not None
             else dict.fromkeys(_STAGES))
    return Reaction(
        total_s=_diff(times["first_record"], spike_s),
        detection_s=_diff(decision_s, spike_s),
        actuation_s=_diff(times["replica_started"], decision_s),
        cold_start_s=_diff(times["replica_ready"], times["replica_started"]),
        join_s=_diff(times["assigned"], times["replica_ready"]),
        first_fetch_s=_diff(times["first_record"], times["assigned"]),
        replica_id=replica_id,
        reason=_reason(spike_s, decision_s, replica_id, times),
    )
