"""``lagscale compare BASELINE CURRENT``: the CI gate on two benchmark JSON files.

Registers itself on :data:`pytest_lagscale.cli.app` (``cli.py`` imports this module after
defining ``app``). Either argument may be a run directory holding ``benchmark.json``.

Exit codes: 0 no metric regressed, 1 at least one regressed past its tolerance (the table and
one line per regression are printed), 2 bad input (a missing file, not JSON, not a benchmark
document), with one ``error:`` line naming the argument.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from ..cli import EXIT_USAGE, app
from ..contract.errors import ConfigError

EXIT_REGRESSION = 1
WIDE = 120


def load_argument(name: str, path: Path) -> dict[str, Any]:
    """Load the benchmark document an argument names (a file, or a run directory).

    Raises:
        ConfigError: the path is missing, unreadable, or not a benchmark document; the message
            starts with ``name``.
    """
    from . import benchjson

    file = path / "benchmark.json" if path.is_dir() else path
    if not file.is_file():
        what = "has no benchmark.json" if path.is_dir() else "does not exist"
        raise ConfigError(f"{name}: {str(path)!r} {what}; give a benchmark JSON file or a run "
                          "directory")
    try:
        return benchjson.load(file)
    except OSError as exc:
        raise ConfigError(f"{name}: {str(file)!r} cannot be read ({exc.strerror}); check its "
                          "permissions") from exc
    except ConfigError as exc:
        raise ConfigError([f"{name}: {line}" for line in exc.problems]) from exc


@app.command()
def compare(
    baseline: Path = typer.Argument(..., metavar="BASELINE",
                                    help="Baseline benchmark JSON (or a run directory)"),
    current: Path = typer.Argument(..., metavar="CURRENT",
                                   help="Benchmark JSON of the run to check (or its run "
                                        "directory)"),
) -> None:
    """Compare a run with a baseline metric by metric; exit 1 on a regression."""
    from rich.console import Console

    from .compare import compare_documents, render_comparison

    problems: list[str] = []
    docs = []
    for name, path in (("BASELINE", baseline), ("CURRENT", current)):
        try:
            docs.append(load_argument(name, path))
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
