"""Compare a benchmark document with a baseline, metric by metric.

Checks are objects whose ``fails(baseline, current)`` returns a one-line reason or None (as
pytest-benchmark's ``PercentageRegressionCheck``), but the direction is always explicit.
:func:`compare_documents` returns one :class:`Row` per metric and a verdict;
:func:`check_regressions` raises :class:`~pytest_lagscale.contract.errors.RegressionError` with the
table of regressions; :func:`render_comparison` draws the rows as a rich table.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from ..contract.errors import RegressionError

LOWER, HIGHER = "lower_is_better", "higher_is_better"
STATUSES = ("regression", "improvement", "within_tolerance", "missing", "new", "ungated",
            "other_window")
#: Metrics measured over a window that another metric's event closes, and that metric. The lag
#: build-up rate runs from the spike to the first scale-out, the event reaction_time_s times;
#: where the baseline and the current run differ in whether that event was measured (the group
#: was already scaling when the spike came in one, at its minimum in the other), the two rates
#: are over different windows and are not compared (status ``other_window``; the runs that
#: showed it: docs/experiments.md, "Baselines: samples and history").
DEPENDS_ON = {"lag_build_up_rate_per_s": "reaction_time_s"}


class RegressionCheck(Protocol):
    """A check of one metric's current value against its baseline value."""

    def fails(self, baseline: float, current: float) -> str | None:
        """A one-line reason when ``current`` regressed past the tolerance, else None."""


def _worse_by(direction: str, baseline: float, current: float) -> float:
    """How much worse ``current`` is than ``baseline`` (negative: better), in the unit."""
    return current - baseline if direction == LOWER else baseline - current


def _with_unit(value: float, unit: str) -> str:
    return f"{value:g} {unit}" if unit else f"{value:g}"


@dataclass(frozen=True)
class RelativeCheck:
    """Fails when the metric got worse by more than ``tolerance`` x |baseline| (0.1 = 10 %)
    and by more than ``slack`` in its own unit (0: no absolute allowance; a count's
    baseline carries one, see ``report/baselines.py``).

    A baseline of 0 allows no worsening beyond ``slack``.
    """

    metric: str
    direction: str
    tolerance: float
    unit: str = ""
    slack: float = 0.0

    def fails(self, baseline: float, current: float) -> str | None:
        allowed = max(self.tolerance * abs(baseline), self.slack)
        if _worse_by(self.direction, baseline, current) <= allowed:
            return None
        change = f"{(current - baseline) / abs(baseline):+.1%}" if baseline else "from 0"
        slack = f" and the {_with_unit(self.slack, self.unit)} slack" if self.slack else ""
        return (f"{self.metric}: {baseline:g} -> {_with_unit(current, self.unit)} ({change}), "
                f"worse than the {self.tolerance:.1%} tolerance{slack} ({self.direction})")


@dataclass(frozen=True)
class AbsoluteCheck:
    """Fails when the metric got worse by more than ``tolerance`` in its own unit."""

    metric: str
    direction: str
    tolerance: float
    unit: str = ""

    def fails(self, baseline: float, current: float) -> str | None:
        if _worse_by(self.direction, baseline, current) <= self.tolerance:
            return None
        return (f"{self.metric}: {baseline:g} -> {_with_unit(current, self.unit)}, worse by "
                f"more than {_with_unit(self.tolerance, self.unit)} ({self.direction})")


@dataclass(frozen=True)
class Row:
    """One metric of a comparison; ``baseline``/``current`` are None when absent or unmeasured.

    ``change`` is (current - baseline) / |baseline| (None when not computable); ``status`` is
    one of :data:`STATUSES` (``ungated``: the baseline's value is None, so any current value
    passes; ``missing``: the current run lacks a metric the baseline has); ``reason`` is the
    failing check's line, or None.
    """

    metric: str
    unit: str
    direction: str
    baseline: float | None
    current: float | None
    change: float | None
    status: str
    reason: str | None = None


@dataclass(frozen=True)
class Comparison:
    """All rows, ``verdict`` (``pass``/``fail``) and machine_info warnings."""

    rows: tuple[Row, ...]
    verdict: str
    warnings: tuple[str, ...] = ()

    @property
    def failures(self) -> tuple[Row, ...]:
        """Rows that make the verdict ``fail``."""
        return tuple(row for row in self.rows if row.reason is not None)


def check_for(name: str, entry: Mapping[str, Any],
              override: RegressionCheck | None = None) -> RegressionCheck:
    """The check of metric ``name``: ``override``, else a :class:`RelativeCheck` built from
    the baseline entry's direction, tolerance and (optional) slack."""
    if override is not None:
        return override
    return RelativeCheck(name, entry["direction"], float(entry.get("tolerance", 0.0)),
                         entry.get("unit", ""), float(entry.get("slack", 0.0)))


def _row(name: str, base: Mapping[str, Any], cur: Mapping[str, Any] | None,
         check: RegressionCheck, missing_fails: bool) -> Row:
    unit, direction = base.get("unit", ""), base["direction"]
    b = base.get("value")
    c = None if cur is None else cur.get("value")
    if b is None:   # the baseline does not gate it (unmeasured there, or no tolerance fits)
        return Row(name, unit, direction, b, c, None, "ungated")
    if c is None:
        reason = (f"{name}: absent from the current run (baseline {_with_unit(b, unit)})"
                  if missing_fails else None)
        return Row(name, unit, direction, b, c, None, "missing", reason)
    reason = check.fails(float(b), float(c))
    change = (c - b) / abs(b) if b else None
    if reason:
        status = "regression"
    elif check.fails(float(b), 2.0 * b - c):  # the mirror image of c would have failed
        status = "improvement"
    else:
        status = "within_tolerance"
    return Row(name, unit, direction, b, c, change, status, reason)


def closer_measured(doc: Mapping[str, Any], name: str) -> bool | None:
    """Whether ``doc`` measured metric ``name``: for a baseline (a ``baseline.spread`` entry
    with ``measured`` and ``n``), True when every sample did, False when none did, None when
    some did; for a run, whether its value is not None."""
    spread = ((doc.get("baseline") or {}).get("spread") or {}).get(name)
    if spread is not None and "measured" in spread:
        return (True if spread["measured"] == spread["n"]
                else False if spread["measured"] == 0 else None)
    return (doc["metrics"].get(name) or {}).get("value") is not None


def _other_window(row: Row, baseline: Mapping[str, Any], current: Mapping[str, Any]) -> Row:
    """``row`` as ``other_window`` (no reason) when it is a :data:`DEPENDS_ON` metric whose
    window-closing event the baseline and the current run did not both (or both not) measure."""
    closer = DEPENDS_ON.get(row.metric)
    if closer is None or row.status in ("ungated", "new"):
        return row
    if closer_measured(baseline, closer) == closer_measured(current, closer):
        return row
    return Row(row.metric, row.unit, row.direction, row.baseline, row.current, row.change,
               "other_window")


def compare_documents(baseline: Mapping[str, Any], current: Mapping[str, Any],
                      checks: Mapping[str, RegressionCheck] | None = None,
                      missing_fails: bool = True) -> Comparison:
    """Compare two loaded benchmark documents (see :mod:`.benchjson`) metric by metric.

    Args:
        baseline, current: documents as returned by ``benchjson.load``.
        checks: per-metric overrides; default: the baseline's direction and tolerance.
        missing_fails: a metric measured in the baseline but absent (or None) now fails.

    Returns:
        A :class:`Comparison`: one row per baseline metric (in baseline order), then one
        ``new`` row per metric only the current run has. A :data:`DEPENDS_ON` metric whose
        window the two documents closed on different events is ``other_window`` and passes. An improvement is a change past the
        tolerance in the good direction. machine_info differences become warnings only.
    """
    checks = checks or {}
    cur_metrics = current["metrics"]
    rows = [_row(name, entry, cur_metrics.get(name), check_for(name, entry, checks.get(name)),
                 missing_fails) for name, entry in baseline["metrics"].items()]
    rows = [_other_window(row, baseline, current) for row in rows]
    rows += [Row(name, e.get("unit", ""), e["direction"], None, e.get("value"), None, "new")
             for name, e in cur_metrics.items() if name not in baseline["metrics"]]
    notes = ()
    if baseline.get("machine_info") != current.get("machine_info"):
        notes = ("machine_info: the current run's machine differs from the baseline's; "
                 "timings may not be comparable",)
    verdict = "fail" if any(row.reason for row in rows) else "pass"
    return Comparison(tuple(rows), verdict, notes)


def check_regressions(baseline: Mapping[str, Any], current: Mapping[str, Any],
                      checks: Mapping[str, RegressionCheck] | None = None) -> Comparison:
    """:func:`compare_documents`, warning on machine differences.

    Raises:
        RegressionError: at least one metric failed; the message has one line per failure.
    """
    comparison = compare_documents(baseline, current, checks)
    for note in comparison.warnings:
        warnings.warn(note, stacklevel=2)
    if comparison.verdict == "fail":
        lines = [row.reason for row in comparison.failures]
        raise RegressionError(f"{len(lines)} metric(s) regressed past the baseline:\n"
                              + "\n".join(f"  {line}" for line in lines))
    return comparison


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


_STYLES = {"regression": "bold red", "improvement": "green", "missing": "yellow",
           "ungated": "dim", "other_window": "dim"}


def render_comparison(comparison: Comparison,
                      title: str | None = "lagscale vs baseline") -> Any:
    """A ``rich.table.Table``: metric, unit, better, baseline, current, change, status.

    ``title`` (suffixed with ``: <verdict>``) is centred over the table and wraps to the table's
    width; pass ``None`` and print a heading of your own when it may be long (file paths).
    """
    from rich.table import Table

    table = Table(title=None if title is None else f"{title}: {comparison.verdict}")
    for column in ("metric", "unit", "better", "baseline", "current", "change", "status"):
        table.add_column(column, justify="right" if column in {"baseline", "current",
                                                               "change"} else "left")
    for row in comparison.rows:
        change = "-" if row.change is None else f"{row.change:+.1%}"
        better = "lower" if row.direction == LOWER else "higher"
        table.add_row(row.metric, row.unit, better, _fmt(row.baseline), _fmt(row.current),
                      change, row.status, style=_STYLES.get(row.status))
    return table
