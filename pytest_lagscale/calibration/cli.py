"""``lagscale twin calibrate``: write the twin's calibration from real runs.

:mod:`pytest_lagscale.cli` adds the ``twin`` command group to ``lagscale`` with
:func:`register`: ``calibrate`` (here), ``predict`` (:mod:`.predict_cli`), ``hold``
(:mod:`.hold_cli`) and ``self-check`` (:mod:`.self_check_cli`)::

    lagscale twin calibrate RUN_DIR... [--engine spark|arrow] [--out PATH] [--keep-sources DIR]

Each RUN_DIR is a run directory of ``lagscale run`` (``benchmark.json``, ``events.jsonl``,
``store/``) or a directory of them. The runs of ``--engine`` are read, the parameters extracted
(:mod:`.calibrate`), checked with the reader of the bundled files
(:func:`pytest_lagscale.twin.params.parse_calibration`) and written as YAML to ``--out``
(stdout when not given). With ``--keep-sources DIR`` each source run's facts are also written
to ``DIR/<run>/`` (:func:`.facts.keep_facts`: a few hundred kilobytes, no store), a run
directory this command reads again: the next calibration can use them with its own runs.

Exit codes: 0 written; 2 bad input, one ``error:`` line per problem, nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError
from . import hold_cli, predict_cli, self_check_cli


def calibration_text(paths: List[str], engine: str, keep_sources: Path | None = None) -> str:
    """The calibration YAML of ``engine`` from the runs under ``paths``; with
    ``keep_sources``, each source run's facts are written there once the calibration is good
    (:func:`.facts.keep_facts`).

    Raises:
        ConfigError: bad paths, unreadable runs, no run of the engine, a value without samples,
            a result the twin's reader rejects, or a ``keep_sources`` that cannot be written.
    """
    import yaml

    from .calibrate import calibrate, render, run_dirs
    from .facts import keep_facts, read_run
    from ..twin.params import ENGINES, parse_calibration

    problems, runs, dirs = [], [], []
    if engine not in ENGINES:
        problems.append(f"--engine: got {engine!r}, expected one of {', '.join(ENGINES)}; "
                        "pick one of them")
    try:
        dirs = run_dirs(paths)
    except ConfigError as exc:
        problems += exc.problems
    for path in dirs:
        try:
            runs.append(read_run(path))
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(problems)
    doc = calibrate(runs, engine)
    text = render(doc)
    parse_calibration(yaml.safe_load(text), source="<calibrated>")
    if keep_sources is not None:
        try:
            for facts in runs:
                if facts.name in doc["source_runs"]:
                    keep_facts(facts, keep_sources)
        except OSError as exc:
            raise ConfigError([f"--keep-sources: got {str(keep_sources)!r}, which cannot be "
                               f"written ({exc.strerror or exc}); give a writable "
                               "directory"]) from exc
    return text


def calibrate_command(
    run_dirs: List[str] = typer.Argument(..., metavar="RUN_DIR...",
                                         help="Run directories of lagscale run, or directories "
                                              "of them"),
    engine: str = typer.Option("spark", "--engine", metavar="spark|arrow",
                               help="The engine to calibrate (its runs are used). "
                                    "Default: spark"),
    out: Optional[Path] = typer.Option(None, "--out", metavar="PATH",
                                       help="The calibration file to write. Default: stdout"),
    keep_sources: Optional[Path] = typer.Option(
        None, "--keep-sources", metavar="DIR",
        help="Also write each source run's facts (benchmark.json, events.jsonl, "
             "batches.parquet; no store) to DIR/<run>/, to calibrate from again later"),
) -> None:
    """Extract the twin's calibration from real runs' event logs, stores and benchmark JSON."""
    problems = []
    if out is not None and out.is_dir():
        problems.append(f"--out: got {str(out)!r}, a directory; give a file path")
    if keep_sources is not None and keep_sources.exists() and not keep_sources.is_dir():
        problems.append(f"--keep-sources: got {str(keep_sources)!r}, a file; give a directory")
    try:  # nothing is kept when an option is bad
        text = calibration_text(run_dirs, engine, None if problems else keep_sources)
    except ConfigError as exc:
        problems += exc.problems
    if problems:
        raise fail_usage(ConfigError(problems))
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        typer.echo(f"calibration: {out}")


def register(app: typer.Typer) -> None:
    """Add the ``lagscale twin`` command group (``calibrate``, ``predict``, ``hold``,
    ``self-check``) to ``app``."""
    twin_app = typer.Typer(help="The twin's calibration from real runs.", no_args_is_help=True)
    twin_app.command("calibrate")(calibrate_command)
    predict_cli.register(twin_app)
    hold_cli.register(twin_app)
    self_check_cli.register(twin_app)
    app.add_typer(twin_app, name="twin")


__all__ = ["calibrate_command", "calibration_text", "register"]
