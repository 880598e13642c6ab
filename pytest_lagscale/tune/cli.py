"""``lagscale tune``: search a ScaledObject's fields in the twin for the cheapest policy that
meets every SLO.

:mod:`pytest_lagscale.cli` adds it to ``lagscale`` with :func:`register`. Prints the Pareto
fronts (median replica-seconds vs the 95th-percentile peak lag and drain time) as one table,
then the best point, and writes the tuned manifest and ``tune.json`` (:mod:`.output`). ``--confirm`` then runs the tuned manifest once for real,
as ``lagscale run`` does, and prints predicted vs measured.

Exit codes: 0 a point meets every SLO (and, with ``--confirm``, the real run meets them too);
1 no point meets every SLO (``tune.json`` is still written), or the confirming run missed one
or failed; 2 bad input, one ``error:`` line per problem, nothing simulated or written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError, LagscaleError
from .search import DEFAULT_BUDGET, MAX_DRAWS

DEFAULT_OUT = Path("lagscale-runs")
EXIT_MISSED = 1
SLO_HELP = ("An objective held at the draws' 95th percentile, e.g. drain_time_s<=60 "
            "(repeatable; metrics of analyze.METRICS)")
SPACE_HELP = ("Fields to search: KEY=LO..HI[:N], KEY=A|B|C or KEY=V (repeatable; lagThreshold "
              "log-spaced). Keys: lagThreshold, pollingInterval, cooldownPeriod, "
              "minReplicaCount, maxReplicaCount, scaleUp|scaleDown.stabilizationWindowSeconds, "
              "scaleUp|scaleDown.policies[I].value|periodSeconds")


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def front_table(result: Any) -> Any:
    """A rich table of the points on either Pareto front, by ascending replica-seconds: the
    tuned values, median replica-seconds, p95 peak lag and drain, SLO verdict, front(s)."""
    from rich.table import Table

    on = {i: [m for m, front in result.fronts.items() if i in front]
          for front in result.fronts.values() for i in front}
    table = Table(title="Pareto fronts: median replica-seconds vs p95 peak lag / p95 drain "
                        f"({len(result.points)} points, "
                        f"{result.request.draws} draws each)")
    keys = [a.key for a in result.request.axes]
    for column in ("#", *keys, "replica-s", "lag p95", "drain p95 s", "SLOs", "front"):
        table.add_column(column, justify="left" if column in ("SLOs", "front") else "right",
                         no_wrap=column not in keys)
    points = sorted((result.points[i] for i in on),
                    key=lambda p: (p.median("replica_seconds") or 0.0, p.index))
    for point in points:
        best = result.best is not None and point.index == result.best.index
        fronts = "+".join("lag" if m == "peak_lag_records" else "drain" for m in on[point.index])
        table.add_row(f"{point.index}{' *' if best else ''}",
                      *(str(point.values[k]) for k in keys),
                      _number(point.median("replica_seconds"), 0),
                      _number(point.p95("peak_lag_records"), 0),
                      _number(point.p95("drain_time_s")),
                      "met" if point.feasible else "missed", fronts)
    return table


def _slo_text(point: Any) -> str:
    return "; ".join(f"{text} (p95 {_number(bound)}: {'met' if ok else 'missed'})"
                     for text, (bound, ok) in point.slos.items())


def print_best(result: Any, console: Any) -> None:
    """The best point (or the nearest miss) in a few lines."""
    from .space import describe

    invalid = sum(1 for p in result.points if p.problems)
    feasible = sum(1 for p in result.points if p.feasible)
    console.print(f"{len(result.points)} points ({invalid} invalid combinations), {feasible} "
                  f"meet every SLO; search took {_number(result.elapsed_s)} s", highlight=False)
    point = result.best
    if point is None:
        miss = result.nearest_miss()
        console.print("[bold red]no point meets every SLO[/]" + (
            f"; nearest: #{miss.index} {describe(miss.values)}: {_slo_text(miss)}"
            if miss is not None else ""), highlight=False)
        return
    console.print(f"best: #{point.index} {describe(point.values)}: median replica-seconds "
                  f"{_number(point.median('replica_seconds'), 0)}, {_slo_text(point)}",
                  highlight=False)


def confirm_table(confirmation: Any) -> Any:
    """A rich table: metric, twin median, twin p95, measured."""
    from rich.table import Table

    table = Table(title="--confirm: twin prediction vs the real run")
    for column in ("metric", "twin median", "twin p95", "measured"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric, median, p95, measured in confirmation.rows:
        table.add_row(metric, _number(median), _number(p95), _number(measured))
    return table


def run_tune(options: Any, out: Path, confirm_run: bool, console: Any,
             runner: Callable[[Any], Any] | None = None) -> int:
    """The command without typer: prepare, search, print, write, confirm; returns the exit
    code (0 or 1; bad input raises the exit-2 ``typer.Exit``).

    Args:
        options: a :class:`~.prepare.TuneOptions`.
        out: parent of the output directory (and of the confirming run's).
        confirm_run: run the best point for real afterwards.
        console: a rich console for the tables.
        runner: the confirming run's runner (see :func:`.output.confirm`); default
            ``lagscale run``'s own (:func:`_run_one`).
    """
    from .output import write_outputs
    from .prepare import prepare
    from .search import tune

    problems = [] if not out.exists() or out.is_dir() else [
        f"--out: {str(out)!r} is not a directory; give a directory (created when absent)"]
    try:
        request = prepare(options)
    except ConfigError as exc:
        problems += exc.problems
    if problems:
        raise fail_usage(ConfigError(problems))
    result = tune(request, on_point=_progress(console), clock=time.monotonic)
    console.print(front_table(result))
    print_best(result, console)
    files = write_outputs(result, out)
    for name, path in (("tuned manifest", files.manifest), ("points", files.points_json)):
        if path is not None:
            console.print(f"{name}: {path}", highlight=False, soft_wrap=True)
    if result.best is None:
        if confirm_run:
            console.print("--confirm: skipped (no point meets every SLO)", highlight=False)
        return EXIT_MISSED
    if not confirm_run:
        return 0
    return _confirm(result, files, out, console, runner)


def _confirm(result: Any, files: Any, out: Path, console: Any,
             runner: Callable[[Any], Any] | None) -> int:
    from .output import add_confirmation, confirm

    try:
        confirmation = confirm(result, files.manifest, out, runner or _run_one)
    except LagscaleError as exc:
        typer.echo(f"error: --confirm: {exc}", err=True)
        return EXIT_MISSED
    add_confirmation(files, confirmation)
    console.print(confirm_table(confirmation))
    for text, value, met in confirmation.slos:
        console.print(f"SLO {text}: {'met' if met else '[bold red]missed[/]'} (measured "
                      f"{_number(value)})", highlight=False)
    return 0 if confirmation.met else EXIT_MISSED


def _run_one(plan: Any) -> Any:
    """``lagscale run``'s own runner (live progress line, summary table) on a rich console."""
    from rich.console import Console

    from ..experiment.cli import _run_one as run_one

    return run_one(plan, Console())


def _progress(console: Any) -> Callable[[Any, int], None]:
    """A per-point progress line on stderr (every 10th point and the last)."""
    def show(point: Any, total: int) -> None:
        done = point.index + 1
        if done % 10 == 0 or done == total:
            typer.echo(f"tune: {done}/{total} points simulated", err=True)
    return show


def tune_command(
    profile: str = typer.Option(..., "--profile", metavar="NAME|PATH",
                                help="Traffic profile: a bundled name or a YAML path"),
    policy: str = typer.Option(..., "--policy", metavar="NAME|PATH",
                               help="The ScaledObject to tune: a bundled name or a YAML path"),
    slo: list[str] = typer.Option([], "--slo", metavar="METRIC<=VALUE", help=SLO_HELP),
    space: list[str] = typer.Option([], "--space", metavar="KEY=LO..HI[:N],...",
                                    help=SPACE_HELP),
    draws: int = typer.Option(30, "--draws", metavar="N",
                              help=f"Twin draws per point, 1..{MAX_DRAWS}. Default: 30"),
    budget: int = typer.Option(DEFAULT_BUDGET, "--budget", metavar="N",
                               help=f"Most grid points. Default: {DEFAULT_BUDGET}"),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the draws. Default: 0"),
    partitions: Optional[int] = typer.Option(None, "--partitions", metavar="N",
                                             help="Overrides the profile's partition count. "
                                                  "Default: the profile's"),
    engine: Optional[str] = typer.Option(None, "--engine", metavar="spark|arrow",
                                         help="Overrides the Deployment's engine. Default: "
                                              "the Deployment's"),
    out: Path = typer.Option(DEFAULT_OUT, "--out", metavar="DIR",
                             help=f"Parent of the output directory. Default: {DEFAULT_OUT}"),
    confirm_run: bool = typer.Option(False, "--confirm",
                                     help="Run the best policy once for real (as lagscale run) "
                                          "and print predicted vs measured"),
) -> None:
    """Search a ScaledObject's fields in the twin: least replica-seconds meeting every SLO."""
    from rich.console import Console

    from .prepare import TuneOptions

    options = TuneOptions(profile=profile, policy=policy, space=tuple(space), slos=tuple(slo),
                          partitions=partitions, engine=engine, draws=draws, seed=seed,
                          budget=budget)
    code = run_tune(options, out, confirm_run, Console())
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``lagscale tune`` to ``app``."""
    app.command("tune")(tune_command)


__all__ = ["confirm_table", "front_table", "print_best", "register", "run_tune", "tune_command"]
