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


def render_html(findings: Findings) -> str:
    """The findings page: one self-contained HTML document (pictures embedded)."""
    template = _environment().get_template("findings.html.j2")
    return template.render(findings=findings, image_src=data_uri)


def render_markdown(findings: Findings) -> str:
    """The Markdown twin; pictures referenced as ``img/<run dir>-<picture>.png``."""
    template = _environment().get_template("findings.md.j2")
    return template.render(findings=findings,
                           image_src=lambda path: f"{IMAGE_DIR}/{image_name(path)}")


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
