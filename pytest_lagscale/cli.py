"""The ``lagscale`` command line (typer).

Sub-commands are thin: they parse and validate options, then call the library. Bad input exits
with code 2 and one line per problem, before anything is started.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import typer

from .contract.errors import ConfigError

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
    run_id: Optional[str] = typer.Argument(
        None, help="Run id (LAGSCALE_RUN_ID) whose processes to reap. Default: every run whose "
        "harness is gone"),
) -> None:
    """Kill every process group a crashed harness run left behind.

    RUN_ID: that run's processes, whether its harness lives or not.

    No argument: every run whose harness process is gone (dead, or its pid reused).

    A reaped run's pid directory is deleted.
    """
    from .process import known_run, reap_gone_runs, reap_run

    if run_id is not None:
        try:
            if not known_run(run_id):
                raise ConfigError(f"run id {run_id!r}: no pid directory and no live process "
                                  "carries it (already reaped, or never run here); `lagscale "
                                  "cleanup` without an argument reaps every gone run")
        except ConfigError as exc:
            raise fail_usage(exc) from None
        typer.echo(f"reaped {_groups(reap_run(run_id))}")
        return
    runs = reap_gone_runs()
    for rid, pgids in runs.items():
        typer.echo(f"run {rid}: harness gone; reaped {_groups(pgids)}; pid directory removed")
    typer.echo(f"{len(runs)} run(s) with a gone harness reaped")


def _groups(pgids: list[int]) -> str:
    return f"{len(pgids)} process group(s): {' '.join(map(str, pgids)) or '-'}"


# Sub-commands living next to the code they drive register themselves here.
from .load import cli as _load_cli  # noqa: E402,F401  (registers `produce`)
from .experiment import cli as _experiment_cli  # noqa: E402,F401  (registers `run`)
from .report import cli as _report_cli  # noqa: E402,F401  (registers `compare`)
from .report import findings_cli as _findings_cli  # noqa: E402,F401  (registers `report`)
from .report import baseline_cli as _baseline_cli  # noqa: E402,F401  (registers `baseline`)
from .twin import cli as _twin_cli  # noqa: E402,F401  (registers `simulate`)
from .twin import tune_cli as _tune_cli  # noqa: E402,F401  (registers `tune`)
from .scalers.persistent_lag import cli as _scaler_cli  # noqa: E402,F401  (registers `scaler serve`)
from .kube import cli as _kube_cli  # noqa: E402,F401  (registers `kube up`)


def main() -> None:
    """Console-script entry point.

    SIGTERM and SIGHUP (the terminal running ``lagscale`` was closed) unwind like Ctrl-C: the
    main thread raises KeyboardInterrupt, so every context manager stops what it started, and
    :func:`~pytest_lagscale.process.stop_all` stops whatever is left.

    Python's faulthandler is on (unless ``-X faulthandler`` or ``PYTHONFAULTHANDLER`` already
    turned it on): a native crash of ``lagscale`` itself (librdkafka's threads, pyarrow) prints
    the Python stack of every thread to stderr before the process dies.
    """
    import faulthandler
    import signal

    if not faulthandler.is_enabled():
        faulthandler.enable()

    from .process import stop_all

    def _interrupt(signum: int, frame: object) -> None:
        if signum == signal.SIGHUP:
            _detach_terminal()  # writes to a hung-up terminal fail (EIO) and would cut cleanup
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    try:
        app()
    except KeyboardInterrupt:
        stop_all()
        sys.exit(130)


def _detach_terminal() -> None:
    """Point stdout and stderr at /dev/null where they are a terminal (files and pipes keep
    their output)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            if os.isatty(fd):
                os.dup2(devnull, fd)
    finally:
        os.close(devnull)


if __name__ == "__main__":  # ``python -m pytest_lagscale.cli`` (how a run starts its own scaler)
    from pytest_lagscale.cli import main as _main  # the imported module: its app has the sub-commands

    _main()
