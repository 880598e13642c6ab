"""``--lagscale-report DIR`` (pytester, a fake runner: no Kafka): the session's runs are written
as the findings at session end, placed by the tests' ``experiment(n)`` markers, which the
plugin records under ``experiment.numbers``; a DIR that is a file is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SPIKE = (Path(__file__).resolve().parents[2] / "fixtures" / "golden"
         / "20261123T012454Z-spike-ci")

CONFTEST = """
import json, shutil
from pathlib import Path

import pytest

SPIKE = Path({spike!r})


class FakeResult:
    def __init__(self, settings, run_dir):
        self.settings, self.run_dir = settings, run_dir
        self.benchmark_path = run_dir / "benchmark.json"
        self.doc = json.loads((SPIKE / "benchmark.json").read_text())
        self.experiment = self.doc["experiment"] = {{}}
        shutil.copy(SPIKE / "timeline.png", run_dir / "timeline.png")
        self.write()

    def write(self):
        self.benchmark_path.write_text(json.dumps(self.doc))

    def record(self, name, value):
        self.experiment[name] = value
        self.write()
        return value

    def document(self):
        return self.doc


@pytest.fixture(scope="session")
def kafka_cluster():
    return "fake-cluster"


@pytest.fixture(scope="session")
def lagscale_runner():
    def run(settings, *, cluster, progress):
        run_dir = Path(settings.out_dir) / settings.label()
        run_dir.mkdir(parents=True, exist_ok=True)
        return FakeResult(settings, run_dir)
    return run
"""

TESTS = """
import pytest

@pytest.mark.experiment(2)
def test_two(lagscale_run):
    lagscale_run()

@pytest.mark.experiment(6)
def test_six(lagscale_run):
    lagscale_run()

def test_unmarked(lagscale_run):
    lagscale_run()
"""


def test_the_session_writes_the_findings_of_its_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.format(spike=str(SPIKE)))
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly", "--lagscale-out=runs",
                                "--lagscale-report=findings")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["lagscale: findings report *findings/findings.html (1 run(s))"])
    doc = json.loads(next(pytester.path.glob("runs/*/benchmark.json")).read_text())
    assert doc["experiment"] == {"numbers": [2, 6]}
    markdown = (pytester.path / "findings" / "findings.md").read_text()
    assert "## Experiment 2: Scale-out reaction and drain\n" in markdown
    assert "## Experiment 6: Scale-down without loss\n" in markdown
    assert "## Experiment 1: Lag vs CPU as the scaling signal (not run)" in markdown
    assert (pytester.path / "findings" / "findings.html").stat().st_size > 100_000


def test_no_option_writes_no_findings(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.format(spike=str(SPIKE)))
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly", "--lagscale-out=runs")
    result.assert_outcomes(passed=3)
    assert "findings report" not in result.stdout.str()
    assert not list(pytester.path.rglob("findings.html"))


def test_a_report_dir_that_is_a_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    pytester.path.joinpath("taken").write_text("")
    result = pytester.runpytest("--lagscale-report=taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --lagscale-report: 'taken' is not a directory; give a "
                                 "directory (created when absent)"])
