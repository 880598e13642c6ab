"""The plugin under pytest-xdist: shared runs stay on one worker; two runs at once do not
interfere (each worker has its own broker, ports, run directories and run id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_plugin import FAKE_CONFTEST, GOLDEN

pytest_plugins = ["pytester"]

DATA = Path(__file__).resolve().parent / "data"

# test_plugin's fake runner, with each call also logged (worker, label) to a file the test reads.
LOGGED_RUNNER = """

@pytest.fixture(scope="session")
def lagscale_runner():
    import os

    def run(settings, *, cluster, progress):
        with open({calls!r}, "a") as fh:
            fh.write(json.dumps({{"worker": os.environ["PYTEST_XDIST_WORKER"],
                                 "label": settings.label()}}) + "\\n")
        run_dir = Path(settings.out_dir) / settings.label()
        run_dir.mkdir(parents=True, exist_ok=True)
        return FakeResult(settings, run_dir, json.loads(Path(DOCUMENT).read_text()))
    return run
"""


def test_tests_sharing_a_run_in_one_xdist_group_run_it_once(pytester: pytest.Pytester,
                                                          tmp_path: Path) -> None:
    """``-n 2`` alone would spread the two tests over both workers and run the shared run twice;
    the plugin turns ``--dist load`` into ``loadgroup`` so the ``xdist_group`` holds."""
    calls = tmp_path / "calls.jsonl"
    pytester.makeconftest(FAKE_CONFTEST.format(document=str(GOLDEN / "current_v1.json"),
                                               fail=False) + LOGGED_RUNNER.format(calls=str(calls)))
    pytester.makepyfile("""
        import os
        import pytest

        pytestmark = pytest.mark.xdist_group("spike-ci")

        def test_exp2(lagscale_run):
            lagscale_run()

        def test_exp6(lagscale_run):
            lagscale_run()

        @pytest.mark.xdist_group("other")
        def test_other(lagscale_run):
            lagscale_run(graceful=False)
    """)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    runs = [json.loads(line) for line in calls.read_text().splitlines()]
    assert sorted(r["label"] for r in runs) == ["spike-ci", "spike-ci-sigkill"], runs


@pytest.mark.integration
def test_two_experiments_run_concurrently_without_interfering(pytester: pytest.Pytester
                                                              ) -> None:
    """Two real runs at once, one per worker: each has its own broker, run directory and run id,
    and each reconciles exactly its own records (3,000 produced, 0 lost, 0 duplicated)."""
    pytester.makepyfile(f"""
        import json, os
        import pytest

        PROFILE = {str(DATA / "steady-short.yaml")!r}

        @pytest.mark.parametrize("balancer", ["cooperative-sticky", "range"])
        def test_run(lagscale_run, kafka_cluster, balancer):
            result = lagscale_run(PROFILE, engine="arrow", balancer=balancer,
                                  settle_timeout_s=60)
            out = {{"worker": os.environ.get("PYTEST_XDIST_WORKER"),
                    "run_id": os.environ.get("LAGSCALE_RUN_ID"),
                    "bootstrap": kafka_cluster.bootstrap_servers,
                    "run_dir": str(result.run_dir), "metrics": result.metrics}}
            with open(f"result-{{balancer}}.json", "w") as fh:
                json.dump(out, fh)
    """)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly",
                                           f"--lagscale-out={pytester.path / 'runs'}",
                                           timeout=600)
    result.assert_outcomes(passed=2)
    runs = [json.loads((pytester.path / f"result-{b}.json").read_text())
            for b in ("cooperative-sticky", "range")]
    assert len({r["worker"] for r in runs}) == 2, runs  # concurrently, one per worker
    assert len({r["bootstrap"] for r in runs}) == 2, runs  # a broker each
    assert len({r["run_dir"] for r in runs}) == 2 and len({r["run_id"] for r in runs}) == 2
    for run in runs:
        m = run["metrics"]
        assert (m["produced_records"], m["lost_records"], m["duplicated_records"]) \
            == (3000.0, 0.0, 0.0), run
