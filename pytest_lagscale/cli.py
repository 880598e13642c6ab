"""The ``lagscale`` command line (typer).

Sub-commands are thin: they parse and validate options, then call the library. Bad input exits
with code 2 and one line per problem, before anything is started (:mod:`.cli_usage`).

Each sub-command lives beside the code it drives and exposes ``register(app)``;
:data:`SUB_COMMANDS` lists them in the order ``lagscale --help`` shows them, and this module
calls each once on :data:`app`. A new sub-command: write ``register(app: typer.Typer) -> None``
in its package's ``cli.py`` and add the module here.
"""

from __future__ import annotations

import logging
import os
import sys
from types import ModuleType
from typing import Any, Optional

import typer

from .calibration import cli as calibration_cli
from .cli_usage import fail_usage
from .contract.errors import ConfigError
from .experiment import cli as experiment_cli
from .kube import cli as kube_cli
from .load import cli as load_cli
from .report import baseline_cli, findings_cli
from .report import cli as report_cli
from .scalers.persistent_lag import cli as scaler_cli
from .tune import cli as tune_cli
from .twin import cli as twin_cli

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Prove how a Kafka consumer group behaves when autoscaled on consumer lag.",
)


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
    from .kube.kubelet_node import node_state_runs, reap_state
    from .process import known_run, pid_dir, reap_gone_runs, reap_run

    if run_id is not None:
        try:
            if not known_run(run_id) and run_id not in node_state_runs():
                raise ConfigError(f"run id {run_id!r}: no pid directory and no live process "
                                  "carries it (already reaped, or never run here); `lagscale "
                                  "cleanup` without an argument reaps every gone run")
        except ConfigError as exc:
            raise fail_usage(exc) from None
        typer.echo(f"reaped {_groups(reap_run(run_id))}")
        for line in reap_state(run_id):
            typer.echo(f"kubelet node: {line}")
        return
    runs = reap_gone_runs()
    for rid, pgids in runs.items():
        typer.echo(f"run {rid}: harness gone; reaped {_groups(pgids)}; pid directory removed")
    for rid in node_state_runs():
        if not pid_dir(rid).is_dir():  # its harness is gone (its pid directory reaped or removed)
            for line in reap_state(rid):
                typer.echo(f"run {rid}: kubelet node: {line}")
    typer.echo(f"{len(runs)} run(s) with a gone harness reaped")


def _groups(pgids: list[int]) -> str:
    return f"{len(pgids)} process group(s): {' '.join(map(str, pgids)) or '-'}"


#: The sub-command modules, each with ``register(app)``, in ``lagscale --help``'s order (commands
#: first, then the groups, each in this order).
SUB_COMMANDS: tuple[ModuleType, ...] = (
    load_cli,            # produce
    experiment_cli,      # run
    report_cli,          # compare
    findings_cli,        # report
    baseline_cli,        # baseline update, baseline regate
    twin_cli,            # simulate
    calibration_cli,     # twin calibrate, twin predict
    tune_cli,            # tune
    scaler_cli,          # scaler serve
    kube_cli,            # kube up
)


def register_all(target: typer.Typer) -> None:
    """Call ``register(target)`` of every module of :data:`SUB_COMMANDS`, in order."""
    for module in SUB_COMMANDS:
        module.register(target)


register_all(app)


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
    code: Any = 0
    try:
        app()
    except KeyboardInterrupt:
        stop_all()
        code = 130
    except SystemExit as exc:
        code = exc.code
    exit_process(code)


def exit_process(code: Any) -> None:
    """End the process with exit status ``code`` (an int or None, or a message as
    ``sys.exit`` takes it).

    A process that kept Kafka clients under a call in flight
    (:func:`pytest_lagscale.kafka.admin.clients_kept`: a broker died during a run) ends with
    ``os._exit`` once its processes are stopped and its output flushed, so that the
    interpreter's exit does not destroy those clients: rd_kafka_destroy with a request to the
    dead broker pending can wait forever (confluentinc/librdkafka#1640), and such a
    ``lagscale run`` was seen alive 60 s after it had written its last line.
    """
    admin = sys.modules.get("pytest_lagscale.kafka.admin")  # not imported: no client kept
    if admin is not None and admin.clients_kept() and (code is None or isinstance(code, int)):
        from .process import stop_all

        stop_all()
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or hung-up stream: nothing more to write
                pass
        os._exit(code or 0)
    sys.exit(code)


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
    main()
