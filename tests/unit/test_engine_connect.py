"""The spark-connect engine without a server: flag validation, the engine registry, the
engine's pure parts and the Spark Connect server's busy sampler."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pytest_lagscale.contract import flags
from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.spark_connect import BUSY_METRIC, BusySampler, SparkConnectServer
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import REGISTRY, Engine, make_engine
from spark_consumer.engine.connect import (INITIAL_BACKOFF_MS, MAX_BACKOFF_MS,
                                           SparkConnectEngine, retries_within, shown)
from spark_consumer.options import DEFAULT_DIMENSION, parse_options

REQUIRED = ["--bootstrap", "127.0.0.1:9092", "--store", "/tmp/store"]
URL = "sc://spark.example:15002"


@pytest.fixture(scope="module")
def dimension() -> pa.Table:
    return load_dimension(DEFAULT_DIMENSION)


# -- --spark-remote ----------------------------------------------------------------------------
@pytest.mark.parametrize("url", [
    pytest.param("sc://127.0.0.1:15002", id="ipv4"),
    pytest.param("sc://spark-connect.ns.svc.cluster.local:443", id="dns-name"),
    pytest.param("sc://[::1]:15002", id="ipv6"),
    pytest.param("sc://h:1/;token=abc;use_ssl=true", id="params"),
    pytest.param("sc://h:65535", id="highest-port"),
])
def test_spark_remote_accepts_a_connect_url(url: str) -> None:
    opts = parse_options([*REQUIRED, "--engine", "spark-connect", "--spark-remote", url], env={})
    assert (opts.engine, opts.spark_remote) == ("spark-connect", url)


@pytest.mark.parametrize("url", [
    pytest.param("sc://h", id="no-port"),
    pytest.param("sc://h:0", id="port-0"),
    pytest.param("sc://h:65536", id="port-above-65535"),
    pytest.param("http://h:15002", id="not-sc-scheme"),
    pytest.param("sc://h:15002/path", id="path"),
    pytest.param("sc://h:15002/;token", id="param-without-value"),
    pytest.param("sc://-h:15002", id="host-starting-with-dash"),
])
def test_spark_remote_rejects_anything_else_naming_the_form(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options([*REQUIRED, "--engine", "spark-connect", "--spark-remote", url], env={})
    allowed = ("a Spark Connect URL sc://HOST:PORT (PORT 1-65535), optionally with "
               "/;KEY=VALUE parameters separated by ;")
    assert info.value.problems == [f"--spark-remote: {url!r} is not {allowed}; pass {allowed}"]


def test_spark_connect_engine_requires_spark_remote() -> None:
    with pytest.raises(ConfigError) as info:
        parse_options([*REQUIRED, "--engine", "spark-connect"], env={})
    assert info.value.problems == [
        "--spark-remote: missing with --engine spark-connect; pass --spark-remote "
        "sc://HOST:PORT or set LAGSCALE_SPARK_REMOTE"]


def test_spark_remote_may_come_from_the_environment() -> None:
    opts = parse_options(REQUIRED, env={"LAGSCALE_ENGINE": "spark-connect",
                                        "LAGSCALE_SPARK_REMOTE": URL})
    assert (opts.engine, opts.spark_remote) == ("spark-connect", URL)


@pytest.mark.parametrize("engine_args, engine", [
    pytest.param(["--engine", "arrow"], "arrow", id="arrow"),
    pytest.param([], "spark", id="default-spark"),
])
def test_spark_remote_is_refused_with_another_engine(engine_args: list[str], engine: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options([*REQUIRED, *engine_args, "--spark-remote", URL], env={})
    assert info.value.problems == [
        f"--spark-remote: {URL!r} is only valid with --engine spark-connect, not {engine!r}; "
        "drop --spark-remote or pass --engine spark-connect"]


def test_a_deployment_mapping_carries_its_engine_into_the_conflict_check() -> None:
    given = {"--engine": "arrow", "--spark-remote": URL}
    assert [c.option for c in flags.conflicts(given, "range")] == ["--spark-remote"]
    assert flags.conflicts({**given, "--engine": "spark-connect"}, "range") == []
    assert flags.conflicts(["--spark-remote"], "range", engine="spark-connect") == []


# -- registry ----------------------------------------------------------------------------------
def test_the_registry_and_the_flag_table_name_the_same_engines_in_order() -> None:
    assert tuple(REGISTRY) == flags.ENGINES
    assert flags.FLAG_BY_OPTION["--engine"].default == "spark"


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_registered_engine_builds_without_starting_and_is_an_engine(
        name: str, dimension: pa.Table) -> None:
    engine = make_engine(name, dimension, "replica-1", remote=URL)
    assert isinstance(engine, Engine) and engine.name == name


def test_the_connect_engine_gets_the_remote_and_the_replica_id(dimension: pa.Table) -> None:
    engine = make_engine("spark-connect", dimension, "replica-7", remote=URL)
    assert isinstance(engine, SparkConnectEngine)
    assert (engine.remote, engine._app_name) == (URL, "replica-7")
    assert REGISTRY["spark-connect"].needs_pandas and not REGISTRY["arrow"].needs_pandas


def test_an_engine_that_takes_a_remote_is_not_built_without_one(dimension: pa.Table) -> None:
    with pytest.raises(ValueError, match=r"^--spark-remote: missing with --engine spark-connect; "
                                         r"pass --spark-remote sc://HOST:PORT$"):
        make_engine("spark-connect", dimension)


def test_an_unknown_engine_lists_the_registered_ones(dimension: pa.Table) -> None:
    with pytest.raises(ValueError, match=r"^--engine: 'flink' is not one of spark, arrow, "
                                         r"spark-connect; pass one of those$"):
        make_engine("flink", dimension)


# -- the engine's pure parts -------------------------------------------------------------------
def test_the_engine_refuses_a_dimension_whose_buckets_are_not_dense(dimension: pa.Table) -> None:
    shuffled = dimension.take(pa.array([1, 0, *range(2, dimension.num_rows)]))
    with pytest.raises(ValueError, match=r"^dimension: buckets are not exactly 0\.\.n-1"):
        SparkConnectEngine(shuffled, URL)


def test_enrich_before_start_says_to_start(dimension: pa.Table) -> None:
    engine = SparkConnectEngine(dimension, URL)
    with pytest.raises(RuntimeError, match=r"^spark-connect engine: not started; call start"):
        engine.enrich(dimension)
    engine.stop()  # idempotent before start


@pytest.mark.parametrize("timeout_s, retries", [
    pytest.param(0.0, 0, id="no-wait"),
    pytest.param(0.1, 1, id="one-initial-backoff"),
    pytest.param(3.0, 5, id="doubling-0.1-to-1.6"),
    pytest.param(30.0, 19, id="then-2s-steps"),
])
def test_retries_cover_the_connect_timeout(timeout_s: float, retries: int) -> None:
    assert retries_within(timeout_s) == retries
    waits = [min(INITIAL_BACKOFF_MS * 2 ** i, MAX_BACKOFF_MS) for i in range(retries)]
    assert sum(waits) >= timeout_s * 1000  # waits at least the timeout
    assert retries == 0 or sum(waits[:-1]) < timeout_s * 1000  # and one retry less would not


def test_messages_hide_a_token_in_the_url() -> None:
    assert shown("sc://h:1/;use_ssl=true;token=s3cr3t") == "'sc://h:1/;use_ssl=true;token=***'"
    assert shown(URL) == repr(URL)


# -- the server's busy sampler -----------------------------------------------------------------
def test_busy_ratio_is_cpu_seconds_per_wall_second_over_the_cores() -> None:
    cpu, clock = [10.0], FakeClock(100.0)
    sampler = BusySampler(lambda: cpu[0], cores=2, clock=clock)
    assert sampler.sample() is None  # no time passed since construction
    cpu[0] += 3.0
    clock.advance(2.0)
    assert sampler.sample() == 0.75
    cpu[0] += 8.0
    clock.advance(4.0)
    assert sampler.sample() == 1.0  # both cores busy
    assert BUSY_METRIC == "spark_connect_server_busy_ratio"


def test_busy_sampler_needs_a_core() -> None:
    with pytest.raises(ValueError, match=r"^cores: 0 is below 1; pass the cores available$"):
        BusySampler(lambda: 0.0, cores=0, clock=FakeClock())


def test_the_server_has_no_url_pid_or_busy_ratio_before_start() -> None:
    server = SparkConnectServer()
    with pytest.raises(RuntimeError, match=r"^spark-connect: not started; call start\(\) or use"):
        _ = server.url
    with pytest.raises(RuntimeError, match=r"^spark-connect: not started; call start\(\) first"):
        _ = server.pid
    assert server.busy_ratio() is None
    assert server.stop() == "not_started"
