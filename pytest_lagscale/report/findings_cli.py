"""``lagscale report RUN_DIR_OR_BENCHMARK_JSON... [--out DIR]``: the findings report.

Registers itself on :data:`pytest_lagscale.cli.app` (``cli.py`` imports this module after
defining ``app``). Writes ``findings.html`` (self-contained) and ``findings.md`` (with its
``img/`` pictures) into ``--out``; see :mod:`.findings` and docs/findings.md.

Exit codes: 0 written, 2 bad input (a missing path, not a benchmark document) with one
``error:`` line per bad argument, nothing written.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..cli import app, fail_usage
from ..errors import ConfigError

DEFAULT_OUT = Path("lagscale-findings")


@app.command("report")
def report(
    paths: list[Path] = typer.Argument(..., metavar="RUN_DIR_OR_BENCHMARK_JSON...",
                                       help="Run directories or benchmark JSON files of the "
                                            "experiment runs"),
    out: Path = typer.Option(DEFAULT_OUT, "--out", metavar="DIR",
                             help="Directory to write findings.html, findings.md and img/ "
                                  f"into. Default: {DEFAULT_OUT}"),
) -> None:
    """Write the findings report: recommendations, then one section per experiment."""
    from .findings import build_findings, load_runs
    from .findings_render import write_findings

    try:
        runs = load_runs(paths)
    except ConfigError as exc:
        raise fail_usage(exc) from exc
    if out.exists() and not out.is_dir():
        raise fail_usage(ConfigError(f"--out: {str(out)!r} is not a directory; give a "
                                     "directory (created when absent)"))
    findings = build_findings(runs)
    html, markdown = write_findings(findings, out)
    ran = sum(1 for section in findings.sections if section.ran)
    typer.echo(f"{len(runs)} run(s), {ran} of {len(findings.sections)} experiments: "
               f"wrote {html} and {markdown}")
