"""Command-line flags of the replica, their environment equivalents and validation.

The flags are the contract's table, :mod:`pytest_lagscale.contract.flags` (the harness checks a
Deployment's args against the same table). Every flag ``--foo-bar`` falls back to the
environment variable ``LAGSCALE_FOO_BAR`` and then to its default. All values are validated
before anything starts, and every problem is reported at once, one line each, naming the flag,
the value, the allowed set or range with its unit and where the value came from (``main``
turns them into exit code 2; nothing has joined the group).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.contract.flags import (BALANCERS, COMMIT_MODES, COOPERATIVE_BALANCERS,
                                            ENGINES, ENV_PREFIX, FLAG_BY_DEST, FLAGS, GROUP_TYPES,
                                            REMOTE_ASSIGNORS, SHARE_OFFSET_RESETS, Flag,
                                            conflicts)

__all__ = ["BALANCERS", "COMMIT_MODES", "COOPERATIVE_BALANCERS", "DEFAULT_DIMENSION", "ENGINES",
           "ENV_PREFIX", "FLAGS", "GROUP_TYPES", "REMOTE_ASSIGNORS", "SHARE_OFFSET_RESETS",
           "ConsumerOptions", "Flag", "build_parser", "parse_options", "resolve"]

DEFAULT_DIMENSION = Path(__file__).resolve().parent / "data" / "segments.csv"  # package data


@dataclass(frozen=True)
class ConsumerOptions:
    """Validated settings of one replica (units in the field names)."""

    bootstrap: str
    topic: str
    group: str
    balancer: str
    remote_assignor: str | None
    session_timeout_s: float | None
    process_ms: float
    inflight: int
    commit: str
    drain_timeout_s: float
    metrics_host: str
    metrics_port: int
    port_file: Path | None
    store: Path
    instance_id: str | None
    max_batch: int
    batch_wait_ms: float
    trigger_interval_s: float
    replica_id: str
    engine: str
    event_log: Path | None
    dimension: Path
    log_batches: bool = False
    spark_remote: str | None = None
    sink: str = "parquet"
    output_topic: str | None = None
    group_type: str = "consumer"
    share_offset_reset: str = "earliest"

    @property
    def cooperative(self) -> bool:
        """True when rebalance callbacks carry incremental partition lists."""
        return self.balancer in COOPERATIVE_BALANCERS

    @property
    def max_batch_s(self) -> float:
        """Longest simulated write of one batch: ``ceil(max_batch / inflight) * process_ms``."""
        return math.ceil(self.max_batch / self.inflight) * self.process_ms / 1000.0


def build_parser(prog: str = "spark-consumer") -> argparse.ArgumentParser:
    """The argument parser; values stay strings until :func:`resolve` validates them."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="One replica of consumer group `enrich`: consume, enrich, write, commit",
        epilog="Each flag --foo-bar falls back to the environment variable LAGSCALE_FOO_BAR",
    )
    for flag in FLAGS:
        parser.add_argument(flag.option, dest=flag.dest, metavar=flag.metavar,
                            help=flag.help, default=None)
    return parser


def resolve(ns: argparse.Namespace, env: Mapping[str, str] | None = None) -> ConsumerOptions:
    """Merge flags, environment and defaults, and validate everything.

    Raises:
        ConfigError: one line per bad value or conflicting pair, all at once.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    raws: dict[str, str] = {}
    problems: list[str] = []
    for flag in FLAGS:
        raw, source = getattr(ns, flag.dest), flag.option
        if raw is None and env.get(flag.env):
            raw, source = env[flag.env], flag.env
        if raw is None:
            values[flag.dest] = flag.default
            continue
        try:
            values[flag.dest] = flag.parse(raw)
        except ValueError:
            where = "" if source.startswith("--") else f" (from {source})"
            problems.append(f"{flag.option}: {raw!r} is not {flag.allowed}{where}; "
                            f"{_fix(flag.allowed)}")
        raws[flag.dest] = raw
    problems += _cross_checks(values, raws)
    if problems:
        raise ConfigError(problems)
    return _finish(values)


def _fix(allowed: str) -> str:
    if allowed.startswith("one of"):
        return "pass one of those"
    if ".." in allowed or "(0, " in allowed:
        return "pass a value in that range"
    return f"pass {allowed}"


def _cross_checks(values: dict[str, Any], raws: dict[str, str]) -> list[str]:
    problems = []
    for flag in FLAGS:
        if flag.required and flag.dest not in raws:
            problems.append(f"{flag.option}: missing; pass {flag.option} or set {flag.env}")
    given = {FLAG_BY_DEST[dest].option: raw for dest, raw in raws.items()}
    balancer, engine = values.get("balancer"), values.get("engine")
    for c in conflicts(given, balancer, engine) if balancer is not None else ():  # else: reported
        problems.append(f"{c.option}: {given[c.option]!r} {c.reason}; {c.fix}")
    if engine == "spark-connect" and "spark_remote" not in raws:
        problems.append("--spark-remote: missing with --engine spark-connect; pass --spark-remote "
                        "sc://HOST:PORT or set LAGSCALE_SPARK_REMOTE")
    if values.get("sink") == "topic" and "output_topic" not in raws:
        problems.append("--output-topic: missing with --sink topic; pass --output-topic NAME or "
                        "set LAGSCALE_OUTPUT_TOPIC")
    return problems


def _finish(v: dict[str, Any]) -> ConsumerOptions:
    classic = v["balancer"] != "consumer"
    return ConsumerOptions(
        bootstrap=v["bootstrap"], topic=v["topic"], group=v["group"], balancer=v["balancer"],
        remote_assignor=None if classic else (v["remote_assignor"] or "uniform"),
        session_timeout_s=(v["session_timeout"] or 10.0) if classic else None,
        process_ms=v["process_ms"], inflight=v["inflight"], commit=v["commit"],
        drain_timeout_s=v["drain_timeout"], metrics_host=v["metrics_host"],
        metrics_port=v["metrics_port"], port_file=v["port_file"], store=v["store"],
        instance_id=v["instance_id"], max_batch=v["max_batch"],
        batch_wait_ms=v["batch_wait_ms"], trigger_interval_s=v["trigger_interval"],
        replica_id=v["replica_id"] or _default_replica_id(), engine=v["engine"],
        event_log=v["event_log"], dimension=v["dimension"] or DEFAULT_DIMENSION,
        log_batches=v["log_batches"], spark_remote=v["spark_remote"], sink=v["sink"],
        output_topic=v["output_topic"], group_type=v["group_type"],
        share_offset_reset=v["share_offset_reset"],
    )


def _default_replica_id() -> str:
    host = re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname())[:40] or "replica"
    if not host[0].isalnum():
        host = "r" + host
    return f"{host}-{os.getpid()}"


def parse_options(argv: Sequence[str] | None = None,
                  env: Mapping[str, str] | None = None) -> ConsumerOptions:
    """Parse ``argv`` (default ``sys.argv[1:]``) with ``env`` fallbacks.

    Raises:
        ConfigError: invalid or conflicting values.
        SystemExit: ``--help`` (code 0) or an unknown flag (code 2, from argparse).
    """
    return resolve(build_parser().parse_args(argv), env)
