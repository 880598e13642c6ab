"""``lagscale run``: the main job — one experiment (or a lagThreshold sweep), analysed.

The command's options are :data:`pytest_lagscale.options.RUN_OPTIONS`, the same table the
pytest plugin registers (without the ``lagscale-`` prefix), turned into click options here. Bad
input exits 2 before anything starts; Ctrl-C, SIGTERM or SIGHUP stops every process of the run
(exit 130); a finished run prints the summary table, the run directory and its artifacts; a
regression against ``--baseline`` exits 1, and so does a run that missed ``--drain-slo`` (when
given: ``drain_time_s <= SLO`` is recorded as an assertion in its benchmark JSON).
"""

from __future__ import annotations

import argparse
import inspect
from typing import Any, Callable, Optional

import typer

from ..options import RUN_OPTIONS, RunOption, check_run_options
from .settings import RunSettings

EXIT_USAGE = 2
EXIT_REGRESSION = 1


def _parser(option: RunOption) -> Callable[[str], Any]:
    """The option's own parser; its message becomes click's "Invalid value" error (exit 2)."""
    def parse(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return option.parse(value)
        except argparse.ArgumentTypeError as exc:
            raise typer.BadParameter(str(exc)) from None
    return parse


def _parameter(option: RunOption) -> inspect.Parameter:
    """One run option as a typer parameter of ``run`` (keyword-only, named by its dest)."""
    if option.negatable:
        info = typer.Option(option.default, f"{option.cli_flag}/--no-{option.flag}",
                            help=option.help, show_default=False)
        annotation: Any = bool
    else:
        metavar = option.metavar or ("[" + "|".join(option.choices or ()) + "]")
        info = typer.Option(None if option.multiple else option.default, option.cli_flag,
                            help=option.help, metavar=metavar, parser=_parser(option),
                            show_default=False)
        annotation = Optional[list[str]] if option.multiple else Optional[str]
    return inspect.Parameter(option.dest, inspect.Parameter.KEYWORD_ONLY, default=info,
                             annotation=annotation)


def _run(**values: Any) -> None:
    """Run a traffic profile against an autoscaled consumer group and analyse it.

    Leaves benchmark.json, timeline.png, replicas.png, summary.md and the raw tables in the run directory.
    """
    from rich.console import Console

    from ..contract.errors import ConfigError, LagscaleError
    from .plan import plan_run

    dry_run = values.pop("dry_run", False)
    problems = check_run_options(values)
    thresholds = values.get("lag_thresholds") or (None,)
    plans = []
    if not problems:
        try:
            plans = [plan_run(RunSettings.from_options(values, lag_threshold=lt))
                     for lt in thresholds]  # every input problem, before anything starts
        except ConfigError as exc:
            problems = exc.problems
    if not problems and values.get("kafka") == "external":
        from ..contract.errors import BrokerError
        from ..kafka.external import probe

        try:  # the cluster answers, before any run directory or process exists
            probe(values["kafka_bootstrap"], dict(values.get("kafka_config") or ()))
        except BrokerError as exc:
            problems = [str(exc)]
    if problems:
        for line in problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(EXIT_USAGE)
    console = Console()
    if dry_run:
        from .plan import describe_plan

        for plan in plans:
            for line in describe_plan(plan):
                console.print(line, highlight=False, soft_wrap=True)
        console.print(f"dry run: {len(plans)} run(s) planned, nothing started", highlight=False)
        return
    regressed = unsound = False
    for plan in plans:
        try:
            result = _run_one(plan, console)
        except LagscaleError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        for line in result.problems:  # a run that did not settle or could not see its lag
            typer.echo(f"error: run {result.settings.label()}: {line}", err=True)
        unsound |= bool(result.problems)
        regressed |= _compare(result, values.get("lagscale_baseline"), console)
        regressed |= _check_drain_slo(result, values.get("drain_slo_s"), console)
    if unsound:
        raise typer.Exit(1)
    if regressed:
        raise typer.Exit(EXIT_REGRESSION)


def _run_one(plan: Any, console: Any) -> Any:
    """One planned run with the live progress line; prints its summary."""
    from rich.console import Console

    from ..process import run_id
    from ..report.summary import measurements_table
    from .progress import RunProgress
    from .runner import run_plan

    with RunProgress(Console(stderr=True)) as progress:
        def announce(run_dir: Any) -> None:
            # Through the progress display's own console: rich prints it above the live line.
            rid = run_id()
            progress.console.print(f"run directory: {run_dir}", highlight=False, soft_wrap=True)
            progress.console.print(f"run id: {rid} (`lagscale cleanup {rid}` reaps its processes "
                                   "if the harness dies)", highlight=False, soft_wrap=True)

        result = run_plan(plan, progress=progress, on_run_dir=announce)
    console.print(measurements_table(result.measurements,
                                     title=f"lagscale run {result.title}"))
    rec = result.reconciliation
    if rec is not None:
        console.print(f"reconciliation (Spark): produced {rec.produced_total:,}, lost "
                      f"{rec.lost_total:,}, duplicated {rec.duplicated_total:,}",
                      highlight=False)
    for name in ("benchmark_json", "timeline_png", "replicas_png", "summary_md"):
        if result.artifacts.get(name):
            console.print(f"{name}: {result.artifacts[name]}", highlight=False, soft_wrap=True)
    return result


def _check_drain_slo(result: Any, drain_slo_s: float | None, console: Any) -> bool:
    """With ``--drain-slo``: record ``drain_time_s <= SLO`` in the run's benchmark JSON and
    print the verdict; True = missed (no drain measured counts as a miss)."""
    if drain_slo_s is None:
        return False
    drain = result.metrics.get("drain_time_s")
    met = drain is not None and drain <= drain_slo_s
    result.check(f"drain_time_s <= {drain_slo_s:g}", drain, drain_slo_s, met)
    measured = "no drain measured" if drain is None else f"drain {drain:.1f} s"
    console.print(f"drain SLO {drain_slo_s:g} s: {'met' if met else '[bold red]missed[/]'} "
                  f"({measured})", highlight=False)
    return not met


def _compare(result: Any, baseline: str | None, console: Any) -> bool:
    """Compare with ``--baseline`` (file, or directory of ``<label>.json``); True = regressed."""
    if not baseline:
        return False
    from pathlib import Path

    from ..report import benchjson
    from ..report.compare import compare_documents, render_comparison

    path = Path(baseline)
    if path.is_dir():
        path = path / f"{result.settings.label()}.json"
    if not path.is_file():
        console.print(f"baseline: {path} does not exist; nothing compared", highlight=False)
        return False
    comparison = compare_documents(benchjson.load(path), result.document())
    console.print(render_comparison(comparison, title=f"{result.settings.label()} vs {path}"))
    return comparison.verdict == "fail"


_DRY_RUN = inspect.Parameter(
    "dry_run", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
    default=typer.Option(False, "--dry-run", help="Resolve and check every input, print the "
                         "plan (profile, policy, Deployment, platform, engine, scale, actions, "
                         "expected duration) and exit 0 without starting anything."))
_run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [_parameter(o) for o in RUN_OPTIONS] + [_DRY_RUN])


def register(app: typer.Typer) -> None:
    """Add ``lagscale run`` to ``app``."""
    app.command("run", short_help="Run a profile against an autoscaled consumer group and "
                "analyse it.")(_run)
