"""The pytest plugin through pytester: --help contract, markers, option conflicts, import cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


def test_help_lists_the_kafka_and_run_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "lag-based autoscaling experiments (pytest-lagscale):",
        "*--lagscale-profile=NAME|PATH*",
        "*--lagscale-policy=NAME|PATH*",
        "*--lagscale-scaledobject=PATH*",
        "*--lagscale-deployment=NAME|PATH*",
        "*--lagscale-lag-threshold=RECORDS[[],RECORDS...[]]*",
        "*--lagscale-balancer={cooperative-sticky,range,roundrobin,consumer}*",
        "*--lagscale-partitions=N*",
        "*--lagscale-engine={spark,arrow,spark-connect}*",
        "*--lagscale-trigger-interval=SECONDS*",
        "*--lagscale-spark-remote=URL*",
        "*--lagscale-graceful*",
        "*--lagscale-no-graceful*",
        "*--lagscale-platform={local,kubernetes}*",
        "*--lagscale-kafka={embedded,testcontainers,external}*",
        "*--lagscale-kafka-bootstrap=HOST:PORT*",
        "*--lagscale-kafka-config=KEY=VALUE*",
        "*--lagscale-scale={ci,full}*",
        "*--lagscale-out=DIR*",
        "*--lagscale-baseline=PATH*",
        "*--lagscale-settle-timeout=SECONDS*",
    ])
    assert result.ret == 0


def test_markers_are_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.acceptance
        @pytest.mark.experiment(2)
        @pytest.mark.integration
        @pytest.mark.gate
        def test_marked():
            pass
    """)
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--kafka=external"],
                     "ERROR: --kafka=external needs --kafka-bootstrap HOST:PORT; add it or use "
                     "--kafka=embedded", id="external-without-bootstrap"),
        pytest.param(["--kafka-bootstrap=127.0.0.1:9092"],
                     "ERROR: --kafka-bootstrap is only used with --kafka=external, not "
                     "--kafka=embedded; add --kafka=external or drop --kafka-bootstrap",
                     id="bootstrap-without-external"),
    ],
)
def test_conflicting_kafka_options_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                                    message: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_bad_kafka_config_value_names_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--kafka=external", "--kafka-bootstrap=h:1",
                                "--kafka-config=novalue")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kafka-config: 'novalue' is not KEY=VALUE; "
                                 "e.g. security.protocol=SASL_SSL*"])


def test_testcontainers_kafka_skips_naming_the_missing_engine(pytester: pytest.Pytester
                                                              ) -> None:
    from pytest_lagscale.kafka.container import docker_available

    if docker_available()[0]:
        pytest.skip("a Docker engine answers here; the skip path cannot be observed")
    pytester.makepyfile("def test_x(kafka_cluster): pass")
    result = pytester.runpytest("--kafka=testcontainers", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*--kafka=testcontainers: *"])


def test_importing_the_plugin_loads_no_heavy_library() -> None:
    code = ("import sys, pytest_lagscale.plugin, pytest_lagscale.cli; "
            "heavy = {'confluent_kafka', 'pyspark', 'matplotlib', 'kubernetes'} & "
            "set(m.split('.')[0] for m in sys.modules); print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- run options -----------------------------------------------------------------------------
def _group_flags(help_text: str) -> set[str]:
    """The long flags listed in the "lag-based autoscaling experiments" group of --help."""
    import re

    section = help_text.split("lag-based autoscaling experiments (pytest-lagscale):")[1]
    section = section.split("\n\n")[0]
    return set(re.findall(r"^  (--[a-z][a-z-]*)", section, flags=re.MULTILINE))


def _table_flags(*, cli: bool) -> set[str]:
    from pytest_lagscale.options import RUN_OPTIONS

    flags = set()
    for option in RUN_OPTIONS:
        flags.add(option.cli_flag if cli else option.pytest_flag)
        if option.negatable:
            flags.add(f"--no-{option.flag}" if cli else f"--lagscale-no-{option.flag}")
    return flags


def test_pytest_offers_exactly_the_run_option_table(pytester: pytest.Pytester) -> None:
    """The plugin's options drift from the table (and so from ``lagscale run``) -> fail."""
    result = pytester.runpytest("--help")
    assert _group_flags(result.stdout.str()) == _table_flags(cli=False)


def test_lagscale_run_offers_exactly_the_run_option_table() -> None:
    """``lagscale run``'s options drift from the table (and so from pytest's) -> fail; the CLI
    spells the prefixed ones without ``lagscale-``."""
    import re

    from typer.testing import CliRunner

    from pytest_lagscale.cli import app

    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    rows = re.findall(r"^\S (--[a-z][a-z-]*)(?: +(--no-[a-z-]+))?", result.output, re.MULTILINE)
    # --dry-run is the command's own (it plans and exits), not a run option
    flags = {flag for row in rows for flag in row if flag} - {"--help", "--dry-run"}
    assert "--dry-run" in result.output
    assert flags == _table_flags(cli=True)
    pytest_side = {f.replace("--lagscale-", "--") for f in _table_flags(cli=False)}
    assert flags == pytest_side


_SWEEP_FIX = "comma-separated for a sweep (e.g. 1000,10000,100000)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--lag-threshold=0"],
                     "*--lag-threshold: 0 is out of range; allowed: integers in "
                     f"[1, 10,000,000] records, {_SWEEP_FIX}", id="lag-threshold-zero"),
        pytest.param(["--lag-threshold=10000001"],
                     "*--lag-threshold: 10000001 is out of range; allowed: integers in "
                     f"[1, 10,000,000] records, {_SWEEP_FIX}", id="lag-threshold-too-big"),
        pytest.param(["--lag-threshold=1000,lots"],
                     "*--lag-threshold: 'lots' is not an integer; allowed: integers in "
                     f"[1, 10,000,000] records, {_SWEEP_FIX}", id="lag-threshold-not-int"),
        pytest.param(["--lag-threshold=1000,1000"],
                     "*--lag-threshold: '1000,1000' repeats 1000; list each value of the sweep "
                     "once", id="lag-threshold-repeated"),
        pytest.param(["--partitions=0"],
                     "*--partitions: 0 is out of range; allowed: an integer in [1, 1,024] "
                     "partitions", id="partitions-zero"),
        pytest.param(["--partitions=2048"],
                     "*--partitions: 2048 is out of range; allowed: an integer in [1, 1,024] "
                     "partitions", id="partitions-too-many"),
        pytest.param(["--balancer=sticky"], "*argument --balancer: invalid choice: 'sticky'*",
                     id="balancer-unknown"),
        pytest.param(["--platform=k8s"], "*argument --platform: invalid choice: 'k8s'*",
                     id="platform-unknown"),
        pytest.param(["--lagscale-scale=huge"],
                     "*argument --lagscale-scale: invalid choice: 'huge'*", id="scale-unknown"),
        pytest.param(["--profile=missing.yaml"],
                     "ERROR: '--profile': got 'missing.yaml', expected an existing profile YAML "
                     "file or a bundled profile name (*) in the command line; pass a path to a "
                     "profile file or one of the bundled names", id="profile-missing"),
        pytest.param(["--policy=scaledobject-ci", "--scaledobject=k8s/scaledobject-ci.yaml"],
                     "ERROR: --policy and --scaledobject both name the scaling policy; give one",
                     id="policy-and-scaledobject"),
        pytest.param(["--settle-timeout=-5"],
                     "*--settle-timeout: -5.0 is out of range; allowed: seconds in [0, 7200]",
                     id="settle-timeout-negative"),
        pytest.param(["--lagscale-baseline=missing.json"],
                     "ERROR: --lagscale-baseline: 'missing.json' does not exist; give a "
                     "benchmark JSON file or a directory of <run label>.json files",
                     id="baseline-missing"),
        pytest.param(["--lagscale-baseline=test_x.py"],
                     "ERROR: --lagscale-baseline: test_x.py: is not JSON (*); pass a file "
                     "written by write_document", id="baseline-not-json"),
        pytest.param(["--lagscale-out=test_x.py"],
                     "ERROR: --lagscale-out: 'test_x.py' is a file, not a directory; give a "
                     "directory (created when missing)", id="out-is-a-file"),
    ],
)
def test_bad_run_option_values_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                                message: str) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([_literal_brackets(message)])


def _literal_brackets(pattern: str) -> str:
    """``pattern`` with ``[`` matching itself (fnmatch reads it as a character class)."""
    return pattern.replace("[", "[[]")


def test_a_bad_baseline_in_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    pytester.mkdir("baselines").joinpath("spike-ci.json").write_text('{"schema_version": 99}')
    result = pytester.runpytest("--lagscale-baseline=baselines")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --lagscale-baseline: baselines*spike-ci.json: "
                                 "'schema_version' 99 is not one of [[]1]; upgrade "
                                 "pytest-lagscale"])


# -- fixtures with a fake runner (no Kafka) --------------------------------------------------
GOLDEN = Path(__file__).resolve().parent / "golden"

FAKE_CONFTEST = """
import json
from pathlib import Path

import pytest

CALLS = []
DOCUMENT = {document!r}


class FakeResult:
    def __init__(self, settings, run_dir, doc):
        self.settings, self.run_dir, self._doc = settings, run_dir, doc
        self.benchmark_path = run_dir / "benchmark.json"
        self.benchmark_path.write_text(json.dumps(doc))
        self.metrics = {{k: m["value"] for k, m in doc["metrics"].items()}}
        self.problems = doc.get("problems", [])
        self.world = {{"faults": doc.get("faults", []), "problems": self.problems}}

    def document(self):
        return self._doc

    def check(self, name, value, threshold, passed):
        return passed


@pytest.fixture(scope="session")
def kafka_cluster():
    return "fake-cluster"


@pytest.fixture(scope="session")
def lagscale_runner():
    def run(settings, *, cluster, progress):
        assert cluster == "fake-cluster"
        CALLS.append(settings)
        if {fail!r}:
            raise RuntimeError("broker went away")
        run_dir = Path(settings.out_dir) / settings.label()
        run_dir.mkdir(parents=True, exist_ok=True)
        return FakeResult(settings, run_dir, json.loads(Path(DOCUMENT).read_text()))
    return run


@pytest.fixture
def calls():
    return CALLS
"""


def _fake(pytester: pytest.Pytester, document: str = "current_v1.json",
          fail: bool = False) -> None:
    pytester.makeconftest(FAKE_CONFTEST.format(document=str(GOLDEN / document), fail=fail))


def test_a_lag_threshold_list_parametrizes_each_run_test(pytester: pytest.Pytester) -> None:
    _fake(pytester)
    pytester.makepyfile("""
        import pytest

        def test_settings(lagscale_settings, request):
            assert f"lt{lagscale_settings.lag_threshold}" == request.node.callspec.id

        def test_run(lagscale_run):
            assert lagscale_run().settings.label().startswith("spike-ci-lt")

        @pytest.mark.parametrize("lag_threshold", [7], ids=["own"])
        def test_own_sweep(lagscale_settings):
            assert lagscale_settings.lag_threshold == 7

        def test_plain():
            pass
    """)
    result = pytester.runpytest("--lag-threshold=1000,10000,100000", "-v")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([
        "*::test_settings[[]lt1000[]] PASSED*", "*::test_settings[[]lt10000[]] PASSED*",
        "*::test_settings[[]lt100000[]] PASSED*", "*::test_run[[]lt1000[]] PASSED*",
        "*::test_run[[]lt10000[]] PASSED*", "*::test_run[[]lt100000[]] PASSED*",
        "*::test_own_sweep[[]own[]] PASSED*", "*::test_plain PASSED*",
    ])


@pytest.mark.parametrize("injected", [False, True], ids=["plain-run", "run-with-a-fault"])
def test_a_run_that_is_not_a_good_one_fails_its_test_unless_it_injected_a_fault(
        pytester: pytest.Pytester, tmp_path: Path, injected: bool) -> None:
    """A run that did not settle or could not read its lag fails the test that asked for it, with
    the numbers; a run that injected a fault is left to the test's own assertions."""
    doc = json.loads((GOLDEN / "current_v1.json").read_text())
    doc["problems"] = ["not settled: lag 0 at minReplicaCount not reached within 300 s",
                       "lag unread 40 s of 240 s (16.7 % > 10 %; longest gap 40 s, lag older "
                       "than 4 s counts as unread)"]
    doc["faults"] = [{"name": "pause_broker", "kind": "injected"}] if injected else []
    document = tmp_path / "unsound.json"
    document.write_text(json.dumps(doc))
    _fake(pytester, document=str(document))
    pytester.makepyfile("""
        def test_run(lagscale_run):
            lagscale_run()
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    if injected:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lagscale_run: spike-ci is not a good run*",
                                 "*not settled: lag 0 at minReplicaCount not reached within 300 s",
                                 "*lag unread 40 s of 240 s (16.7 % > 10 %*"])


def test_each_finished_run_prints_a_progress_line_while_output_is_captured(
        pytester: pytest.Pytester) -> None:
    _fake(pytester)
    pytester.makepyfile("""
        def test_run(lagscale_run):
            lagscale_run()

        def test_same_run(lagscale_run):
            lagscale_run()
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    lines = [line for line in result.stdout.lines if line.startswith("lagscale: run ")]
    assert len(lines) == 1, result.stdout.str()
    assert lines[0].startswith("lagscale: run 1 spike-ci done in 0 s: produced ")


def test_a_bad_profile_file_stops_the_session_before_any_fixture(pytester: pytest.Pytester
                                                                  ) -> None:
    _fake(pytester)
    bad = pytester.path / "garbage.yaml"
    bad.write_text("kind: steady\nduration_s: -5\n")
    pytester.makepyfile("""
        def test_run(lagscale_run):
            lagscale_run()
    """)
    result = pytester.runpytest_subprocess("--profile", str(bad), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: 'seed': missing (required for kind 'steady')*",
                                 "*'duration_s': -5 is out of range*"])
    assert "collected" not in result.stdout.str()


def test_settings_follow_the_options(pytester: pytest.Pytester) -> None:
    _fake(pytester)
    pytester.makepyfile(f"""
        from pathlib import Path

        PROFILES = Path({str(Path(__file__).resolve().parents[1] / "fixtures" / "profiles")!r})

        def test_settings(lagscale_settings):
            s = lagscale_settings
            assert (s.profile_path().resolve(), s.scale, s.lag_threshold, s.balancer,
                    s.partitions, s.out_dir) \\
                == ((PROFILES / "spike.yaml").resolve(), "full", 5000, "range", 24, Path("out"))
            assert s.label() == "spike-lt5000-range-p24"

        def test_named_profile_resolves_by_scale(lagscale_run):
            settings = lagscale_run("bursty").settings
            assert settings.profile_path().resolve() == (PROFILES / "bursty.yaml").resolve()
    """)
    result = pytester.runpytest("--lag-threshold=5000", "--balancer=range", "--partitions=24",
                                "--lagscale-scale=full", "--lagscale-out=out")
    result.assert_outcomes(passed=2)


def test_profile_option_wins_over_the_test_profile(pytester: pytest.Pytester) -> None:
    _fake(pytester)
    profile = Path(__file__).resolve().parents[1] / "fixtures" / "profiles" / "bursty-ci.yaml"
    pytester.makepyfile(f"""
        from pathlib import Path

        def test_run(lagscale_run):
            assert Path(lagscale_run("spike").settings.profile) == Path({str(profile)!r})
    """)
    result = pytester.runpytest(f"--profile={profile}")
    result.assert_outcomes(passed=1)


def test_tests_asking_for_the_same_run_share_one_result(pytester: pytest.Pytester) -> None:
    _fake(pytester)
    pytester.makepyfile("""
        import pytest

        def test_exp2(lagscale_run):
            assert lagscale_run().settings.graceful

        @pytest.mark.parametrize("graceful", [True, False])
        def test_exp6(lagscale_run, graceful):
            assert lagscale_run(graceful=graceful).settings.graceful is graceful

        def test_calls(calls):
            assert [s.label() for s in calls] == ["spike-ci", "spike-ci-sigkill"]
    """)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*= lagscale runs =*",
                                 "spike-ci: run dir lagscale-runs*spike-ci, benchmark "
                                 "lagscale-runs*spike-ci*benchmark.json (2 test(s))",
                                 "spike-ci-sigkill: run dir *(1 test(s))"])


def test_a_failed_run_is_not_repeated(pytester: pytest.Pytester) -> None:
    _fake(pytester, fail=True)
    pytester.makepyfile("""
        def test_first(lagscale_run):
            lagscale_run()

        def test_second(lagscale_run, calls):
            try:
                lagscale_run()
            finally:
                assert len(calls) == 1
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*RuntimeError: broker went away",
        "*lagscale_run: the shared run 'spike-ci' failed in test_a_failed_run_is_not_repeated.py"
        "::test_first: RuntimeError: broker went away"])


def test_bad_settings_fail_the_test_naming_the_option(pytester: pytest.Pytester) -> None:
    _fake(pytester)
    pytester.makepyfile("""
        def test_run(lagscale_run):
            lagscale_run(engine="jvm")
    """)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*lagscale_run: bad settings:",
                                 "*--engine: 'jvm' is not allowed; allowed: spark, arrow, spark-connect"])


# -- the baseline gate -----------------------------------------------------------------------
RUN_TWICE = """
    def test_exp2(lagscale_run):
        lagscale_run()

    def test_exp6(lagscale_run):
        lagscale_run(graceful=False)
"""


def test_a_regression_fails_the_session_with_a_table(pytester: pytest.Pytester) -> None:
    _fake(pytester, document="current_v1.json")
    pytester.makepyfile(RUN_TWICE)
    result = pytester.runpytest(f"--lagscale-baseline={GOLDEN / 'baseline_v1.json'}")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*spike-ci vs baseline: fail*",
        "*metric*unit*better*baseline*current*change*status*",
        "*reaction_time_s*s*lower*60*80*+33.3%*regression*",
        "*  reaction_time_s: 60 -> 80 s (+33.3%), worse than the 10.0% tolerance "
        "(lower_is_better)",
        "spike-ci: fail (baseline *baseline_v1.json)",
        "*spike-ci-sigkill vs baseline: fail*",
        # repeated at the tail, so a truncated log still names every regression
        "  spike-ci: reaction_time_s: 60 -> 80 s (+33.3%), worse than the 10.0% tolerance "
        "(lower_is_better)",
        "  spike-ci-sigkill: *",
        "lagscale: regression against --lagscale-baseline; the session fails (exit status 1)",
    ])


def test_no_regression_passes_the_session(pytester: pytest.Pytester) -> None:
    _fake(pytester, document="baseline_v1.json")
    pytester.makepyfile(RUN_TWICE)
    result = pytester.runpytest(f"--lagscale-baseline={GOLDEN / 'baseline_v1.json'}")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*spike-ci vs baseline: pass*", "spike-ci: pass (baseline *)"])
    result.stdout.no_fnmatch_line("*the session fails*")


def test_a_baseline_directory_matches_runs_by_label(pytester: pytest.Pytester) -> None:
    _fake(pytester, document="current_v1.json")
    pytester.makepyfile(RUN_TWICE)
    folder = pytester.mkdir("baselines")
    folder.joinpath("spike-ci-sigkill.json").write_text((GOLDEN / "current_v1.json").read_text())
    result = pytester.runpytest("--lagscale-baseline=baselines")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "spike-ci: no baseline (baselines*spike-ci.json does not exist)",
        "*spike-ci-sigkill vs baseline: pass*",
        "spike-ci-sigkill: pass (baseline baselines*spike-ci-sigkill.json)",
    ])


def test_a_regression_does_not_hide_failed_tests(pytester: pytest.Pytester) -> None:
    _fake(pytester, document="current_v1.json")
    pytester.makepyfile("""
        def test_exp2(lagscale_run):
            assert lagscale_run().check("reaction_time_s < 90", 120, 90, False)
    """)
    result = pytester.runpytest(f"--lagscale-baseline={GOLDEN / 'baseline_v1.json'}")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["spike-ci: fail (baseline *)"])


COMMITTED_BASELINES = sorted(
    (Path(__file__).resolve().parents[1] / "benchmarks" / "baselines").glob("*.json"))


def test_baselines_are_committed() -> None:
    assert len(COMMITTED_BASELINES) >= 10, "benchmarks/baselines/ lost its baselines"


@pytest.mark.parametrize("committed", COMMITTED_BASELINES, ids=lambda p: p.stem)
def test_a_committed_baseline_doctored_to_half_fails_the_session(
        pytester: pytest.Pytester, committed: Path) -> None:
    """The CI gate with a committed baseline whose reaction time, drain time and
    replica-seconds were halved: a run measuring the committed values is then 2x worse, and
    the session must fail with the regression table; the undoctored baseline passes it."""
    import json

    from pytest_lagscale.report.baselines import GATED_2X

    doc = json.loads(committed.read_text())
    gated = [name for name, entry in doc["metrics"].items()
             if name in GATED_2X and entry.get("value")]   # in the table's order
    assert gated, f"{committed.name} gates none of {GATED_2X}"
    _fake(pytester, document=str(committed))
    pytester.makepyfile("""
        def test_exp(lagscale_run):
            lagscale_run()
    """)
    honest = pytester.mkdir("honest")
    honest.joinpath("spike-ci.json").write_text(committed.read_text())
    passed = pytester.runpytest("--lagscale-baseline=honest")
    assert passed.ret == pytest.ExitCode.OK, passed.stdout.str()
    passed.stdout.fnmatch_lines(["spike-ci: pass (baseline honest*spike-ci.json)"])

    for name in gated:
        doc["metrics"][name]["value"] /= 2
    doctored = pytester.mkdir("doctored")
    doctored.joinpath("spike-ci.json").write_text(json.dumps(doc))
    result = pytester.runpytest("--lagscale-baseline=doctored")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*spike-ci vs baseline: fail*", "*metric*unit*better*baseline*current*change*status*"]
        + [f"*{name}*+100.0%*regression*" for name in gated]
        + [f"*  {name}: * (+100.0%), worse than the *" for name in gated]
        + ["spike-ci: fail (baseline doctored*spike-ci.json)",
           "lagscale: regression against --lagscale-baseline; the session fails (exit status 1)"])


def test_an_unprefixed_run_option_still_works_and_warns(pytester: pytest.Pytester) -> None:
    """``--partitions`` is the deprecated spelling of ``--lagscale-partitions`` (pytest-profiling
    also defines ``--profile``): its value arrives, with a deprecation warning."""
    pytester.makepyfile(test_x="""
        def test_x(request):
            assert request.config.getoption("partitions") == 12
            assert request.config.getoption("graceful") is False
    """)
    result = pytester.runpytest_subprocess("--partitions=12", "--no-graceful",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*PytestDeprecationWarning: lagscale: --partitions is deprecated: use "
        "--lagscale-partitions*",
        "*PytestDeprecationWarning: lagscale: --graceful is deprecated: use --lagscale-graceful*"])


@pytest.mark.parametrize(("args", "active"), [
    pytest.param([], False, id="no-lagscale-option"),
    pytest.param(["--lagscale-partitions=4"], True, id="a-lagscale-option"),
])
def test_the_plugin_touches_nothing_process_wide_unless_used(
        pytester: pytest.Pytester, args: list[str], active: bool) -> None:
    """No SIGTERM/SIGHUP handler and no shared reconciliation worker in a session that uses no
    lagscale option or fixture (pytest-xdist's habit); a lagscale option turns both on."""
    pytester.makepyfile(test_x=f"""
        import signal
        from pytest_lagscale.analyze import reconcile_worker

        def test_x():
            assert (signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL) is {active}
            assert (signal.getsignal(signal.SIGHUP) is not signal.SIG_DFL) is {active}
            assert reconcile_worker.shared_enabled() is {active}
    """)
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
