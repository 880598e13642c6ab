"""``lagscale twin predict``: predict real runs with the committed calibration and compare.

:func:`register` adds ``predict`` to the ``twin`` command group (:mod:`.cli`)::

    lagscale twin predict RUN_DIR... [--draws 30] [--seed 0] [--given-cold-starts]
                                     [--machine-probe]

For each run directory of ``lagscale run`` (or ``pytest --lagscale-out``), the twin plans the
same run again from its ``benchmark.json`` (:func:`.fidelity.predict_run`), simulates the
draws and prints, per headline figure, the measured value, the draws' median and 5-95 % band,
the error and whether it lies inside the twin's stated band (:data:`.fidelity.STATED_BAND`);
then the event-level spans (cold start, started -> assigned, revoked -> assigned) real vs
twin. ``--given-cold-starts`` predicts given the run's own start-up speed (the fidelity
benchmark's second prediction, docs/twin.md "Given the run's cold starts");
``--machine-probe`` takes the start-up speed from the run's own replicas started before its
load only (:func:`.fidelity.machine_probe_s`), what a run knows before its spike.

Exit codes: 0 every predicted figure within the stated band; 1 some figure outside it; 2 bad
input (a missing run, an input the twin does not model, --draws out of range), one ``error:``
line per problem, nothing simulated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import typer

from ..cli_usage import fail_usage
from ..contract.errors import ConfigError


def _fmt(value: float | None, name: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _error(check: Any) -> str:
    if check.error is None:
        return "-"
    return f"{check.error:+.0f}" if check.name == "scale_steps" else f"{check.error:+.1%}"


def outside_stated_band(fidelity: Any) -> list[str]:
    """The figures of ``fidelity`` whose |error| exceeds :data:`.fidelity.STATED_BAND`, as
    ``"name: error"`` lines (empty: the prediction holds its band)."""
    from .fidelity import STATED_BAND

    return [f"{f.name}: {_error(f)} (band {STATED_BAND[f.name]:g})" for f in fidelity.figures
            if f.error is not None and f.name in STATED_BAND
            and abs(f.error) > STATED_BAND[f.name]]


def render(fidelity: Any) -> list[Any]:
    """Two ``rich`` tables of one prediction: the headline figures and the spans."""
    from rich.table import Table

    from .fidelity import STATED_BAND

    scale = (f", cold starts x{fidelity.cold_start_scale:g}"
             if fidelity.cold_start_scale is not None else "")
    if fidelity.probe_alone_s is not None:
        scale += f", machine probe: alone start {fidelity.probe_alone_s:.2f} s"
    if fidelity.calibration:
        scale += f", calibration {fidelity.calibration}"
    title = f"{fidelity.label}: real vs twin ({fidelity.draws} draws{scale})"
    figures = Table(title=title, min_width=len(title))  # the title on one line
    for column in ("figure", "measured", "twin median", "twin 5-95 %", "error", "in band",
                   "stated band"):
        figures.add_column(column, justify="left" if column == "figure" else "right")
    for f in fidelity.figures:
        band = STATED_BAND.get(f.name)
        held = "-" if f.error is None or band is None else (
            "yes" if abs(f.error) <= band else "[bold red]no[/]")
        stated = "-" if band is None else (f"+-{band:g}" if f.name == "scale_steps"
                                           else f"+-{band * 100:g} %")
        figures.add_row(f.name, _fmt(f.measured, f.name), _fmt(f.median, f.name),
                        "-" if f.p5 is None or f.p95 is None
                        else f"{_fmt(f.p5, f.name)} - {_fmt(f.p95, f.name)}", _error(f),
                        "-" if f.in_band is None else "yes" if f.in_band else "no",
                        "-" if f.error is None else f"{stated} {held}")
    spans = Table(title="event-level spans, seconds (real vs twin)")
    for column in ("span", "real median", "twin median", "KS", "real n", "twin n"):
        spans.add_column(column, justify="left" if column == "span" else "right")
    for s in fidelity.spans:
        spans.add_row(s.name, _fmt(s.real_median, s.name), _fmt(s.twin_median, s.name),
                      "-" if s.ks is None else f"{s.ks:.2f}", str(s.real_n), str(s.twin_n))
    return [figures, spans]


def predict_command(
    runs: List[Path] = typer.Argument(..., metavar="RUN_DIR...",
                                      help="Run directories (or their benchmark.json)"),
    draws: int = typer.Option(30, "--draws", metavar="N",
                              help="Twin draws per run, in [1, 1000]. Default: 30"),
    seed: int = typer.Option(0, "--seed", metavar="N", help="The draws' seed. Default: 0"),
    given_cold_starts: bool = typer.Option(
        False, "--given-cold-starts",
        help="Predict given each run's own median cold start (the machine's start-up speed)"),
    machine_probe: bool = typer.Option(
        False, "--machine-probe",
        help="Predict given the start-up speed of each run's replicas started before its "
             "load (a machine probe: nothing of the spike is used)"),
) -> None:
    """Predict real runs in the calibrated twin and compare figure by figure."""
    from rich.console import Console

    from .fidelity import predict_run

    problems = [f"RUN_DIR: {str(run)!r} does not exist" for run in runs if not run.exists()]
    if not 1 <= draws <= 1000:
        problems.append(f"--draws: got {draws}, expected an integer in [1, 1000]")
    if problems:
        raise fail_usage(ConfigError(problems))
    results = []
    for run in runs:
        try:
            results.append(predict_run(run, draws=draws, seed=seed,
                                       condition_on_cold_start=given_cold_starts,
                                       machine_probe=machine_probe))
        except ConfigError as exc:   # Unsupported included: it names the input
            problems += [f"{run}: {problem}" for problem in exc.problems]
    if problems:
        raise fail_usage(ConfigError(problems))
    console, outside = Console(width=max(Console().width, 110)), []  # whole metric names
    for fidelity in results:
        for table in render(fidelity):
            console.print(table)
        outside += [f"{fidelity.label}: {line}" for line in outside_stated_band(fidelity)]
    for line in outside:
        console.print(f"[bold red]outside the stated band:[/] {line}")
    if outside:
        raise typer.Exit(1)
    console.print(f"{len(results)} run(s) predicted within the twin's stated band")


def register(twin_app: typer.Typer) -> None:
    """Add ``predict`` to the ``lagscale twin`` command group ``twin_app``."""
    twin_app.command("predict")(predict_command)


__all__ = ["outside_stated_band", "predict_command", "register", "render"]
