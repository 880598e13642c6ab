"""``lagscale twin hold``: a pre-registered prediction against the run it predicted.

:func:`register` adds ``hold`` to the ``twin`` command group (:mod:`.cli`)::

    lagscale twin hold PREDICTION.json RUN_DIR [--markdown]

Prints, per figure of the prediction (:data:`pytest_lagscale.twin.prediction.FIGURES`), the
predicted median and 5-95 % band, the measured value, the error and whether the measured value
lies in the band (:func:`.preregistered.hold`); ``--markdown`` prints the Markdown table that
docs/twin.md and the run's directory under docs/runs/ carry.

Exit codes: 0 compared (the table is a report, not a verdict); 2 bad input (a missing file,
a run of other inputs than the prediction's), one ``error:`` line per problem.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError


def hold_command(
    prediction: Path = typer.Argument(..., metavar="PREDICTION.json",
                                      help="The JSON of lagscale simulate --prediction"),
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="The finished run's directory"),
    as_markdown: bool = typer.Option(False, "--markdown", help="Print a Markdown table"),
) -> None:
    """Hold a pre-registered twin prediction against the run it predicted."""
    from rich.console import Console
    from rich.table import Table

    from .preregistered import HEADER, cells, hold, markdown

    problems = [f"{name}: {str(path)!r} does not exist" for name, path in
                (("PREDICTION.json", prediction), ("RUN_DIR", run_dir)) if not path.exists()]
    if problems:
        raise fail_usage(ConfigError(problems))
    try:
        rows = hold(prediction, run_dir)
    except ConfigError as exc:
        raise fail_usage(exc) from None
    if as_markdown:
        typer.echo(markdown(rows))
        return
    table = Table(title=f"{run_dir.name}: predicted ({prediction.name}) vs measured")
    for column in HEADER:
        table.add_column(column, justify="left" if column in ("figure", "unit") else "right")
    for row in cells(rows):
        table.add_row(*row)
    Console(width=max(Console().width, 110)).print(table)


def register(twin_app: typer.Typer) -> None:
    """Add ``hold`` to the ``lagscale twin`` command group ``twin_app``."""
    twin_app.command("hold")(hold_command)


__all__ = ["hold_command", "register"]
