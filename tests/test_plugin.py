"""The pytest plugin through pytester: --help contract, markers, option conflicts, import cost."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest_plugins = ["pytester"]


def test_help_lists_the_kafka_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "lag-based autoscaling experiments (pytest-lagscale):",
        "*--kafka={embedded,testcontainers,external}*",
        "*--kafka-bootstrap=HOST:PORT*",
        "*--kafka-config=KEY=VALUE*",
    ])
    assert result.ret == 0


def test_markers_are_registered_for_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.acceptance
        @pytest.mark.experiment(2)
        @pytest.mark.integration
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
