"""Experiment 10's figures: the cost of a late lag signal, one row per lag source.

The same spike under the same ScaledObject, read three ways (``broker``: KEDA's kafka trigger on
the offsets; ``prometheus``: KEDA's prometheus trigger on the run's Prometheus; ``cloudwatch``:
KEDA's aws-cloudwatch trigger on MSK-style SumOffsetLag datapoints). Per source
(:func:`source_row`): reaction time and its detection term (spike start -> first scale-out
decision: the part of the reaction the source changes), peak lag, drain, replica-seconds, and
the signal's staleness at the decisions (from the controller's events, ``run_info.lag_signal``).

:func:`broker_first` is the experiment's assertion: the broker's detection is no later than any
other source's, within a tolerance of one controller period (:func:`tolerance_s`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The table's columns (figure name -> unit), in order.
COLUMNS = {"reaction_time_s": "s", "detection_s": "s", "staleness_at_decision_s": "s",
           "peak_lag_records": "records", "drain_time_s": "s", "replica_seconds": "replica-seconds"}
#: Source name -> the ``run_info.lag_signal`` key its decisions are summarised under (the
#: kafka trigger reads the broker's offsets; a value trigger counts under its type).
SIGNAL_KEYS = {"broker": "broker", "prometheus": "prometheus", "cloudwatch": "aws-cloudwatch"}
#: The reference source: the broker's offsets, read at the decision.
REFERENCE = "broker"


def source_row(source: str, metrics: Mapping[str, Any], detection_s: float | None, drain_time_s: float | None,
               lag_signal: Mapping[str, Any]) -> dict[str, Any]:
    """One source's row.

    Args:
        source: ``broker``, ``prometheus`` or ``cloudwatch``.
        metrics: the run's ``metrics`` (``reaction_time_s``, ``peak_lag_records``,
            ``replica_seconds``; seconds, records, replica-seconds).
        detection_s: the reaction's detection term, seconds (None: no scale-out decision).
        drain_time_s: spike end -> total lag <= the yardstick's lagThreshold, seconds.
        lag_signal: the run's ``run_info.lag_signal`` (:func:`~pytest_lagscale.experiment.
            lag_signal.signal_summary`).

    Returns:
        ``{source, <COLUMNS>..., staleness_at_decision_max_s, staleness_at_step_median_s}``;
        staleness is the median over the scale decisions (seconds; None when unknown).
    """
    signal = lag_signal.get(SIGNAL_KEYS.get(source, source)) or {}
    return {"source": source, "reaction_time_s": metrics.get("reaction_time_s"), "detection_s": detection_s,
            "staleness_at_decision_s": signal.get("decision_staleness_s_median"),
            "staleness_at_decision_max_s": signal.get("decision_staleness_s_max"),
            "staleness_at_step_median_s": signal.get("staleness_s_median"),
            "peak_lag_records": metrics.get("peak_lag_records"), "drain_time_s": drain_time_s,
            "replica_seconds": metrics.get("replica_seconds")}


def tolerance_s(polling_interval_s: float, sync_period_s: float) -> float:
    """How much later than another source the broker may detect and still count as "no later":
    one controller period, the larger of KEDA's pollingInterval and the HPA's sync period
    (seconds). Each run's schedule starts at its own first decision, so two runs reading the
    same lag at the same instant decide up to one period apart; a scale-out from one replica is
    the HPA's (at a sync), activation 0 -> 1 KEDA's (at a poll)."""
    return max(float(polling_interval_s), float(sync_period_s))


@dataclass(frozen=True)
class Verdict:
    """The broker against one other source.

    Attributes:
        source: the other source.
        broker_s / other_s: their detection terms, seconds (None: not measured).
        tolerance_s: the allowed lateness of the broker, seconds.
        passed: ``broker_s <= other_s + tolerance_s``; False when the broker's is unknown, True
            when only the other's is (it never scaled out: the broker did first).
    """

    source: str
    broker_s: float | None
    other_s: float | None
    tolerance_s: float
    passed: bool

    def sentence(self) -> str:
        """One line for the terminal and the JSON."""
        fmt = (lambda v: "-" if v is None else f"{v:.1f} s")  # noqa: E731 - one use
        word = "no later than" if self.passed else "LATER than"
        return (f"broker detection {fmt(self.broker_s)} {word} {self.source}'s {fmt(self.other_s)} "
                f"(tolerance {self.tolerance_s:g} s)")


def broker_first(rows: Mapping[str, Mapping[str, Any]], tolerance: float,
                 figure: str = "detection_s") -> list[Verdict]:
    """:class:`Verdict` of the broker against every other source on ``figure``."""
    broker = rows.get(REFERENCE, {}).get(figure)
    verdicts = []
    for source, row in rows.items():
        if source == REFERENCE:
            continue
        other = row.get(figure)
        passed = broker is not None and (other is None or broker <= other + tolerance)
        verdicts.append(Verdict(source, broker, other, tolerance, passed))
    return verdicts


__all__ = ["COLUMNS", "REFERENCE", "SIGNAL_KEYS", "Verdict", "broker_first", "source_row", "tolerance_s"]
