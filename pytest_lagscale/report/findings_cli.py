"""``lagscale report RUN_DIR_OR_BENCHMARK_JSON... [--out DIR]``: the findings report.

:mod:`pytest_lagscale.cli` adds it to ``lagscale`` with :func:`register`. Writes
``findings.html`` (self-contained) and ``findings.md`` (with its ``img/`` pictures) into
``--out``; see :mod:`.findings` and docs/findings.md. With ``--full-scale-draws N`` (default 3;
0: off) the report ends with the twin's "full scale (simulated)" section
(:mod:`pytest_lagscale.tune.simulated`); each ``--prediction FILE`` (a pre-registered twin
prediction) adds its table against the run it predicted (:func:`.findings.held_predictions`).

Exit codes: 0 written, 2 bad input (a missing path, not a benchmark document, ``--out`` a
file, ``--full-scale-draws`` outside 0..100) with one ``error:`` line per problem, nothing
written.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError

DEFAULT_OUT = Path("lagscale-findings")


def report(
    paths: list[Path] = typer.Argument(..., metavar="RUN_DIR_OR_BENCHMARK_JSON...",
                                       help="Run directories or benchmark JSON files of the "
                                            "experiment runs"),
    out: Path = typer.Option(DEFAULT_OUT, "--out", metavar="DIR",
                             help="Directory to write findings.html, findings.md and img/ "
                                  f"into. Default: {DEFAULT_OUT}"),
    full_scale_draws: int = typer.Option(3, "--full-scale-draws", metavar="N",
                                         help="Twin draws per run of the 'full scale "
                                              "(simulated)' section, 1..100; 0 leaves the "
                                              "section out. A full-scale draw takes 5-12 s. "
                                              "Default: 3"),
    predictions: list[Path] = typer.Option([], "--prediction", metavar="FILE",
                                           help="A pre-registered prediction (lagscale "
                                                "simulate --prediction); the report holds it "
                                                "against the run with its inputs. Repeatable. "
                                                "Default: none"),
) -> None:
    """Write the findings report: recommendations, then one section per experiment."""
    from .findings import build_findings, load_runs
    from .findings_render import write_findings

    problems, runs = [], []
    try:
        runs = load_runs(paths)
    except ConfigError as exc:
        problems += exc.problems
    if out.exists() and not out.is_dir():
        problems.append(f"--out: {str(out)!r} is not a directory; give a directory (created "
                        "when absent)")
    if not 0 <= full_scale_draws <= 100:
        problems.append(f"--full-scale-draws: got {full_scale_draws!r}, expected an integer in "
                        "[0, 100] (0 leaves the section out)")
    problems += [f"--prediction: {str(p)!r} is not a file" for p in predictions
                 if not p.is_file()]
    if problems:
        raise fail_usage(ConfigError(problems))
    findings = build_findings(runs)
    if predictions:
        from dataclasses import replace

        try:
            findings = replace(findings, held=held_predictions(runs, predictions))
        except ConfigError as exc:
            raise fail_usage(exc) from None
    if full_scale_draws:
        from dataclasses import replace

        from ..tune.simulated import simulate_findings
        findings = replace(findings, simulated=simulate_findings(runs, full_scale_draws))
    html, markdown = write_findings(findings, out)
    ran = sum(1 for section in findings.sections if section.ran)
    typer.echo(f"{len(runs)} run(s), {ran} of {len(findings.sections)} experiments: "
               f"wrote {html} and {markdown}")


def held_predictions(runs: list, predictions: list[Path]) -> tuple:
    """Each pre-registered prediction held against every run of ``runs`` it predicted (those
    whose inputs are the prediction's: :func:`pytest_lagscale.calibration.preregistered.hold`;
    two runs of the same inputs are two samples), as :class:`.findings.HeldPrediction`, one per
    prediction and run; a prediction no run matches is kept once with ``run`` None and no rows.

    Raises:
        ConfigError: an unreadable prediction file.
    """
    import json

    from ..calibration.preregistered import HEADER, cells, hold
    from .findings import HeldPrediction

    out = []
    for path in predictions:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--prediction: {str(path)!r}: {type(exc).__name__}: {exc}") \
                from exc
        written = str(doc.get("written_utc", "?"))
        commit = str((doc.get("commit") or {}).get("id", "?"))
        held = []
        for run in runs:
            try:
                rows = tuple(cells(hold(path, run.path.parent)))
            except ConfigError:
                continue
            held.append(HeldPrediction(path, run, HEADER, rows, written, commit))
        out.extend(held or [HeldPrediction(path, None, (), (), written, commit)])
    return tuple(out)


def register(app: typer.Typer) -> None:
    """Add ``lagscale report`` to ``app``."""
    app.command("report")(report)
