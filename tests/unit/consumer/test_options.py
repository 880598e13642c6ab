"""Flags, environment fallbacks, validation messages and librdkafka settings."""

from __future__ import annotations

import pytest

from pytest_lagscale.contract.errors import ConfigError
from spark_consumer.group import consumer_config
from spark_consumer.options import FLAGS, parse_options

REQUIRED = ["--bootstrap", "127.0.0.1:9092", "--store", "/tmp/store"]


def test_defaults_follow_the_design_contract() -> None:
    opts = parse_options(REQUIRED, env={})
    assert (opts.topic, opts.group, opts.balancer, opts.engine, opts.commit) == (
        "events", "enrich", "cooperative-sticky", "spark", "manual")
    assert (opts.process_ms, opts.inflight, opts.max_batch) == (5.0, 10, 2000)
    assert opts.session_timeout_s == 10.0 and opts.remote_assignor is None
    assert opts.metrics_host == "127.0.0.1" and opts.metrics_port == 0
    assert opts.replica_id  # <hostname>-<pid>


def test_every_flag_has_an_env_equivalent_and_the_flag_wins() -> None:
    env = {"LAGSCALE_BOOTSTRAP": "h:1", "LAGSCALE_STORE": "/s", "LAGSCALE_INFLIGHT": "7",
           "LAGSCALE_BALANCER": "range", "LAGSCALE_DRAIN_TIMEOUT": "3.5"}
    opts = parse_options(["--inflight", "9"], env=env)
    assert (opts.bootstrap, str(opts.store), opts.inflight, opts.balancer,
            opts.drain_timeout_s) == ("h:1", "/s", 9, "range", 3.5)
    assert all(f.env == "LAGSCALE_" + f.name.upper().replace("-", "_") for f in FLAGS)


def test_all_problems_are_reported_at_once_with_flag_value_range_and_fix() -> None:
    with pytest.raises(ConfigError) as info:
        parse_options(["--inflight", "0", "--process-ms", "-1", "--balancer", "sticky",
                       "--drain-timeout", "0"], env={"LAGSCALE_MAX_BATCH": "many"})
    assert info.value.problems == [
        "--balancer: 'sticky' is not one of cooperative-sticky, range, roundrobin, consumer; "
        "pass one of those",
        "--process-ms: '-1' is not a number of ms in 0..60000; pass a value in that range",
        "--inflight: '0' is not a whole number of records in 1..100000; pass a value in that "
        "range",
        "--drain-timeout: '0' is not a number of seconds in (0, 3600]; pass a value in that "
        "range",
        "--max-batch: 'many' is not a whole number of records in 1..1000000 (from "
        "LAGSCALE_MAX_BATCH); pass a value in that range",
        "--bootstrap: missing; pass --bootstrap or set LAGSCALE_BOOTSTRAP",
        "--store: missing; pass --store or set LAGSCALE_STORE",
    ]


@pytest.mark.parametrize("argv, expected", [
    pytest.param(["--balancer", "consumer", "--session-timeout", "6"],
                 "--session-timeout: '6' is not allowed with --balancer consumer (KIP-848 "
                 "session timeouts are broker settings); drop --session-timeout or choose a "
                 "classic balancer", id="session-timeout-with-kip848"),
    pytest.param(["--balancer", "range", "--remote-assignor", "uniform"],
                 "--remote-assignor: 'uniform' is only valid with --balancer consumer, not "
                 "'range'; drop --remote-assignor or pass --balancer consumer",
                 id="remote-assignor-with-classic"),
])
def test_conflicting_flags_name_both(argv: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_options(REQUIRED + argv, env={})
    assert info.value.problems == [expected]


def test_kip848_config_has_remote_assignor_and_no_classic_only_settings() -> None:
    opts = parse_options(REQUIRED + ["--balancer", "consumer", "--remote-assignor", "range"],
                         env={})
    conf = consumer_config(opts)
    assert conf["group.protocol"] == "consumer" and conf["group.remote.assignor"] == "range"
    for classic_only in ("partition.assignment.strategy", "session.timeout.ms",
                         "heartbeat.interval.ms"):
        assert classic_only not in conf


@pytest.mark.parametrize("balancer", ["range", "roundrobin", "cooperative-sticky"])
def test_classic_config_sets_strategy_and_session_timeout(balancer: str) -> None:
    opts = parse_options(REQUIRED + ["--balancer", balancer, "--session-timeout", "6",
                                     "--instance-id", "replica-0"], env={})
    conf = consumer_config(opts)
    assert conf["partition.assignment.strategy"] == balancer
    assert (conf["session.timeout.ms"], conf["heartbeat.interval.ms"]) == (6000, 1000)
    assert conf["group.instance.id"] == "replica-0" and "group.protocol" not in conf


@pytest.mark.parametrize("commit, auto", [("manual", False), ("auto", True)])
def test_offsets_are_never_stored_automatically(commit: str, auto: bool) -> None:
    conf = consumer_config(parse_options(REQUIRED + ["--commit", commit], env={}))
    assert conf["enable.auto.commit"] is auto
    assert conf["enable.auto.offset.store"] is False  # only processed offsets are stored


def test_max_poll_interval_exceeds_the_longest_batch() -> None:
    opts = parse_options(REQUIRED + ["--max-batch", "100000", "--process-ms", "50",
                                     "--inflight", "1"], env={})
    assert opts.max_batch_s == 5000.0
    assert consumer_config(opts)["max.poll.interval.ms"] > 5000 * 1000


def test_help_lists_every_flag_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse_options(["--help"], env={})
    out = capsys.readouterr().out
    assert info.value.code == 0
    for flag in FLAGS:
        assert f"--{flag.name}" in out
    assert "(default: cooperative-sticky)" in out and "LAGSCALE_FOO_BAR" in out
