"""Command-line flags of the replica, their environment equivalents and validation.

Every flag ``--foo-bar`` falls back to the environment variable ``LAGSCALE_FOO_BAR`` and then
to its default. All values are validated before anything starts, and every problem is reported
at once, one line each, naming the flag, the value, the allowed set or range with its unit and
where the value came from (``main`` turns them into exit code 2; nothing has joined the group).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pytest_lagscale.contract.errors import ConfigError

ENV_PREFIX = "LAGSCALE_"
BALANCERS = ("cooperative-sticky", "range", "roundrobin", "consumer")
COOPERATIVE_BALANCERS = ("cooperative-sticky", "consumer")
REMOTE_ASSIGNORS = ("uniform", "range")
COMMIT_MODES = ("manual", "auto")
ENGINES = ("spark", "arrow")
DEFAULT_DIMENSION = Path(__file__).resolve().parent / "data" / "segments.csv"  # package data
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


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
    replica_id: str
    engine: str
    event_log: Path | None
    dimension: Path
    log_batches: bool = False

    @property
    def cooperative(self) -> bool:
        """True when rebalance callbacks carry incremental partition lists."""
        return self.balancer in COOPERATIVE_BALANCERS

    @property
    def max_batch_s(self) -> float:
        """Longest simulated write of one batch: ``ceil(max_batch / inflight) * process_ms``."""
        return math.ceil(self.max_batch / self.inflight) * self.process_ms / 1000.0


@dataclass(frozen=True)
class _Flag:
    name: str
    metavar: str | None
    help: str
    parse: Callable[[str], Any]
    default: Any = None
    allowed: str = ""

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper().replace("-", "_")

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


def _int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not lo <= value <= hi:
            raise ValueError
        return value

    return parse


def _float(lo: float, hi: float, *, lo_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text)
        if math.isnan(value) or value > hi or value < lo or (lo_open and value == lo):
            raise ValueError
        return value

    return parse


def _choice(choices: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError
        return text

    return parse


def _ident(text: str) -> str:
    if not _ID_RE.match(text):
        raise ValueError
    return text


def _nonempty(text: str) -> str:
    if not text.strip():
        raise ValueError
    return text.strip()


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low not in ("1", "0", "true", "false", "yes", "no"):
        raise ValueError
    return low in ("1", "true", "yes")


def _path(text: str) -> Path:
    return Path(_nonempty(text))


FLAGS: tuple[_Flag, ...] = (
    _Flag("bootstrap", "HOST:PORT", "Kafka bootstrap servers, comma-separated (required)",
          _nonempty, allowed="a non-empty host:port list"),
    _Flag("topic", "NAME", "Topic to consume (default: events)", _nonempty, "events",
          "a non-empty topic name"),
    _Flag("group", "NAME", "Consumer group id (default: enrich)", _nonempty, "enrich",
          "a non-empty group id"),
    _Flag("balancer", "{" + ",".join(BALANCERS) + "}",
          "Rebalance protocol: classic eager range or roundrobin, classic cooperative-sticky "
          "or KIP-848 consumer (default: cooperative-sticky)",
          _choice(BALANCERS), "cooperative-sticky", "one of " + ", ".join(BALANCERS)),
    _Flag("remote-assignor", "{uniform,range}",
          "Broker-side assignor, only with --balancer consumer (default: uniform)",
          _choice(REMOTE_ASSIGNORS), None, "one of uniform, range"),
    _Flag("session-timeout", "SECONDS",
          "Classic-group session timeout, not allowed with --balancer consumer (default: 10)",
          _float(1.0, 3600.0), None, "a number of seconds in 1..3600"),
    _Flag("process-ms", "MS", "Simulated downstream write time per record (default: 5)",
          _float(0.0, 60000.0), 5.0, "a number of ms in 0..60000"),
    _Flag("inflight", "RECORDS", "Records written downstream concurrently (default: 10)",
          _int(1, 100000), 10, "a whole number of records in 1..100000"),
    _Flag("commit", "{manual,auto}",
          "Commit processed offsets synchronously after each batch (manual) or store them for "
          "the auto-committer (auto) (default: manual)", _choice(COMMIT_MODES), "manual",
          "one of manual, auto"),
    _Flag("drain-timeout", "SECONDS",
          "Time allowed from SIGTERM to exit, past it the replica exits 1 (default: 25)",
          _float(0.0, 3600.0, lo_open=True), 25.0, "a number of seconds in (0, 3600]"),
    _Flag("metrics-host", "ADDRESS", "Address of the /metrics and /ready server "
          "(default: 127.0.0.1)", _nonempty, "127.0.0.1", "a non-empty address"),
    _Flag("metrics-port", "PORT", "Port of the /metrics and /ready server, 0 = ephemeral "
          "(default: 0)", _int(0, 65535), 0, "a port number in 0..65535"),
    _Flag("port-file", "PATH", "File receiving the bound metrics port (default: none)",
          _path, None, "a path"),
    _Flag("store", "PATH", "Directory of the downstream Parquet store (required)", _path,
          None, "a directory path"),
    _Flag("instance-id", "ID", "Static membership group.instance.id (default: none)",
          _ident, None, "1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit"),
    _Flag("max-batch", "RECORDS", "Most records per micro-batch (default: 2000)",
          _int(1, 1000000), 2000, "a whole number of records in 1..1000000"),
    _Flag("batch-wait-ms", "MS", "Longest wait for a micro-batch to fill (default: 500)",
          _float(1.0, 60000.0), 500.0, "a number of ms in 1..60000"),
    _Flag("replica-id", "ID", "Name in metrics, event log, store rows and client.id "
          "(default: <hostname>-<pid>)", _ident, None,
          "1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit"),
    _Flag("engine", "{spark,arrow}", "Enrichment engine (default: spark)", _choice(ENGINES),
          "spark", "one of spark, arrow"),
    _Flag("event-log", "PATH", "JSONL event log to append to (default: none)", _path, None,
          "a path"),
    _Flag("log-batches", "BOOL", "Write one batch event per micro-batch with its timings "
          "(default: false)", _bool, False, "one of true, false, 1, 0, yes, no"),
    _Flag("dimension", "PATH", "Dimension table CSV with bucket,segment,region "
          "(default: fixtures/dimensions/segments.csv)", _path, DEFAULT_DIMENSION, "a path"),
)
_FLAG_BY_DEST = {f.dest: f for f in FLAGS}


def build_parser(prog: str = "spark-consumer") -> argparse.ArgumentParser:
    """The argument parser; values stay strings until :func:`resolve` validates them."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="One replica of consumer group `enrich`: consume, enrich, write, commit",
        epilog="Each flag --foo-bar falls back to the environment variable LAGSCALE_FOO_BAR",
    )
    for flag in FLAGS:
        parser.add_argument("--" + flag.name, dest=flag.dest, metavar=flag.metavar,
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
        raw, source = getattr(ns, flag.dest), f"--{flag.name}"
        if raw is None and env.get(flag.env):
            raw, source = env[flag.env], f"{flag.env}"
        if raw is None:
            values[flag.dest] = flag.default
            continue
        try:
            values[flag.dest] = flag.parse(raw)
        except ValueError:
            where = "" if source.startswith("--") else f" (from {source})"
            problems.append(f"--{flag.name}: {raw!r} is not {flag.allowed}{where}; "
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
    for required in ("bootstrap", "store"):
        if required not in raws:
            env = _FLAG_BY_DEST[required].env
            problems.append(f"--{required}: missing; pass --{required} or set {env}")
    balancer = values.get("balancer")
    if balancer == "consumer" and "session_timeout" in raws:
        problems.append(
            f"--session-timeout: {raws['session_timeout']!r} is not allowed with "
            "--balancer consumer (KIP-848 session timeouts are broker settings); drop "
            "--session-timeout or choose a classic balancer")
    if balancer != "consumer" and "remote_assignor" in raws:
        problems.append(
            f"--remote-assignor: {raws['remote_assignor']!r} is only valid with --balancer "
            f"consumer, not {balancer!r}; drop --remote-assignor or pass --balancer consumer")
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
        batch_wait_ms=v["batch_wait_ms"],
        replica_id=v["replica_id"] or _default_replica_id(), engine=v["engine"],
        event_log=v["event_log"], dimension=v["dimension"], log_batches=v["log_batches"],
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
