"""The findings page in a real browser: Debian's headless Chromium loads the rendered page (from
the committed golden runs) and every <img> must have loaded (naturalWidth > 0) and every
section (recommendations, experiments 1..8) must be in the DOM.

The check runs inside the page: :func:`load_in_chromium` adds a script that, on ``load``, writes
each image's ``complete``/``naturalWidth`` and each section's id as JSON into a ``<pre>``, and
``chromium --headless --dump-dom`` prints the DOM after it ran. The last two tests prove the
check fails: a corrupted picture and a missing section are reported.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.report.findings import EXPERIMENTS, build_findings, load_runs
from pytest_lagscale.report.findings_render import write_findings

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SECTIONS = ["recommendations"] + [f"experiment-{n}" for n in EXPERIMENTS]
TIMEOUT_S = 90

# One worker under xdist: the module fixture is set up once.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("findings-browser"),
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH: apt-get install "
                                                          "chromium (scripts/bootstrap does)")]

PROBE = """<script>
window.addEventListener("load", function () {
  var out = {
    images: Array.from(document.images).map(function (i) {
      return {alt: i.alt, complete: i.complete, width: i.naturalWidth}; }),
    sections: Array.from(document.querySelectorAll("section[id]")).map(function (s) {
      return s.id; })};
  var pre = document.createElement("pre");
  pre.id = "lagscale-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def load_in_chromium(page: Path, work: Path) -> dict[str, Any]:
    """Load ``page`` in headless Chromium; returns the probe's ``{"images": [{alt, complete,
    width}], "sections": [id]}``.

    Raises:
        AssertionError: Chromium failed, timed out or the probe did not run (with its stderr).
    """
    probed = work / f"probed-{page.name}"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--user-data-dir={work / 'chromium-profile'}", "--virtual-time-budget=10000",
               "--dump-dom", probed.as_uri()]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"chromium did not finish within {TIMEOUT_S} s") from None
    finally:
        with_children_gone(proc.pid)
    found = re.search(r'<pre id="lagscale-check">(.*?)</pre>', out, flags=re.DOTALL)
    assert proc.returncode == 0 and found, (f"chromium exit {proc.returncode}, probe "
                                            f"{'found' if found else 'missing'}; stderr: "
                                            f"{err[-2000:]}")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def with_children_gone(pgid: int) -> None:
    """Kill whatever Chromium left in its process group (renderers, zygote)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def page_problems(probe: dict[str, Any], sections: list[str]) -> list[str]:
    """One line per image that did not load and per missing section."""
    problems = [f"image {img['alt']!r} did not load (complete {img['complete']}, naturalWidth "
                f"{img['width']})" for img in probe["images"]
                if not img["complete"] or img["width"] <= 0]
    problems += [f"section {s!r} missing" for s in sections if s not in probe["sections"]]
    return problems


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("findings")
    runs = load_runs(sorted(p for p in GOLDEN.iterdir() if p.is_dir()))
    html, _ = write_findings(build_findings(runs), out)
    return html


def test_every_picture_loads_and_every_section_is_there(page: Path, tmp_path: Path) -> None:
    probe = load_in_chromium(page, tmp_path)
    assert page_problems(probe, SECTIONS) == []
    assert len(probe["images"]) == 9
    assert probe["sections"] == SECTIONS


def test_a_broken_picture_fails_the_check(page: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.html"
    html = page.read_text()
    first = re.search(r'src="data:image/png;base64,[^"]{16}', html)
    assert first
    broken.write_text(html[:first.start()] + 'src="data:image/png;base64,AAAA'
                      + html[first.end():])
    problems = page_problems(load_in_chromium(broken, tmp_path), SECTIONS)
    assert problems == ["image 'spike-ci timeline' did not load (complete True, naturalWidth 0)"]


def test_a_missing_section_fails_the_check(page: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.html"
    cut.write_text(page.read_text().replace('<section id="experiment-7"', '<div id="x"'))
    assert page_problems(load_in_chromium(cut, tmp_path), SECTIONS) == [
        "section 'experiment-7' missing"]
