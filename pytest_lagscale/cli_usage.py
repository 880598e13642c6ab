"""What every ``lagscale`` sub-command shares: the usage exit code and how bad input is reported.

The sub-command modules (``load/cli.py``, ``experiment/cli.py``, ...) import this module, never
:mod:`pytest_lagscale.cli`, which imports them to call their ``register(app)``.
"""

from __future__ import annotations

import typer

from .contract.errors import ConfigError

#: The exit code of bad input (click's own for a usage error).
EXIT_USAGE = 2


def fail_usage(exc: ConfigError) -> "typer.Exit":
    """Print a ConfigError's problems to stderr, one ``error: <problem>`` line each, and return
    the exit-2 exception to raise."""
    for line in exc.problems:
        typer.echo(f"error: {line}", err=True)
    return typer.Exit(EXIT_USAGE)


__all__ = ["EXIT_USAGE", "fail_usage"]
