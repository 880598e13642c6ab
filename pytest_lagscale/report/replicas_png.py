"""The per-replica PNG: each replica's assigned partitions and records/s over time.

The lab's criterion for over-scaling past P is a per-pod picture: which replicas own
partitions and which do work. Top panel: partitions owned by each replica (a step line per
replica); bottom panel: each replica's records/s. Replicas above P (surplus) are dashed, so an
idle surplus replica is a dashed line at 0 in both panels.

matplotlib (the ``plot`` extra) is imported inside :func:`write_replicas_png`, with the Agg
backend, so importing this module (or the plugin) never loads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

#: Legend columns grow with the replica count (48 replicas at full scale).
_LEGEND_ROWS = 8
#: Replicas owning the same count would hide each other: their lines are spread over this
#: much of the partition axis (a partition count stays readable to the nearest integer).
_OFFSET = 0.16


def _style(replica_id: str, index: int, surplus: set[str]) -> dict:
    import matplotlib

    cmap = matplotlib.colormaps["tab20" if index >= 10 else "tab10"]
    return {"color": cmap(index % cmap.N), "linestyle": "--" if replica_id in surplus else "-",
            "linewidth": 1.2}


def _plot_ownership(ax, owners: pd.DataFrame, order: list[str], surplus: set[str],
                    end_s: float) -> None:
    for index, replica in enumerate(order):
        rows = owners[owners["replica_id"] == replica]
        if not len(rows):
            ax.plot([], [], label=replica, **_style(replica, index, surplus))
            continue
        offset = _OFFSET * (index / max(1, len(order) - 1) - 0.5)
        times = [*rows["t_s"], max(end_s, float(rows["t_s"].iloc[-1]))]
        counts = [c + offset for c in [*rows["partitions"], int(rows["partitions"].iloc[-1])]]
        ax.step(times, counts, where="post", label=replica, **_style(replica, index, surplus))
    ax.set_ylabel(f"assigned partitions (lines {_OFFSET:g} apart at most)")
    ax.set_ylim(bottom=-0.2)


def _plot_rates(ax, rates: pd.DataFrame, order: list[str], surplus: set[str]) -> None:
    for index, replica in enumerate(order):
        values = rates[replica] if replica in rates.columns else None
        if values is None:
            ax.plot([], [], **_style(replica, index, surplus))
            continue
        ax.plot(rates.index, values, **_style(replica, index, surplus))
    ax.set_ylabel("records/s per replica")
    ax.set_ylim(bottom=0)


def _decorate(own_ax, rate_ax, partitions: int | None, spike: tuple[float, float] | None,
              replicas: int) -> None:
    if partitions is not None:
        own_ax.axhline(partitions, color="black", linestyle=":", linewidth=0.9,
                       label=f"P = {partitions}")
    for ax in (own_ax, rate_ax):
        if spike is not None:
            ax.axvspan(spike[0], spike[1], color="tab:red", alpha=0.08)
        ax.grid(alpha=0.3)
    if own_ax.get_legend_handles_labels()[0]:
        own_ax.legend(loc="upper left", fontsize=7,
                      ncol=max(1, -(-(replicas + 1) // _LEGEND_ROWS)))
    rate_ax.set_xlabel("time since run start (s)")


def write_replicas_png(owners: pd.DataFrame, rates: pd.DataFrame, path: str | Path, *,
                       replicas: Iterable[str], surplus: Iterable[str] = (),
                       partitions: int | None = None,
                       spike: tuple[float, float] | None = None,
                       title: str = "per-replica partitions and records/s") -> Path:
    """Draw the per-replica panels and write them as a PNG.

    Args:
        owners: :func:`pytest_lagscale.analyze.replicas.ownership` (``t_s``, ``replica_id``,
            ``partitions``: owned after each change).
        rates: :func:`pytest_lagscale.analyze.completions.replica_rates` (index ``t_s``, one
            column of records/s per replica).
        path: the PNG to write (parents created).
        replicas: every replica id, in the order of the legend (creation order).
        surplus: the replicas above P (drawn dashed).
        partitions: P, drawn as a dotted line on the ownership panel; None: not drawn.
        spike: ``(start_s, end_s)`` of the spike (shaded), or None.
        title: figure title.

    Returns:
        ``path`` as a Path.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    order, extra = list(replicas), set(surplus)
    ends = [float(owners["t_s"].max()) if len(owners) else 0.0,
            float(rates.index.max()) if len(rates) else 0.0]
    fig = Figure(figsize=(12, 7), dpi=110)
    own_ax, rate_ax = fig.subplots(2, 1, sharex=True)
    _plot_ownership(own_ax, owners, order, extra, max(ends))
    _plot_rates(rate_ax, rates, order, extra)
    _decorate(own_ax, rate_ax, partitions, spike, len(order))
    fig.suptitle(f"{title} (dashed: replicas above P)" if extra else title)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    return out
