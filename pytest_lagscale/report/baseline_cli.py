"""``lagscale baseline update SAMPLE... [--out DIR]``: rewrite the committed baselines.

:mod:`pytest_lagscale.cli` adds the ``baseline`` command group to ``lagscale`` with
:func:`register`. A SAMPLE is a run directory, a benchmark JSON file, or a
directory of run directories (a ``lagscale-runs`` folder). The samples are grouped by run
label; each label gets ``DIR/<label>.json`` (:func:`.baselines.derive_baseline`: the median,
tolerances from the spread), and ``DIR/TOLERANCES.md`` is redrawn from every baseline in DIR.

Exit codes: 0 written; 2 bad input (a missing path, not a benchmark document, samples of one
label with different inputs, --floor/--margin out of range, --label not among the samples),
with one ``error:`` line each and nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError

DEFAULT_DIR = Path("benchmarks/baselines")
#: Fewer samples than this per label is allowed but warned about (the spread is guesswork).
MIN_SAMPLES = 3

baseline_app = typer.Typer(help="Committed baselines of the CI gate (--lagscale-baseline).",
                           no_args_is_help=True)


def expand_samples(paths: list[Path]) -> list[Path]:
    """Each path as benchmark files: a file as is, a run directory's ``benchmark.json``, a
    folder's run directories' ``benchmark.json`` (sorted).

    Raises:
        ConfigError: a path is missing, or a folder holds no run directory; one line each.
    """
    from .benchjson import RUN_DOCUMENT, find_run_documents

    files, problems = [], []
    for path in paths:
        found = find_run_documents(path)
        if found:
            files += found
        elif path.is_dir():
            problems.append(f"SAMPLE: {str(path)!r} holds no {RUN_DOCUMENT} nor run "
                            "directories; give run directories, benchmark JSON files or "
                            "a lagscale-runs folder")
        else:
            problems.append(f"SAMPLE: {str(path)!r} does not exist")
    if problems:
        raise ConfigError(problems)
    return files


@baseline_app.command("update")
def update(
    samples: list[Path] = typer.Argument(..., metavar="SAMPLE...",
                                         help="Run directories, benchmark JSON files or "
                                              "lagscale-runs folders of repeated runs"),
    out: Path = typer.Option(DEFAULT_DIR, "--out", metavar="DIR",
                             help=f"Baseline directory to write. Default: {DEFAULT_DIR}"),
    floor: float = typer.Option(0.5, "--floor", metavar="FRACTION",
                                help="Smallest tolerance, a fraction of the value, in [0, 5]. "
                                     "Default: 0.5"),
    margin: float = typer.Option(3.0, "--margin", metavar="X",
                                 help="Tolerance = margin x the largest deviation seen, in "
                                      "[1, 10]. Default: 3"),
    count_slack: float = typer.Option(2.0, "--count-slack", metavar="EVENTS",
                                      help="Absolute slack of a count (scale steps, "
                                           "reversals), in [0, 10] events. Default: 2"),
    labels: Optional[list[str]] = typer.Option(None, "--label", metavar="LABEL",
                                               help="Only these run labels (repeatable). "
                                                    "Default: every label in the samples"),
) -> None:
    """Rewrite baselines from repeated runs: the median, tolerances from their spread."""
    from .baselines import (GATED_2X, TOLERANCES_FILE, Rule, derive_baseline, group_by_label,
                            render_tolerances)
    from .benchjson import load
    from .findings import load_runs

    try:
        rule = Rule(floor, margin, count_slack)
    except ValueError as exc:
        raise fail_usage(ConfigError(f"--{exc}".replace("count_slack", "count-slack"))) from exc
    if out.exists() and not out.is_dir():
        raise fail_usage(ConfigError(f"--out: {str(out)!r} is not a directory; give a "
                                     "directory (created when absent)"))
    try:
        groups = group_by_label(load_runs(expand_samples(samples)))
        unknown = sorted(set(labels or ()) - set(groups))
        if unknown:
            raise ConfigError(f"--label: {unknown!r} not among the samples' labels "
                              f"{sorted(groups)!r}")
        docs = {label: derive_baseline(label, group, rule) for label, group in groups.items()
                if not labels or label in labels}
    except ConfigError as exc:
        raise fail_usage(exc) from exc
    out.mkdir(parents=True, exist_ok=True)
    import json

    for label, doc in docs.items():
        (out / f"{label}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        info = doc["baseline"]
        gated = ", ".join(f"{m} {doc['metrics'][m]['tolerance']:.0%}" for m in GATED_2X
                          if m in doc["metrics"] and doc["metrics"][m]["value"] is not None)
        typer.echo(f"{label}: {len(info['samples'])} sample(s) -> {out / (label + '.json')}"
                   + (f" ({gated})" if gated else ""))
        if len(info["samples"]) < MIN_SAMPLES:
            typer.echo(f"warning: {label}: {len(info['samples'])} sample(s); tolerances from "
                       f"fewer than {MIN_SAMPLES} runs underestimate the noise", err=True)
        for name, uncapped in info["capped"].items():
            typer.echo(f"warning: {label}: {name} spread asks for {uncapped:.0%}, capped at "
                       f"{doc['metrics'][name]['tolerance']:.0%} so a 2x regression fails; "
                       "the noise alone may fail the gate", err=True)
        if any(s["dirty"] for s in info["samples"]):
            typer.echo(f"warning: {label}: a sample ran on a dirty work tree", err=True)
    every = {p.stem: load(p) for p in sorted(out.glob("*.json"))}
    (out / TOLERANCES_FILE).write_text(render_tolerances(every))
    typer.echo(f"wrote {len(docs)} baseline(s) and {out / TOLERANCES_FILE}")


@baseline_app.command("regate")
def regate_command(
    folder: Path = typer.Argument(DEFAULT_DIR, metavar="DIR",
                                  help=f"Baseline directory. Default: {DEFAULT_DIR}"),
) -> None:
    """Apply today's not-gated list to committed baselines whose samples are gone.

    Each metric the rule no longer gates loses its value and tolerance (its spread and note
    stay); TOLERANCES.md is drawn again. Gated metrics are untouched: a new tolerance needs
    new samples (lagscale baseline update).
    """
    import json

    from .baselines import TOLERANCES_FILE, regate, render_tolerances
    from .benchjson import load

    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise fail_usage(ConfigError(f"DIR: {str(folder)!r} holds no baseline (*.json); give "
                                     "the baseline directory"))
    try:
        for path in files:
            doc, ungated = regate(load(path))
            path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
            typer.echo(f"{path.stem}: " + (f"no longer gates {', '.join(ungated)}" if ungated
                                           else "unchanged gates"))
    except ConfigError as exc:
        raise fail_usage(exc) from exc
    every = {p.stem: load(p) for p in files}
    (folder / TOLERANCES_FILE).write_text(render_tolerances(every))
    typer.echo(f"wrote {len(files)} baseline(s) and {folder / TOLERANCES_FILE}")


def register(app: typer.Typer) -> None:
    """Add the ``lagscale baseline`` command group (``update``, ``regate``) to ``app``."""
    app.add_typer(baseline_app, name="baseline")
