"""Human-readable summaries of one run's measurements: ``summary.md`` and a rich table.

Both list every metric of :data:`pytest_lagscale.analyze.METRICS` (name, value, unit, which
way is better); ``summary.md`` then says how the oracle and ideal drain treated skew, gives the
scale steps (time, counts, the rebalance each caused with its dip, reason, recovery, cost,
duration and partitions stopped), the scale-out (one row per replica started after the spike
start, with the burst's machine load), then the assertions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..analyze.measure import METRICS, Measurements
from ..analyze.scale_out import ScaleOut
from .benchjson import Assertion


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def measurement_rows(m: Measurements) -> list[tuple[str, str, str, str]]:
    """``(metric, value, unit, better)`` strings, one per metric of ``METRICS``."""
    return [(name, _fmt(value), METRICS[name][0], METRICS[name][1].split("_")[0])
            for name, value in m.flat().items()]


def summary_markdown(m: Measurements, assertions: Sequence[Assertion] = (),
                     title: str = "lagscale run",
                     experiment: Mapping[str, Any] | None = None) -> str:
    """The run's summary as markdown (the content of ``summary.md``); ``experiment`` is the
    experiment's own records (``RunResult.experiment``), rendered by :func:`experiment_lines`."""
    lines = [f"# {title}", ""]
    if m.reaction.reason:
        lines += [f"Reaction incomplete: {m.reaction.reason}", ""]
    lines += ["## Measurements", "", "| metric | value | unit | better |", "|---|---:|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in measurement_rows(m)]
    lines += ["", "## Ideal drain and oracle", "", *skew_lines(m)]
    lines += ["", "## Scale steps", "", *step_lines(m)]
    lines += ["", "## Scale-out", "", *scale_out_lines(m.scale_out)]
    if experiment:
        lines += ["", "## Experiment", "", *experiment_lines(experiment)]
    if assertions:
        lines += ["", "## Assertions", "", "| assertion | threshold | value | verdict |",
                  "|---|---:|---:|---|"]
        lines += [f"| {a.name} | {_fmt(a.threshold)} | {_fmt(a.value)} | {a.verdict} |"
                  for a in assertions]
    return "\n".join(lines) + "\n"


def skew_lines(m: Measurements) -> list[str]:
    """Markdown lines on the partitions' input shares and how the ideal drain and the oracle
    used them (the even-spread figures are in the metrics table, named ``even_spread_*``)."""
    if not m.shares:
        return ["Not measured."]
    hot = max(range(len(m.shares)), key=m.shares.__getitem__)
    lines = [(f"Shares ({m.shares_source}): hottest partition {hot} carries "
              f"{_percent(m.shares[hot])} of the input (P = {len(m.shares)}).")]
    if m.ideal is not None:
        estimate = ("exact from the store" if m.ideal.backlog_source == "store"
                    else "estimated as total backlog x share")
        lines.append(f"Ideal drain {_fmt(m.ideal.time_s)} s: slowest partition "
                     f"{m.ideal.slowest_partition} {_fmt(m.ideal.partition_bound_s)} s, group "
                     f"{_fmt(m.ideal.group_bound_s)} s; per-partition backlog {estimate}.")
    if m.oracle_capped_s:
        lines.append(f"Oracle capped at full replicas for {_fmt(m.oracle_capped_s)} s: the "
                     "hottest partition's input exceeded one replica's capacity, so no replica "
                     "count could keep up.")
    return lines


def step_lines(m: Measurements) -> list[str]:
    """Markdown lines of the scale-step table (seconds; ``-`` where not measured)."""
    if not m.steps:
        return ["No scale steps."]
    window = f" (rate window {_fmt(m.rate_window_s)} s)" if m.rate_window_s else ""
    lines = [f"Dip, recovery and cost over the 10 s after each step's rebalance{window}.", "",
             ("| t (s) | replicas | direction | reversal | rebalance at (s) | dip | reason "
              "| recovery (s) | cost (records) | rebalance duration (s) | partitions stopped |"),
             "|---:|---|---|---|---:|---:|---|---:|---:|---:|---:|"]
    lines += [f"| {s.t_s:g} | {s.replicas_before} -> {s.replicas_after} | {s.direction} "
              f"| {'yes' if s.reversal else 'no'} | {_fmt(s.rebalance_s)} | {_percent(s.dip)} "
              f"| {s.dip_reason or '-'} | {_fmt(s.recovery_s)} "
              f"| {_fmt(s.rebalance_cost_records)} | {_fmt(s.rebalance_duration_s)} "
              f"| {'-' if s.partitions_stopped is None else s.partitions_stopped} |"
              for s in m.steps]
    return lines


def scale_out_lines(burst: ScaleOut | None) -> list[str]:
    """Markdown lines of the scale-out: the burst in one sentence, then one table row per
    replica started after the spike start (seconds; ``-`` where an event is missing)."""
    if burst is None:
        return ["Not measured."]
    if not burst.replicas:
        return [burst.reason or "No replica started after the spike start."]
    lines = [f"Scale-out incomplete: {burst.reason}" if burst.reason else
             f"Burst: {burst.burst_replicas} replicas, {_fmt(burst.burst_start_s)} -> "
             f"{_fmt(burst.burst_end_s)} s after the spike start; load average (1m) max "
             f"{_fmt(burst.load_average_max)}, mean {_fmt(burst.load_average_mean)}; CPU busy "
             f"{_percent(burst.cpu_busy_mean)}; cold start median "
             f"{_fmt(burst.cold_start_median_s)} s, max {_fmt(burst.cold_start_max_s)} s.", "",
             "| replica | started (s) | actuation (s) | cold start (s) | engine startup (s) "
             "| join (s) | first fetch (s) | burst |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {r.replica_id} | {_fmt(r.started_s)} | {_fmt(r.actuation_s)} "
              f"| {_fmt(r.cold_start_s)} | {_fmt(r.engine_startup_s)} | {_fmt(r.join_s)} "
              f"| {_fmt(r.first_fetch_s)} | {'yes' if r.in_burst else 'no'} |"
              for r in burst.replicas]
    return lines


def _cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return _fmt(value)
    if isinstance(value, (list, tuple)) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, (dict, list, tuple)):
        return "(see benchmark.json)"
    return str(value).replace("|", "\\|")


def _flatten(record: Mapping[str, Any], prefix: str = "", depth: int = 3
             ) -> tuple[list[tuple[str, Any]], list[tuple[str, list[Mapping[str, Any]]]]]:
    """Scalars as ``(dotted key, value)``; lists of mappings apart, as tables."""
    scalars: list[tuple[str, Any]] = []
    tables: list[tuple[str, list[Mapping[str, Any]]]] = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and depth > 1:
            inner_scalars, inner_tables = _flatten(value, name + ".", depth - 1)
            scalars += inner_scalars
            tables += inner_tables
        elif (isinstance(value, (list, tuple)) and value
              and all(isinstance(v, Mapping) for v in value)):
            tables.append((name, list(value)))
        else:
            scalars.append((name, value))
    return scalars, tables


def experiment_lines(experiment: Mapping[str, Any], max_rows: int = 40) -> list[str]:
    """The experiment's records as markdown: per record a ``###`` heading, its scalars (nested
    mappings flattened to dotted keys, 3 levels) as a table, and each list of mappings as a
    table of its own (at most ``max_rows`` rows; the rest are in ``benchmark.json``)."""
    lines: list[str] = []
    for name, record in experiment.items():
        lines += [f"### {name}", ""]
        scalars, tables = _flatten(record if isinstance(record, Mapping) else {name: record})
        if scalars:
            lines += ["| figure | value |", "|---|---:|"]
            lines += [f"| {key} | {_cell(value)} |" for key, value in scalars]
            lines.append("")
        for key, rows in tables:
            columns = list(dict.fromkeys(c for row in rows for c in row))
            lines += [f"{key}:", "", "| " + " | ".join(columns) + " |",
                      "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |"
                      for row in rows[:max_rows]]
            if len(rows) > max_rows:
                lines.append(f"({len(rows) - max_rows} more rows in benchmark.json)")
            lines.append("")
    return lines


def write_summary(path: str | Path, m: Measurements, assertions: Sequence[Assertion] = (),
                  title: str = "lagscale run",
                  experiment: Mapping[str, Any] | None = None) -> Path:
    """Write :func:`summary_markdown` to ``path`` (parents created); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(summary_markdown(m, assertions, title, experiment))
    return out


def measurements_table(m: Measurements, title: str = "lagscale measurements") -> Any:
    """A ``rich.table.Table`` with columns metric, value, unit, better (one row per metric)."""
    from rich.table import Table

    table = Table(title=title)
    for column, justify in (("metric", "left"), ("value", "right"), ("unit", "left"),
                            ("better", "left")):
        table.add_column(column, justify=justify)
    for row in measurement_rows(m):
        table.add_row(*row)
    return table
