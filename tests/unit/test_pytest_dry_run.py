"""``pytest --lagscale-dry-run`` (pytester, the real plugin: no fake runner, no fake broker):
each ``lagscale_run`` plans its run instead of running it, the test is skipped with the plan's
summary and the plan is printed; nothing is started, so no broker, no run directory, no pid
directory and no live process; a bad plan fails its test naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def cache(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The cache root of the nested session: a run would write its pid files under it."""
    from pytest_lagscale.process import live_processes

    root = pytester.path / "cache"
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(root))
    # what this process runs already (under pytest-xdist: the worker's session broker)
    _LIVE_BEFORE[:] = live_processes()
    return root


_LIVE_BEFORE: list = []


def _started_nothing(out: Path, cache: Path) -> None:
    from pytest_lagscale.process import live_processes

    assert [p for p in live_processes() if p not in _LIVE_BEFORE] == []
    assert not (cache / "pids").exists()
    assert not out.exists() or not any(p.is_dir() for p in out.iterdir()), list(out.iterdir())


def test_a_dry_run_skips_each_run_test_with_its_plan_and_starts_nothing(
        pytester: pytest.Pytester, cache: Path) -> None:
    pytester.makepyfile(test_runs="""
        import pytest

        def test_partitions(lagscale_run):
            lagscale_run("partitions-ci", policy="scaledobject-partitions-ci", engine="arrow")
            raise AssertionError("a dry run returned a result")

        def test_default(lagscale_run):
            lagscale_run()
            raise AssertionError("a dry run returned a result")

        def test_broker(kafka_cluster):
            raise AssertionError("a test using the broker ran")

        def test_plain():
            pass
    """)
    result = pytester.runpytest("--lagscale-dry-run", "--lagscale-out=out", "-rs",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([
        "*= lagscale dry run =*",
        "test_runs.py::test_partitions:",
        "  run: partitions-ci-scaledobject-partitions-ci-arrow",
        "  profile: partitions-ci (*",
        "  policy: scaledobject-partitions-ci (*",
        "  deployment: *",
        "  platform: local; broker: embedded; scale: ci",
        "  replicas: engine arrow, balancer cooperative-sticky, trigger interval 1 s",
        "  lag source: broker",
        "  actions: 15 s increase_partitions to=16",
        "  expected duration: 60 s of load, then up to 300 s to settle*",
        "test_runs.py::test_default:",
        "  run: spike-ci",
        "lagscale: dry run: 2 test(s) planned, nothing started",
    ])
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1[]] test_runs.py*: dry run: partitions-ci-scaledobject-partitions-ci-arrow: "
        "profile partitions-ci (60 s, *), policy scaledobject-partitions-ci *, engine arrow, "
        "platform local, broker embedded, scale ci, 1 action(s), at most *",
        "SKIPPED [[]1[]] test_runs.py*: dry run: spike-ci: *",
        "SKIPPED [[]1[]] test_runs.py*: dry run: uses the broker (kafka_cluster) without "
        "lagscale_run; nothing to plan, nothing started",
    ])
    result.stdout.no_fnmatch_line("*a dry run returned a result*")
    _started_nothing(pytester.path / "out", cache)


def test_the_broker_stand_in_skips_a_run_test_that_touches_it(pytester: pytest.Pytester,
                                                              cache: Path) -> None:
    """A test asking for both: the broker it gets under a dry run is no broker."""
    pytester.makepyfile(test_both="""
        def test_both(kafka_cluster, lagscale_run):
            kafka_cluster.bootstrap_servers
            lagscale_run()
    """)
    result = pytester.runpytest("--lagscale-dry-run", "--lagscale-out=out", "-rs",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *: dry run: no broker is started "
                                 "(kafka_cluster.bootstrap_servers was asked for)"])
    _started_nothing(pytester.path / "out", cache)


def test_a_bad_profile_under_a_dry_run_fails_its_test_naming_the_field(
        pytester: pytest.Pytester, cache: Path) -> None:
    bad = pytester.path / "garbage.yaml"
    bad.write_text("kind: steady\nseed: 1\npartitions: 8\nrate_per_s: 100\nduration_s: -5\n")
    pytester.makepyfile(test_bad=f"""
        def test_bad(lagscale_run):
            lagscale_run({str(bad)!r})

        def test_good(lagscale_run):
            lagscale_run()
    """)
    result = pytester.runpytest("--lagscale-dry-run", "--lagscale-out=out",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["lagscale_run: dry run: the run cannot be planned:",
                                 "  'duration_s': -5 is out of range; *garbage.yaml*"])
    # the problems, not a traceback into the plugin nor a chained exception
    for line in ("*plugin.py*", "*ConfigError*", "*During handling*", "*Traceback*"):
        result.stdout.no_fnmatch_line(line)
    _started_nothing(pytester.path / "out", cache)


def test_help_lists_the_dry_run_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["dry run (pytest-lagscale):", "*--lagscale-dry-run*"])
