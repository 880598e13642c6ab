"""The consumer replica's command line (DESIGN.md "Consumer replica contract"), validated.

Flags come after ``python -m spark_consumer`` (or ``spark-consumer``), as ``--flag value`` or
``--flag=value``. A problem's subject is ``<container path>.args[--flag]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_lagscale.config._problems import MISSING, Problems, nearest

BALANCERS = ("cooperative-sticky", "range", "roundrobin", "consumer")
COMMIT_MODES = ("manual", "auto")
ENGINES = ("spark", "arrow")


@dataclass(frozen=True)
class ReplicaArgs:
    """The replica program's flags.

    Attributes:
        bootstrap: ``--bootstrap`` broker list (may hold an unexpanded ``$(VAR)``).
        topic: ``--topic``.
        group: ``--group`` (consumer group id).
        balancer: ``--balancer``: cooperative-sticky, range, roundrobin or consumer (KIP-848).
        process_ms: ``--process-ms`` simulated work per record in milliseconds (>= 0).
        inflight: ``--inflight`` records in flight per replica (>= 1).
        commit: ``--commit``: manual (after the batch is written) or auto.
        drain_timeout_s: ``--drain-timeout`` seconds allowed for the SIGTERM drain (> 0).
        metrics_port: ``--metrics-port`` for /metrics and /ready (1..65535).
        store: ``--store`` path of the downstream Parquet store.
        instance_id: ``--instance-id`` for static membership (None = dynamic).
        engine: ``--engine``: spark (default) or arrow.
        flags: every flag as written (after ``$(VAR)`` expansion).
    """

    bootstrap: str
    topic: str
    group: str
    balancer: str
    process_ms: float
    inflight: int
    commit: str
    drain_timeout_s: float
    metrics_port: int
    store: str
    instance_id: str | None = None
    engine: str = "spark"
    flags: Mapping[str, str] = field(default_factory=dict)


def _text(value: str) -> str | None:
    return value if value.strip() else None


def _enum(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    return lambda value: value if value in choices else None


def _number(lo: float, strict: bool, kind: type) -> Callable[[str], Any]:
    def parse(value: str) -> Any:
        try:
            number = kind(value)
        except ValueError:
            return None
        ok = number > lo if strict else number >= lo
        return number if ok and number == number and number != float("inf") else None
    return parse


def _port(value: str) -> int | None:
    number = _number(1, False, int)(value)
    return number if number is not None and number <= 65535 else None


# flag -> (field, parser, allowed text, example, required)
FLAGS: dict[str, tuple[str, Callable[[str], Any], str, str, bool]] = {
    "--bootstrap": ("bootstrap", _text, "a broker list host:port[,host:port]", "kafka:9092", True),
    "--topic": ("topic", _text, "a topic name", "events", True),
    "--group": ("group", _text, "a consumer group id", "enrich", True),
    "--balancer": ("balancer", _enum(BALANCERS), "one of " + ", ".join(BALANCERS), "cooperative-sticky", True),
    "--process-ms": ("process_ms", _number(0, False, float), "a number >= 0 (milliseconds per record)", "5", True),
    "--inflight": ("inflight", _number(1, False, int), "an integer >= 1 (records)", "500", True),
    "--commit": ("commit", _enum(COMMIT_MODES), "one of manual, auto", "manual", True),
    "--drain-timeout": ("drain_timeout_s", _number(0, True, float), "a number > 0 (seconds)", "30", True),
    "--metrics-port": ("metrics_port", _port, "an integer in [1, 65535]", "9400", True),
    "--store": ("store", _text, "a directory path", "/data/store", True),
    "--instance-id": ("instance_id", _text, "a static member id", "$(POD_NAME)", False),
    "--engine": ("engine", _enum(ENGINES), "one of spark, arrow", "spark", False),
}


def collect_replica_args(argv: Sequence[str], path: str, p: Problems) -> ReplicaArgs | None:
    """Parse the flags after the program in ``argv``; None (with problems recorded) when invalid.

    Args:
        argv: ``command + args`` after ``$(VAR)`` expansion.
        path: key path of the container's ``args`` for messages.
        p: where problems are recorded.
    """
    flags = _split_flags(argv, path, p)
    if flags is None:
        return None
    before = len(p.lines)
    values: dict[str, Any] = {}
    for flag, (name, parse, allowed, example, required) in FLAGS.items():
        subject = f"{path}[{flag}]"
        if flag not in flags:
            if required:
                p.add(subject, MISSING, allowed, f"add '{flag}={example}' to args")
            continue
        value = parse(flags[flag])
        if value is None:
            p.add(subject, flags[flag], allowed, f"write e.g. '{flag}={example}'")
        values[name] = value
    if len(p.lines) != before:
        return None
    return ReplicaArgs(**values, flags=MappingProxyType(dict(flags)))


def _split_flags(argv: Sequence[str], path: str, p: Problems) -> dict[str, str] | None:
    start = program_end(argv)
    if start is None:
        p.add(path, list(argv)[:4], "a command running 'python -m spark_consumer' or 'spark-consumer'",
              "set command: [python, -m, spark_consumer]")
        return None
    flags: dict[str, str] = {}
    rest = list(argv[start:])
    i = 0
    while i < len(rest):
        token = str(rest[i])
        name, eq, value = token.partition("=")
        if name not in FLAGS:
            guess = nearest(name, FLAGS) if name.startswith("-") else None
            fix = f"rename it to '{guess}'" if guess else f"remove it (known flags: {', '.join(FLAGS)})"
            p.add(f"{path}[{token}]", token, "a flag of the replica contract", fix)
            takes_next = not eq and i + 1 < len(rest) and not str(rest[i + 1]).startswith("-")
            i += 2 if takes_next else 1
            continue
        if not eq:
            if i + 1 >= len(rest):
                p.add(f"{path}[{name}]", MISSING, FLAGS[name][2], f"give it a value: '{name}={FLAGS[name][3]}'")
                break
            value = str(rest[i + 1])
            i += 1
        flags[name] = value
        i += 1
    return flags


def program_end(argv: Sequence[str]) -> int | None:
    """Index just after ``-m spark_consumer`` or a ``spark-consumer`` executable; None if absent."""
    for i, token in enumerate(argv):
        if token == "-m" and i + 1 < len(argv) and argv[i + 1] == "spark_consumer":
            return i + 2
        if str(token).rsplit("/", 1)[-1] == "spark-consumer":
            return i + 1
    return None
