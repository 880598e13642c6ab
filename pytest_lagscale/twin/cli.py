"""``lagscale simulate``: a twin run with the outputs of ``lagscale run`` plus the distribution
over draws.

:mod:`pytest_lagscale.cli` adds it to ``lagscale`` with :func:`register`. Prints the
measurement table of the median draw and the median, 5 % and 95 % of reaction time, peak lag,
drain time, replica-seconds and scale steps over the draws, then writes the median draw's run
directory (``benchmark.json`` with ``run.platform = "twin"``, ``timeline.png``, ``summary.md``)
under ``--out``.

Exit codes: 0 written; 2 bad input, one ``error:`` line per problem (option, value, allowed
range), nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError

DEFAULT_OUT = Path("lagscale-runs")
MAX_DRAWS = 1000


def check_simulate_options(draws: int, seed: int, engine: Optional[str],
                           out: Path, scale: str = "ci",
                           settle_timeout_s: float = 300.0) -> list[str]:
    """Problem lines for the options the run settings do not check (empty when all good)."""
    from ..config.bundled import SCALES
    from ..options import MAX_SETTLE_TIMEOUT_S
    from .params import ENGINES

    problems = []
    if not 0 <= settle_timeout_s <= MAX_SETTLE_TIMEOUT_S:
        problems.append(f"--settle-timeout: got {settle_timeout_s:g}, expected seconds in "
                        f"[0, {MAX_SETTLE_TIMEOUT_S:g}]; give a time in the range")
    if scale not in SCALES:
        problems.append(f"--scale: got {scale!r}, expected one of {', '.join(SCALES)}; pick "
                        "one of them")
    if not 1 <= draws <= MAX_DRAWS:
        problems.append(f"--draws: got {draws!r}, expected an integer in [1, {MAX_DRAWS}]; "
                        "give a count in the range")
    if seed < 0:
        problems.append(f"--seed: got {seed!r}, expected an integer >= 0; give a non-negative "
                        "seed")
    if engine is not None and engine not in ENGINES:
        problems.append(f"--engine: got {engine!r}, expected one of {', '.join(ENGINES)} (the "
                        "engines the twin has a calibration for); pick one of them")
    if out.exists() and not out.is_dir():
        problems.append(f"--out: {str(out)!r} is not a directory; give a directory (created "
                        "when absent)")
    return problems


#: ``--machine-image`` value meaning the machine ``lagscale simulate`` runs on.
THIS_MACHINE = "this"


def machine_image(value: Optional[str], problems: list[str]) -> Optional[str]:
    """The kernel release ``--machine-image`` names (``this``: this machine's,
    ``platform.release()``), None when not given; a release no bundled calibration was
    measured on (``twin.params.calibrated_releases``) adds a problem line and gives None."""
    import platform

    from .params import calibrated_releases

    if value is None:
        return None
    release = platform.release() if value == THIS_MACHINE else value
    known = calibrated_releases()
    if release in known:
        return release
    shown = f"{value!r}" + (f" ({release})" if value == THIS_MACHINE else "")
    problems.append(f"--machine-image: got {shown}, expected a machine image the twin has a "
                    f"calibration of: {', '.join(sorted(known))}, or {THIS_MACHINE!r} on one "
                    "of them; calibrate the image with `lagscale twin calibrate` (docs/twin.md, "
                    "\"Calibration\")")
    return None


def distribution_table(draws: object) -> object:
    """A rich table: one row per headline metric, columns median, 5 %, 95 %, draws measured."""
    from rich.table import Table

    from .run import HEADLINE

    table = Table(title=f"twin: distribution over {len(draws.runs)} draws")
    for column in ("metric", "median", "5 %", "95 %", "draws measured"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for name, label in HEADLINE.items():
        row = draws.distribution[name]
        cells = ["-" if row[k] is None else f"{row[k]:,.1f}" for k in ("median", "p5", "p95")]
        table.add_row(label, *cells, f"{int(row['measured'] or 0)}")
    return table


def simulate_command(
    profile: str = typer.Option(..., "--profile", metavar="NAME|PATH",
                                help="Traffic profile: a bundled name or a YAML path"),
    policy: Optional[str] = typer.Option(None, "--policy", metavar="NAME|PATH",
                                         help="Scaling policy manifest: a bundled name or a "
                                              "YAML path. Default: the scale's ScaledObject"),
    scale: str = typer.Option("ci", "--scale", metavar="ci|full",
                              help="Size of the run: ci (P = 8) or full (the lab's P = 24, "
                                   "30k/s spike); picks the bundled profile and manifests of "
                                   "that scale. Default: ci"),
    partitions: Optional[int] = typer.Option(None, "--partitions", metavar="N",
                                             help="Overrides the profile's partition count "
                                                  "(1..1024). Default: the profile's"),
    draws: int = typer.Option(30, "--draws", metavar="N",
                              help=f"Randomised draws (controller phase, cold-start jitter), "
                                   f"1..{MAX_DRAWS}. Default: 30"),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the draws. Default: 0"),
    out: Path = typer.Option(DEFAULT_OUT, "--out", metavar="DIR",
                             help=f"Parent of the run directory. Default: {DEFAULT_OUT}"),
    engine: Optional[str] = typer.Option(None, "--engine", metavar="spark|arrow",
                                         help="Overrides the Deployment's engine. Default: "
                                              "the Deployment's"),
    settle_timeout: float = typer.Option(300.0, "--settle-timeout", metavar="SECONDS",
                                         help="After the profile ends, seconds the run waits "
                                              "to settle (as lagscale run's), 0..7200. "
                                              "Default: 300"),
    machine_image_option: Optional[str] = typer.Option(
        None, "--machine-image", metavar="RELEASE|this",
        help="Predict with the calibration measured on this machine image (a kernel release "
             "as runs record it, or 'this': the machine simulate runs on). Default: the "
             "engine's default calibration"),
    prediction_file: Optional[Path] = typer.Option(
        None, "--prediction", metavar="FILE",
        help="Also write the pre-registration JSON of the prediction (the run's inputs, the "
             "calibration, the commit, and the median, 5 % and 95 % of each figure) to FILE. "
             "Default: none"),
) -> None:
    """Simulate a run in the calibrated twin: the median draw's measurements and run directory,
    and the distribution over the draws."""
    from rich.console import Console

    from ..config.bundled import SCALES
    from ..experiment.settings import RunSettings
    from ..report.summary import measurements_table
    from .run import simulate_draws, write_run_dir

    problems = check_simulate_options(draws, seed, engine, out, scale, settle_timeout)
    release = machine_image(machine_image_option, problems)
    if prediction_file is not None and (prediction_file.is_dir()
                                        or not prediction_file.parent.is_dir()):
        problems.append(f"--prediction: {str(prediction_file)!r} is a directory or its parent "
                        "does not exist; give a file path in an existing directory")
    plan, params = _plan(RunSettings(profile=profile, policy=policy,
                                     scale=scale if scale in SCALES else "ci",
                                     partitions=partitions,
                                     engine=engine if engine and not problems else None,
                                     settle_timeout_s=settle_timeout if not problems else 300.0),
                         problems, release)
    result = simulate_draws(plan, params, seed, draws)
    written = write_run_dir(result, plan, params, out)
    console = Console()
    median = result.runs[result.median_draw]
    console.print(measurements_table(median.measurements, title=f"twin {plan.settings.label()}"
                                     f" (draw {result.median_draw} of {draws}, seed {seed})"))
    console.print(distribution_table(result))
    for name in ("benchmark_json", "timeline_png", "summary_md"):
        console.print(f"{name}: {written.artifacts[name]}", highlight=False, soft_wrap=True)
    if prediction_file is not None:
        _write_prediction(prediction_file, result, plan, params, written)
        console.print(f"prediction: {prediction_file}", highlight=False, soft_wrap=True)


def _write_prediction(path: Path, result: object, plan: object, params: object,
                      written: object) -> None:
    """The pre-registration JSON (``twin.prediction.prediction`` plus the commit and the
    median draw's run directory)."""
    import json
    from datetime import datetime, timezone

    from ..experiment.environment import commit_info
    from .prediction import prediction

    doc = {"kind": "lagscale twin prediction", "written_utc":
           datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": commit_info(), **prediction(result, plan, params),
           "median_draw_run_dir": str(written.run_dir)}
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")


def _plan(settings: object, problems: list[str],
          release: Optional[str] = None) -> tuple[object, object]:
    """The run's plan and twin parameters (the calibration of the machine image ``release``
    when given); raises the exit-2 ``typer.Exit`` after printing ``problems`` and the inputs'
    own problems, all at once."""
    from .run import params_for, plan_of

    plan = params = None
    try:
        plan = plan_of(settings)
        params = params_for(plan, release=release)
    except ConfigError as exc:
        problems = [*problems, *exc.problems]
    if problems:
        raise fail_usage(ConfigError(problems))
    return plan, params


def register(app: typer.Typer) -> None:
    """Add ``lagscale simulate`` to ``app``."""
    app.command("simulate")(simulate_command)


__all__ = ["check_simulate_options", "distribution_table", "register", "simulate_command"]
