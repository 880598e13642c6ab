"""The timeline PNG: total lag (and the consumers' own view of it), desired and ready replicas and
group consume rate on one time axis.

matplotlib (the ``plot`` extra) is imported inside :func:`write_timeline_png`, with the Agg
backend, so importing this module (or the plugin) never loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..analyze.staleness import stale_mask
from ..analyze.steps import ScaleStep, scale_steps


#: Each panel's legend: above it, in one row (inside, it hid the lag's rise or its tail).
_LEGEND_ABOVE = {"loc": "lower left", "bbox_to_anchor": (0.0, 1.0), "frameon": False,
                 "fontsize": 9, "borderaxespad": 0.2}


def _plot_lag_and_rate(lag_ax, timeline: pd.DataFrame, max_lag_age_s: float | None = None) -> None:
    lag = timeline["total_lag"].astype("float64")
    stale = (stale_mask(timeline, max_lag_age_s) if max_lag_age_s is not None else None)
    if stale is not None and stale.any():  # a value older than allowed is a gap, not a line
        lag = lag.mask(stale)
    lag_ax.plot(timeline["t_s"], lag, color="tab:blue", label="total lag")
    # where Prometheus itself scraped nothing (the controller's series is stale too), the
    # rate's 0 and the consumers' last value are no observation: gaps as well
    unscraped = (stale_mask(timeline, max_lag_age_s, "desired_replicas_age_s")
                 if max_lag_age_s is not None else None)
    own = timeline["consumer_lag"] if "consumer_lag" in timeline else None
    rate = timeline["consume_rate_per_s"].astype("float64")
    if unscraped is not None and unscraped.any():
        rate = rate.mask(unscraped)
        own = own.mask(unscraped) if own is not None else None
    if own is not None and own.notna().any():
        # gaps (no replica reported) stay gaps: unknown, not 0
        lag_ax.plot(timeline["t_s"], own, color="tab:cyan", linestyle="--", linewidth=1.1,
                    label="consumer-reported lag")
    lag_ax.set_ylabel("total lag (records)")
    rate_ax = lag_ax.twinx()
    rate_ax.plot(timeline["t_s"], rate, color="tab:purple",
                 linewidth=0.9, label="consume rate")
    reported = (timeline["consumer_consume_rate_per_s"]
                if "consumer_consume_rate_per_s" in timeline else None)
    if reported is not None and unscraped is not None and unscraped.any():
        reported = reported.mask(unscraped)
    if reported is not None and reported.notna().any():
        # the consumers' own consume_rate gauge (/metrics), beside the measured rate
        rate_ax.plot(timeline["t_s"], reported, color="tab:pink", linestyle=":",
                     linewidth=1.1, label="consumer-reported consume rate")
    rate_ax.set_ylabel("group consume rate (records/s)")
    handles = [h for ax in (lag_ax, rate_ax) for h in ax.get_legend_handles_labels()[0]]
    lag_ax.legend(handles=handles, ncols=len(handles), **_LEGEND_ABOVE)


def _plot_replicas(ax, timeline: pd.DataFrame) -> None:
    ax.step(timeline["t_s"], timeline["desired_replicas"], where="post", color="tab:orange",
            linestyle="--", label="desired replicas")
    ax.step(timeline["t_s"], timeline["ready_replicas"], where="post", color="tab:green",
            label="ready replicas")
    ax.set_ylabel("replicas")
    ax.set_ylim(bottom=0)


def _mark(ax, spike: tuple[float, float] | None, steps: Sequence[ScaleStep]) -> None:
    if spike is not None:
        ax.axvspan(spike[0], spike[1], color="tab:red", alpha=0.08, label="spike")
    for step in steps:
        ax.axvline(step.t_s, color="tab:gray", linewidth=0.8,
                   linestyle="-" if step.direction == "up" else ":")


def _mark_faults(axes: Sequence, faults: Sequence[tuple[float, float, str]],
                 end_s: float) -> None:
    """A grey band per fault (``(start_s, duration_s, name)``; an open fault runs to the end),
    its name at the bottom of the first panel; faults starting within 3 s of each other (an
    injected fault and what it caused) share one label."""
    labels: list[tuple[float, str]] = []
    for start_s, _, name in sorted(faults, key=lambda fault: fault[0]):
        if labels and start_s - labels[-1][0] < 3.0:
            labels[-1] = (labels[-1][0], f"{labels[-1][1]} + {name}")
        else:
            labels.append((start_s, name))
    for start_s, duration_s, _ in faults:
        end = start_s + max(duration_s, 0.5) if duration_s is not None else end_s
        for ax in axes:
            ax.axvspan(start_s, end, color="black", alpha=0.12, linewidth=0)
    for start_s, name in labels:
        axes[0].annotate(name, xy=(start_s, 0.0), xycoords=("data", "axes fraction"),
                         xytext=(2, 3), textcoords="offset points", rotation=90,
                         va="bottom", ha="left", fontsize=8, color="dimgray")


def _mark_actions(axes: Sequence, actions: Sequence[tuple[float, str]]) -> None:
    """A black dash-dot line per scheduled action, labelled at the top of the first panel."""
    for t_s, label in actions:
        for ax in axes:
            ax.axvline(t_s, color="black", linewidth=1.1, linestyle="-.")
        axes[0].annotate(label, xy=(t_s, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(3, -3), textcoords="offset points", rotation=90,
                         va="top", ha="left", fontsize=8)


def write_timeline_png(timeline: pd.DataFrame, path: str | Path, *,
                       spike: tuple[float, float] | None = None,
                       steps: Sequence[ScaleStep] | None = None,
                       actions: Sequence[tuple[float, str]] = (),
                       faults: Sequence[tuple[float, float | None, str]] = (),
                       max_lag_age_s: float | None = None,
                       title: str = "lagscale timeline") -> Path:
    """Draw the run's timeline and write it as a PNG.

    Top panel: total lag (records, left axis; the committed-offset lag KEDA reads), the lag the
    consumers report themselves (``consumer_lag``, dashed, when the timeline has it: the sum of
    their ``consumer_records_lag``) and group consume rate (records/s, right axis), with the
    rate the consumers report (``consumer_consume_rate_per_s``, dotted, when any reported:
    the lab's ``consume_rate`` gauge of their ``/metrics``).
    Bottom panel: desired and ready replicas. Both share the time axis (seconds since run
    start); the spike window is shaded, each scale step is a vertical line (solid up,
    dotted down), each scheduled action a labelled dash-dot line and each fault a grey band
    with its name; lag older than ``max_lag_age_s`` is a gap in its line.

    Args:
        timeline: the timeline table (one row per 1 s step; see ``analyze.tables``).
        path: the PNG to write (parents created).
        spike: ``(start_s, end_s)`` of the spike, or None.
        steps: scale steps to mark; default ``scale_steps(timeline)``.
        actions: ``(t_s, label)`` of each scheduled action run (e.g. ``increase_partitions
            to=16``), seconds since run start.
        faults: ``(start_s, duration_s, name)`` of each fault (None duration: to the end),
            each a shaded band with its name.
        max_lag_age_s: lag whose ``total_lag_age_s`` is above this (or missing) is drawn as a
            gap; None draws every value (a timeline without sample ages).
        title: figure title.

    Returns:
        ``path`` as a Path.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    steps = scale_steps(timeline) if steps is None else steps
    fig = Figure(figsize=(12, 7), dpi=110)
    lag_ax, rep_ax = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    _plot_lag_and_rate(lag_ax, timeline, max_lag_age_s)
    _plot_replicas(rep_ax, timeline)
    for ax in (lag_ax, rep_ax):
        _mark(ax, spike, steps)
        ax.grid(alpha=0.3)
    _mark_actions((lag_ax, rep_ax), actions)
    end_s = float(timeline["t_s"].iloc[-1]) + 1.0 if len(timeline) else 0.0
    _mark_faults((lag_ax, rep_ax), faults, end_s)
    rep_ax.legend(ncols=len(rep_ax.get_legend_handles_labels()[0]), **_LEGEND_ABOVE)
    rep_ax.set_xlabel("time since run start (s)")
    fig.suptitle(title)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out
