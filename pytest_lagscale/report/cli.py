"""``lagscale compare BASELINE CURRENT``: the CI gate on two benchmark JSON files.

:mod:`pytest_lagscale.cli` adds it to ``lagscale`` with :func:`register`. Either argument may
be a run directory holding ``benchmark.json`` (:func:`.benchjson.read_run_document`).

Exit codes: 0 no metric regressed, 1 at least one regressed past its tolerance (the table and
one line per regression are printed), 2 bad input (a missing file, not JSON, not a benchmark
document), with one ``error:`` line naming the argument.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from ..cli_usage import EXIT_USAGE
from ..contract.errors import ConfigError

EXIT_REGRESSION = 1
WIDE = 120


def compare(
    baseline: Path = typer.Argument(..., metavar="BASELINE",
                                    help="Baseline benchmark JSON (or a run directory)"),
    current: Path = typer.Argument(..., metavar="CURRENT",
                                   help="Benchmark JSON of the run to check (or its run "
                                        "directory)"),
) -> None:
    """Compare a run with a baseline metric by metric; exit 1 on a regression."""
    from rich.console import Console

    from .benchjson import read_run_document
    from .compare import compare_documents, render_comparison

    problems: list[str] = []
    docs = []
    for name, path in (("BASELINE", baseline), ("CURRENT", current)):
        try:
            docs.append(read_run_document(path, name))
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        for line in problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(EXIT_USAGE)
    comparison = compare_documents(docs[0], docs[1])
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = WIDE  # a log: keep metric names whole rather than fit 80 columns
    # The heading holds two paths: print it whole on its own line, not as the table's title
    # (a title wraps to the table's width and splits the verdict from the paths).
    console.print(f"{current} vs {baseline}: {comparison.verdict}", markup=False, soft_wrap=True)
    console.print(render_comparison(comparison, title=None))
    for note in comparison.warnings:
        console.print(f"[yellow]warning: {note}[/]", soft_wrap=True)
    if comparison.verdict == "fail":
        console.print(f"[bold red]{len(comparison.failures)} metric(s) regressed past the "
                      "baseline:[/]")
        for row in comparison.failures:
            console.print(f"  {row.reason}", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_REGRESSION)
    console.print("[green]no regression against the baseline[/]")


def register(app: typer.Typer) -> None:
    """Add ``lagscale compare`` to ``app``."""
    app.command()(compare)
