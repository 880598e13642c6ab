"""The ``lagscale`` command line (typer).

Sub-commands are thin: they parse and validate options, then call the library. Bad input exits
with code 2 and one line per problem, before anything is started.
"""

from __future__ import annotations

import sys

import typer

from .errors import ConfigError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Prove how a Kafka consumer group behaves when autoscaled on consumer lag.",
)

EXIT_USAGE = 2


def fail_usage(exc: ConfigError) -> "typer.Exit":
    """Print a ConfigError's problems to stderr and return the exit-2 exception to raise."""
    for line in exc.problems:
        typer.echo(f"error: {line}", err=True)
    return typer.Exit(EXIT_USAGE)


@app.command()
def cleanup(
    run_id: str = typer.Argument(..., help="Run id (LAGSCALE_RUN_ID) whose processes to reap"),
) -> None:
    """Kill every process group a crashed harness run left behind."""
    from .process import reap_run

    pgids = reap_run(run_id)
    typer.echo(f"reaped {len(pgids)} process group(s): {' '.join(map(str, pgids)) or '-'}")


# Sub-commands living next to the code they drive register themselves here.
from .load import cli as _load_cli  # noqa: E402,F401  (registers `produce`)
from .experiment import cli as _experiment_cli  # noqa: E402,F401  (registers `run`)
from .report import cli as _report_cli  # noqa: E402,F401  (registers `compare`)


def main() -> None:
    """Console-script entry point."""
    from .process import stop_all
    import signal

    def _on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        app()
    except KeyboardInterrupt:
        stop_all()
        sys.exit(130)
