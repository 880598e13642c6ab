"""Render :class:`~.findings.Findings` to ``findings.html`` and ``findings.md`` (Jinja2).

The HTML page is self-contained: every picture is embedded as a ``data:image/png;base64`` URI,
so the file opens from any place. The Markdown twin references the pictures by relative path
(``img/<run dir>-<picture>.png``), copied next to it. Templates live in ``report/templates``;
HTML is autoescaped.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any, Iterable

from .findings import Findings, RunDoc, build_findings, load_runs

HTML_NAME, MD_NAME, IMAGE_DIR = "findings.html", "findings.md", "img"


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_lagscale.report", "templates"),
        autoescape=lambda name: bool(name) and name.endswith(".html.j2"),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined)
    env.filters["cell"] = markdown_cell
    return env


def markdown_cell(value: Any) -> str:
    """``value`` as one Markdown table cell: ``|`` escaped, newlines flattened."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def data_uri(path: Path) -> str:
    """``path`` (a PNG) as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def image_name(path: Path) -> str:
    """The file name a picture gets in the Markdown twin's image folder:
    ``<run dir>-<picture>.png``."""
    return f"{path.parent.name}-{path.name}"


_BAND_NAMES = {"reaction_time_s": "reaction", "peak_lag_records": "peak lag",
               "drain_time_s": "drain", "replica_seconds": "replica-seconds",
               "scale_steps": "scale steps"}


def _fmt(value: Any, digits: int = 0) -> str:
    return "-" if value is None else f"{float(value):,.{digits}f}"


def simulated_view(sim: Any) -> dict[str, Any] | None:
    """The "full scale (simulated)" section (``sim``: a
    :class:`pytest_lagscale.tune.simulated.Simulated`, or None) as text for both templates:
    ``intro``, ``header`` and ``rows`` (strings) of the full-scale table, ``skipped`` lines, and
    the tune cross-check's ``tune_header``, ``tune_rows`` and ``tune_sentence``; None without a
    section."""
    if sim is None:
        return None
    band = ", ".join(f"{_BAND_NAMES[k]} {'+-%g' % v if k == 'scale_steps' else f'+-{v:.0%}'}"
                     for k, v in sim.band.items())
    intro = (f"Predictions of the calibrated twin ({sim.calibration}, {sim.draws} draws per "
             f"run), not measurements: each ci run the twin models, again at the lab's full "
             f"scale with the bundled full-scale profile and policy. Validated error band of a "
             f"prediction (docs/twin.md, Fidelity): {band}. Cells: median [5 %, 95 %]; "
             f"a drain no draw completed is '-'.")
    header = ["ci run", "full-scale inputs", "ci measured: reaction s / peak lag / drain s / "
              "replica-s", "reaction s", "peak lag", "drain s", "replica-s", "scale steps"]
    rows = []
    for row in sim.rows:
        measured = " / ".join(_fmt(row.measured_ci.get(k), 1 if k == "reaction_time_s" else 0)
                              for k in ("reaction_time_s", "peak_lag_records", "drain_time_s",
                                        "replica_seconds"))
        cells = []
        for name in ("reaction_time_s", "peak_lag_records", "drain_time_s", "replica_seconds",
                     "scale_steps"):
            d = row.predicted[name]
            digits = 1 if name == "reaction_time_s" else 0
            cells.append(f"{_fmt(d['median'], digits)} [{_fmt(d['p5'], digits)}, "
                         f"{_fmt(d['p95'], digits)}]" if d["median"] is not None else "-")
        rows.append([row.label, row.inputs, measured, *cells])
    skipped = [f"{label}: {why}" for label, why in sim.skipped.items()]
    view: dict[str, Any] = {"intro": intro, "header": header, "rows": rows,
                            "skipped": skipped, "tune_header": [], "tune_rows": [],
                            "tune_sentence": sim.tune_problem}
    check = sim.tune
    if check is not None:
        view["tune_header"] = ["lagThreshold", f"twin p95 drain s (SLO {check.drain_slo_s:g} s)",
                               "meets the SLO in the twin"]
        view["tune_rows"] = [[f"{v:,}", _fmt(p95, 1), "yes" if ok else "no"]
                             for v, (p95, ok) in sorted(check.swept.items())]
        best = ("no value of the grid met the SLO" if check.tune_best is None else
                f"{check.tune_best:,} ({_fmt(check.tune_best_replica_seconds)} replica-s)")
        view["tune_sentence"] = (
            f"Experiment 8 measured {_fmt(check.measured)} as the largest swept lagThreshold "
            f"draining within {check.drain_slo_s:g} s; the twin ({check.inputs}) picks "
            f"{_fmt(check.twin_largest_swept)} among the swept values "
            f"({'agrees' if check.agrees else 'differs'}), and lagscale tune's cheapest value "
            f"meeting the SLO at the draws' 95th percentile on a {len(check.grid)}-value grid "
            f"({', '.join(f'{v:,}' for v in check.grid)}) is {best}.")
    return view


def held_view(held: Any) -> list[dict[str, Any]]:
    """The "Full scale: pre-registered prediction vs measured" section: per prediction a
    ``title``, an ``intro`` and the ``header`` and ``rows`` (strings) of its table."""
    views = []
    for item in held:
        intro = (f"Written {item.written_utc} at commit {item.commit}, before the run, by "
                 f"lagscale simulate --prediction ({item.prediction.name}); the twin was not "
                 "recalibrated since. Error: (predicted median - measured) / measured; counts "
                 "as a difference.")
        if item.run is None:
            views.append({"title": item.prediction.name, "intro": intro + " No run of this "
                          "report has its inputs: not held.", "header": [], "rows": []})
            continue
        views.append({"title": f"{item.run.label} ({item.run.path.parent.name})",
                      "intro": intro, "header": list(item.header),
                      "rows": [list(row) for row in item.rows]})
    return views


def render_html(findings: Findings) -> str:
    """The findings page: one self-contained HTML document (pictures embedded)."""
    template = _environment().get_template("findings.html.j2")
    return template.render(findings=findings, image_src=data_uri,
                           simulated=simulated_view(findings.simulated),
                           held=held_view(findings.held))


def render_markdown(findings: Findings) -> str:
    """The Markdown twin; pictures referenced as ``img/<run dir>-<picture>.png``."""
    template = _environment().get_template("findings.md.j2")
    return template.render(findings=findings,
                           image_src=lambda path: f"{IMAGE_DIR}/{image_name(path)}",
                           simulated=simulated_view(findings.simulated),
                           held=held_view(findings.held))


def write_findings(findings: Findings, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``findings.html`` and ``findings.md`` (with its ``img/`` pictures) into
    ``out_dir`` (created); returns both paths.

    Raises:
        OSError: ``out_dir`` cannot be written.
    """
    out = Path(out_dir)
    html, markdown = render_html(findings), render_markdown(findings)
    (out / IMAGE_DIR).mkdir(parents=True, exist_ok=True)
    for run in findings.runs:
        for picture in run.images:
            shutil.copyfile(picture, out / IMAGE_DIR / image_name(picture))
    (out / HTML_NAME).write_text(html, encoding="utf-8")
    (out / MD_NAME).write_text(markdown, encoding="utf-8")
    return out / HTML_NAME, out / MD_NAME


def write_report(paths: Iterable[str | Path], out_dir: str | Path) -> tuple[Path, Path]:
    """Load the runs at ``paths`` (benchmark JSON files or run directories), build the
    findings and write them into ``out_dir``; returns (html, markdown) paths.

    Raises:
        ConfigError: a path is missing or not a benchmark document (nothing is written).
        OSError: ``out_dir`` cannot be written.
    """
    runs: list[RunDoc] = load_runs(paths)
    return write_findings(build_findings(runs), out_dir)
