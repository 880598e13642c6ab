"""What a run could not see, and the faults it went through: ``faults``, ``lag_unread_s`` and
``settled`` of ``benchmark.json``.

A run never reports a stale world as a good one. Two questions, answered from the two tables:

* **Was the lag fresh?** The timeline's ``total_lag_age_s`` (:mod:`..observe.recorder`) is the
  age of the newest lag sample at each 1 s bucket. A bucket whose lag is older than
  ``max_age_s`` (two polling intervals: the run sets it), or has no sample at all, is *unread*:
  drawn as a gap, summed into ``lag_unread_s``, its runs listed as ``lag_unread`` faults.
* **What went wrong, and when?** :func:`faults` lists every fault with its time and duration:
  the injected ones (scheduled actions with ``fault_s`` in their ``action`` event:
  :mod:`pytest_lagscale.experiment.actions`) and the observed ones (``part_died``,
  ``part_restarted``, ``replica_liveness_failed``, stretches of unread lag). Each injected fault
  says how soon after its end the controller read lag again (``lag_read_again_s``, from the
  controller's step events that carry a ``signal``).

Times are seconds from the load start (``t_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import pandas as pd

#: A run whose lag was unread for more than this share of its duration is not a good run.
MAX_UNREAD_FRACTION = 0.10


@dataclass(frozen=True)
class LagFreshness:
    """How much of the run had a fresh lag value.

    Attributes:
        unread_s: seconds (1 s buckets) whose lag was missing or older than ``max_age_s``;
            None when the timeline carries no sample ages (recorded before they existed).
        longest_s: the longest run of such buckets, seconds (None as above).
        stretches: ``[(start_s, end_s)]`` of those runs.
        duration_s: seconds the timeline covers.
        max_age_s: the age above which a lag value counts as unread.
    """

    unread_s: float | None
    longest_s: float | None
    stretches: tuple[tuple[float, float], ...]
    duration_s: float
    max_age_s: float

    @property
    def unread_fraction(self) -> float | None:
        """``unread_s / duration_s`` (None without ages or with an empty timeline)."""
        if self.unread_s is None or not self.duration_s:
            return None
        return self.unread_s / self.duration_s


def stale_mask(timeline: pd.DataFrame, max_age_s: float,
               column: str = "total_lag_age_s") -> pd.Series | None:
    """Per bucket, True where ``column``'s sample is missing or older than ``max_age_s``;
    None when the timeline has no such column."""
    if column not in timeline:
        return None
    ages = timeline[column].astype("float64")
    return ages.isna() | (ages > max_age_s)


def lag_freshness(timeline: pd.DataFrame, max_age_s: float, step_s: float = 1.0) -> LagFreshness:
    """:class:`LagFreshness` of ``timeline`` with lag older than ``max_age_s`` seconds unread.

    Raises:
        ValueError: ``max_age_s`` is not above 0.
    """
    if not max_age_s > 0:
        raise ValueError(f"max_age_s: {max_age_s!r} is not above 0; give seconds")
    duration = float(len(timeline)) * step_s
    mask = stale_mask(timeline, max_age_s)
    if mask is None:
        return LagFreshness(None, None, (), duration, max_age_s)
    stretches: list[tuple[float, float]] = []
    start: float | None = None
    times = timeline["t_s"].astype("float64").tolist()
    for t, stale in zip(times, mask.tolist()):
        if stale and start is None:
            start = t
        elif not stale and start is not None:
            stretches.append((start, t))
            start = None
    if start is not None:
        stretches.append((start, times[-1] + step_s))
    lengths = [end - begin for begin, end in stretches]
    return LagFreshness(float(mask.sum()) * step_s, max(lengths, default=0.0),
                        tuple(stretches), duration, max_age_s)


@dataclass
class Fault:
    """One fault of a run.

    Attributes:
        name: the action (``pause_broker``) or what was observed (``part_died``,
            ``part_restarted``, ``replica_liveness_failed``, ``lag_unread``).
        kind: ``injected`` or ``observed``.
        start_s: when it began (s from the load start); duration_s: how long it lasted (None:
            not known, or it never ended).
        detail: what else is known (label, part, exit status, replica).
        lag_read_again_s: for an injected fault, seconds from its end to the controller's first
            successful lag read after it (None: none after it, or not an injected fault).
    """

    name: str
    kind: str
    start_s: float
    duration_s: float | None
    detail: dict[str, Any] = field(default_factory=dict)
    lag_read_again_s: float | None = None

    @property
    def end_s(self) -> float | None:
        return None if self.duration_s is None else self.start_s + self.duration_s

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "start_s": round(self.start_s, 3),
                "duration_s": None if self.duration_s is None else round(self.duration_s, 3),
                "lag_read_again_s": (None if self.lag_read_again_s is None
                                     else round(self.lag_read_again_s, 3)),
                **self.detail}


def _rows(events: pd.DataFrame) -> Iterable[tuple[float, str, str, Mapping[str, Any]]]:
    """``(t_s, event, source, fields)`` per event; ``fields`` gets back the ``replica_id`` the
    event table keeps in a column of its own."""
    if events is None or not len(events):
        return []
    return ((t, event, source, {**(fields if isinstance(fields, Mapping) else {}),
                                **({"replica_id": rid} if isinstance(rid, str) else {})})
            for t, event, source, fields, rid in zip(
                events["t_s"].astype("float64"), events["event"], events["source"].fillna(""),
                events["fields"], events["replica_id"]))


def _lag_reads(events: pd.DataFrame) -> list[float]:
    """Times of the controller's successful lag reads (its step events carrying a signal)."""
    return sorted(t for t, _, source, fields in _rows(events)
                  if source == "controller" and isinstance(fields, Mapping)
                  and isinstance(fields.get("signal"), Mapping))


def faults(events: pd.DataFrame, freshness: LagFreshness | None = None) -> list[Fault]:
    """Every fault of a run, injected and observed, ordered by start.

    Args:
        events: the run's event table (:mod:`.tables`).
        freshness: the run's :func:`lag_freshness`; its unread stretches become ``lag_unread``
            faults. None: none listed.
    """
    out: list[Fault] = []
    reads = _lag_reads(events)
    for t, event, _, fields in _rows(events):
        fields = fields if isinstance(fields, Mapping) else {}
        if event in ("action", "action_failed") and (fields.get("fault") or "fault_s" in fields):
            start = float(fields.get("started_s", t))
            duration = fields.get("fault_s")
            fault = Fault(str(fields.get("action")), "injected", start,
                          None if duration is None else float(duration),
                          {"label": fields.get("label"),
                           **({"error": fields["error"]} if "error" in fields else {}),
                           **({"replica_id": fields["replica_id"]}
                              if "replica_id" in fields else {})})
            end = fault.end_s
            if end is not None:
                after = [r for r in reads if r > end]
                fault.lag_read_again_s = (after[0] - end) if after else None
            out.append(fault)
        elif event == "part_died":
            out.append(Fault(event, "observed", t, None,
                             {"part": fields.get("part"), "exit": fields.get("exit")}))
        elif event == "part_restarted":
            gap = float(fields.get("gap_s") or 0.0)
            out.append(Fault(event, "observed", t - gap, gap,
                             {"part": fields.get("part"), "exit": fields.get("exit")}))
        elif event == "replica_liveness_failed":  # the platform restarts it
            out.append(Fault(event, "observed", t, None,
                             {"replica_id": fields.get("replica_id")}))
    if freshness is not None:
        for start, end in freshness.stretches:
            out.append(Fault("lag_unread", "observed", start, end - start,
                             {"max_age_s": freshness.max_age_s}))
    return sorted(out, key=lambda f: f.start_s)


def world_problems(*, settled: bool | None, settle_timeout_s: float,
                   freshness: LagFreshness | None, incomplete: str | None,
                   unsettled_state: str = "") -> list[str]:
    """One line per reason a run is not a good one: it did not settle, its lag was unread for
    more than :data:`MAX_UNREAD_FRACTION` of it, or it ended early (``incomplete``)."""
    problems = []
    if incomplete:
        problems.append(f"incomplete: {incomplete}")
    if settled is False:
        problems.append(f"not settled: lag 0 at minReplicaCount not reached within "
                        f"{settle_timeout_s:g} s{unsettled_state}")
    fraction = None if freshness is None else freshness.unread_fraction
    if fraction is not None and fraction > MAX_UNREAD_FRACTION:
        problems.append(f"lag unread {freshness.unread_s:.0f} s of {freshness.duration_s:.0f} s "
                        f"({100 * fraction:.1f} % > {100 * MAX_UNREAD_FRACTION:.0f} %; longest "
                        f"gap {freshness.longest_s:.0f} s, lag older than "
                        f"{freshness.max_age_s:g} s counts as unread)")
    return problems
