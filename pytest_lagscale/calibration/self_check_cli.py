"""``lagscale twin self-check``: the fidelity targets' base rate, the twin as its own truth.

:func:`register` adds ``self-check`` to the ``twin`` command group (:mod:`.cli`)::

    lagscale twin self-check RUN_DIR... [--pairs 40] [--draws 30] [--seed 0]
                                        [--truth-seed 7] [--no-machine-probe]
                                        [--runs-per-set 1] [--workers N]

Give the runs one fidelity benchmark judges together (a CI gate's spike-ci and bursty-ci
hysteresis runs): their plans are simulated ``--pairs`` times as "real" runs and each set is
predicted and assessed as the benchmark does (:func:`.self_check.self_check`);
``--runs-per-set K`` assesses K "real" runs of each together (the benchmark's median over the
committed held-out pairs and the gate's own: K = their count + 1). Prints, per
assertion of :func:`.fidelity.assess`, the share of the sets that met it, then the shares
meeting every figure target, every band target and both (the benchmark's pass).

Exit codes: 0 computed (a report, not a verdict); 2 bad input (a missing run, a run the twin
does not model, an option out of range), one ``error:`` line per problem, nothing simulated.
"""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError
from .processes import default_workers


def self_check_command(
    runs: List[Path] = typer.Argument(..., metavar="RUN_DIR...",
                                      help="Run directories (or their benchmark.json)"),
    pairs: int = typer.Option(40, "--pairs", metavar="N",
                              help="Sets of twin draws taken as the real runs, in [1, 1000]. "
                                   "Default: 40"),
    draws: int = typer.Option(30, "--draws", metavar="N",
                              help="Draws per prediction, in [1, 1000]. Default: 30"),
    seed: int = typer.Option(0, "--seed", metavar="N",
                             help="The predictions' seed. Default: 0"),
    truth_seed: int = typer.Option(7, "--truth-seed", metavar="N",
                                   help="The real draws' seed (not --seed). Default: 7"),
    machine_probe: bool = typer.Option(
        True, "--machine-probe/--no-machine-probe",
        help="Predict each real draw given its machine probe, as the fidelity benchmark does. "
             "Default: on"),
    runs_per_set: int = typer.Option(
        1, "--runs-per-set", metavar="K",
        help="Real runs of each RUN_DIR assessed together per set (the median error over K "
             "runs of a label), in [1, 100]. Default: 1 (one CI gate)"),
    workers: int = typer.Option(
        default_workers(), "--workers", metavar="N",
        help="Processes the sets run on, in [1, 64]; the shares do not depend on it. "
             "Default: the cores, at most 4", show_default=False),
) -> None:
    """How often a twin that is exactly right meets the fidelity targets on these runs."""
    from rich.console import Console
    from rich.table import Table

    from .self_check import option_problems, self_check

    problems = [f"RUN_DIR: {str(run)!r} does not exist" for run in runs if not run.exists()]
    problems += [f"--{line.replace('_', '-')}" for line in
                 option_problems(pairs=pairs, draws=draws, seed=seed, truth_seed=truth_seed,
                                 runs_per_set=runs_per_set, workers=workers)]
    if problems:
        raise fail_usage(ConfigError(problems))
    try:
        result = self_check(runs, pairs=pairs, draws=draws, seed=seed, truth_seed=truth_seed,
                            machine_probe=machine_probe, runs_per_set=runs_per_set,
                            workers=workers)
    except ConfigError as exc:   # Unsupported included: it names the input
        raise fail_usage(exc) from None
    table = Table(title=f"The twin as its own truth: {result.pairs} sets x "
                        f"{result.runs_per_set}, {result.draws} draws, "
                        f"machine probe {'on' if result.machine_probe else 'off'}")
    table.add_column("assertion (fidelity.assess)")
    table.add_column("sets meeting it", justify="right")
    for name, share in result.per_assertion.items():
        table.add_row(name, f"{share:.0%}")
    console = Console(width=max(Console().width, 110))
    console.print(table)
    console.print(f"every figure target: {result.figure_targets_met:.0%}; every band target: "
                  f"{result.band_targets_met:.0%}; both (the benchmark passes): "
                  f"{result.all_targets_met:.0%}")


def register(twin_app: typer.Typer) -> None:
    """Add ``self-check`` to the ``lagscale twin`` command group ``twin_app``."""
    twin_app.command("self-check")(self_check_command)


__all__ = ["register", "self_check_command"]
