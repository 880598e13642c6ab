"""A pre-registered twin prediction held against the real run it predicted: :func:`hold`.

The prediction is the JSON ``lagscale simulate --prediction FILE`` wrote before the run
(:func:`pytest_lagscale.twin.prediction.prediction`); the run is a finished run directory
(:func:`pytest_lagscale.experiment.finished.read_finished_run`). Both sides' figures have one
definition (:func:`pytest_lagscale.twin.prediction.figures_of`), so the table compares like
with like: per figure the predicted median and 5-95 % band, the measured value, the error of
the median ((median - measured) / measured; counts and replicas as a difference) and whether
the measured value lies in the band. The run's inputs must be the prediction's (profile,
policy, engine, partitions, actions): a run of other inputs is refused, not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.errors import ConfigError

#: Figures whose error is a difference (counts), not a ratio.
COUNTS = ("scale_steps", "max_replicas")


@dataclass(frozen=True)
class HeldFigure:
    """One figure: predicted (median, 5 %, 95 %) vs measured; ``error`` as the module says
    (None when either side is missing or measured is 0 for a ratio)."""

    name: str
    unit: str
    median: float | None
    p5: float | None
    p95: float | None
    measured: float | None
    error: float | None
    in_band: bool | None


def _error(name: str, median: float | None, measured: float | None) -> float | None:
    if median is None or measured is None:
        return None
    if name in COUNTS:
        return median - measured
    return None if measured == 0 else (median - measured) / measured


def _input_problems(prediction: dict[str, Any], run: Any) -> list[str]:
    want, inputs = prediction.get("inputs") or {}, run.inputs
    problems = [f"{key}: the prediction's {want.get(key)!r}, the run's {inputs.get(key)!r}"
                for key in ("profile", "policy", "engine", "partitions")
                if want.get(key) != inputs.get(key)]
    actions = [f"{a.get('at_s', a.get('scheduled_s')):g} s {a.get('label')}"
               for a in run.run.get("actions") or [] if a.get("label")]
    if actions and actions != list(want.get("actions") or []):
        problems.append(f"actions: the prediction's {want.get('actions')!r}, the run's "
                        f"{actions!r}")
    return problems


def hold(prediction_path: str | Path, run_dir: str | Path) -> list[HeldFigure]:
    """Compare a pre-registered prediction with the run it predicted.

    Raises:
        ConfigError: unreadable prediction or run directory, or the run's inputs are not the
            prediction's (each difference named).
    """
    from ..experiment.finished import read_finished_run
    from ..twin.prediction import FIGURES, figures_of

    try:
        prediction = json.loads(Path(prediction_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"prediction {str(prediction_path)!r}: {type(exc).__name__}: "
                          f"{exc}") from exc
    run = read_finished_run(run_dir)
    problems = _input_problems(prediction, run)
    if problems:
        raise ConfigError([f"{run.run_dir.name} is not the run {str(prediction_path)!r} "
                           f"predicted: {p}" for p in problems])
    spike = _spike_end_s(run.events)
    flat = dict(run.metrics)
    measured = figures_of(run.timeline, run.events, flat,
                          int(run.run.get("min_replicas") or 1), spike)
    out = []
    for name, (unit, _what) in FIGURES.items():
        entry = (prediction.get("figures") or {}).get(name) or {}
        median, p5, p95 = entry.get("median"), entry.get("p5"), entry.get("p95")
        value = measured.get(name)
        in_band = (None if None in (value, p5, p95)
                   else p5 - 1e-9 <= value <= p95 + 1e-9)
        out.append(HeldFigure(name, unit, median, p5, p95, value, _error(name, median, value),
                              in_band))
    return out


def _spike_end_s(events: Any) -> float | None:
    rows = events[events["event"] == "spike_end"]
    return float(rows["t_s"].iloc[0]) if len(rows) else None


#: The columns of :func:`cells`.
HEADER = ("figure", "unit", "predicted median (5-95 %)", "measured", "error", "in band")


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def cells(rows: list[HeldFigure]) -> list[tuple[str, ...]]:
    """The rows as text, one tuple per figure in the order of :data:`HEADER`."""
    out = []
    for r in rows:
        error = ("-" if r.error is None else f"{r.error:+.0f}" if r.name in COUNTS
                 else f"{r.error:+.1%}")
        band = "-" if r.in_band is None else "yes" if r.in_band else "no"
        predicted = ("-" if r.median is None
                     else f"{_fmt(r.median)} ({_fmt(r.p5)} - {_fmt(r.p95)})")
        out.append((r.name, r.unit, predicted,
                    _fmt(r.measured), error, band))
    return out


def markdown(rows: list[HeldFigure]) -> str:
    """The rows as a Markdown table (:data:`HEADER`; figure names as code)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += [f"| `{c[0]}` | " + " | ".join(c[1:]) + " |" for c in cells(rows)]
    return "\n".join(lines)


__all__ = ["COUNTS", "HEADER", "HeldFigure", "cells", "hold", "markdown"]
