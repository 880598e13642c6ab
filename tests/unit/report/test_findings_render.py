"""Rendering the findings: the self-contained HTML page (autoescaped, pictures embedded) and
the Markdown twin (pictures copied beside it), from the committed golden runs."""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path

from pytest_lagscale.report.findings import RunDoc, build_findings, load_runs
from pytest_lagscale.report.findings_render import (image_name, markdown_cell, render_html,
                                                    render_markdown, write_findings)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _findings():
    return build_findings(load_runs(sorted(p for p in GOLDEN.iterdir() if p.is_dir())))


def test_html_has_every_section_and_embeds_every_picture() -> None:
    html = render_html(_findings())
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids == ["recommendations"] + [f"experiment-{n}" for n in range(1, 12)]
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert len(sources) == 9  # spike-ci serves experiments 1, 2 and 6
    for src in sources:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
    assert html.index('id="recommendations"') < html.index('id="experiment-1"')
    assert '<td class="fail">fail</td>' in html and '<td class="pass">pass</td>' in html


def test_html_is_autoescaped() -> None:
    findings = _findings()
    run = findings.runs[0]
    doc = copy.deepcopy(dict(run.doc))
    doc["run"]["label"] = "<script>alert(1)</script>"
    html = render_html(build_findings([RunDoc(run.path, doc)]))
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_markdown_references_the_copied_pictures(tmp_path: Path) -> None:
    html_path, md_path = write_findings(_findings(), tmp_path / "out")
    markdown = md_path.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert len(links) == 9
    for link in links:
        assert link.startswith("img/") and (md_path.parent / link).read_bytes().startswith(
            PNG_MAGIC)
    headings = re.findall(r"^## (.*)$", markdown, flags=re.MULTILINE)
    assert headings[0] == "Recommendations" and len(headings) == 12
    assert "## Experiment 5: Flapping under bursty load (not run)" in markdown
    assert "| maxReplicaCount | **4 (= P)** | experiment 4 |" in markdown
    assert html_path.read_text().startswith("<!DOCTYPE html>")


def test_markdown_cells_escape_pipes() -> None:
    assert markdown_cell("a|b\nc") == "a\\|b c"


def test_image_names_carry_the_run_dir() -> None:
    assert image_name(Path("/x/20261123T0-spike-ci/timeline.png")) == \
        "20261123T0-spike-ci-timeline.png"


def test_markdown_not_run_sections_have_no_table() -> None:
    markdown = render_markdown(_findings())
    exp7 = markdown.split("## Experiment 7")[1].split("## Experiment 8")[0]
    assert "| figure |" not in exp7 and "Not run: no run of this experiment" in exp7


def test_a_section_table_renders_in_html_and_markdown() -> None:
    row = {"reaction_time_s": 20.0, "peak_lag_records": 50_000.0, "drain_time_s": 18.0,
           "scale_steps": 3, "direction_reversals": 1, "rebalances": 3,
           "replica_seconds": 850.0, "replica_seconds_ratio": 1.25, "drain_slo_met": True,
           "reaction_slo_met": None, "lost_records": 0, "duplicated_records": 0}
    run = RunDoc(Path("/r/bursty-ci-persistent-lag/benchmark.json"), {
        "inputs": {"profile": "bursty-ci", "engine": "spark"},
        "experiment": {"policies": {"profile": "bursty", "policy": "persistent-lag",
                                    "row": row}},
        "run": {"label": "bursty-ci-persistent-lag"}})
    findings = build_findings([run])
    html, markdown = render_html(findings), render_markdown(findings)
    assert "<h3>bursty</h3>" in html
    assert ("<tr><td>persistent-lag</td><td>20</td><td>50,000</td><td>18</td><td>3</td>"
            "<td>1</td><td>3</td><td>850</td><td>1.25</td><td>n/a</td><td>pass</td></tr>"
            ) in html
    assert "### bursty" in markdown
    assert "| persistent-lag | 20 | 50,000 | 18 | 3 | 1 | 3 | 850 | 1.25 | n/a | pass |" in markdown
