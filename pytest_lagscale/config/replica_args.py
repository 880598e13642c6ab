"""The consumer replica's command line (DESIGN.md "Consumer replica contract"), validated.

Flags come after ``python -m spark_consumer`` (or ``spark-consumer``), as ``--flag value`` or
``--flag=value``. A problem's subject is ``<container path>.args[--flag]``. The flags, their
ranges and their examples are the contract's table (:mod:`pytest_lagscale.contract.flags`), the
one the replica's own parser uses, so a Deployment validates exactly when the replica would
start with it. A Deployment must state the flags in :data:`DEPLOYMENT_REQUIRED` (the harness
reads their values); a text value holding an unexpanded ``$(VAR)`` is left for Kubernetes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from pytest_lagscale.config._problems import MISSING, Problems, nearest
from pytest_lagscale.contract.flags import (BALANCERS, COMMIT_MODES, ENGINES, FLAG_BY_OPTION, Flag,
                                            conflicts)

__all__ = ["BALANCERS", "COMMIT_MODES", "DEPLOYMENT_REQUIRED", "ENGINES", "ReplicaArgs",
           "collect_replica_args", "program_end"]

DEPLOYMENT_REQUIRED = ("--bootstrap", "--topic", "--group", "--balancer", "--process-ms",
                       "--inflight", "--commit", "--drain-timeout", "--metrics-port", "--store")
"""Flags a Deployment must state (the harness reads them: capacity, drain, probe port)."""


@dataclass(frozen=True)
class ReplicaArgs:
    """The replica program's flags.

    Attributes:
        bootstrap: ``--bootstrap`` broker list (may hold an unexpanded ``$(VAR)``).
        topic: ``--topic``.
        group: ``--group`` (consumer group id).
        balancer: ``--balancer``: cooperative-sticky, range, roundrobin or consumer (KIP-848).
        process_ms: ``--process-ms`` simulated work per record in milliseconds (0..60000).
        inflight: ``--inflight`` records in flight per replica (1..100000).
        commit: ``--commit``: manual (after the batch is written) or auto.
        drain_timeout_s: ``--drain-timeout`` seconds allowed for the SIGTERM drain, (0, 3600].
        metrics_port: ``--metrics-port`` for /metrics and /ready (0..65535, 0 = ephemeral).
        store: ``--store`` path of the downstream Parquet store.
        instance_id: ``--instance-id`` for static membership (None = dynamic).
        engine: ``--engine``: spark (default) or arrow.
        trigger_interval_s: ``--trigger-interval``: seconds between micro-batch starts (0..300).
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
    trigger_interval_s: float = 0.0
    flags: Mapping[str, str] = field(default_factory=dict)


def _value(flag: Flag, text: str) -> Any:
    """The typed value of ``text`` for ``flag`` (``$(VAR)`` text kept); None when invalid."""
    if "$(" in text and flag.type in (str, Path) and not flag.choices:
        return text
    try:
        value = flag.parse(text)
    except ValueError:
        return None
    return str(value) if isinstance(value, Path) else value


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
    for option, flag in FLAG_BY_OPTION.items():
        subject = f"{path}[{option}]"
        if option not in flags:
            if option in DEPLOYMENT_REQUIRED:
                p.add(subject, MISSING, flag.allowed, f"add '{option}={flag.example}' to args")
            continue
        value = _value(flag, flags[option])
        if value is None:
            p.add(subject, flags[option], flag.allowed, f"write e.g. '{option}={flag.example}'")
        values[option] = value
    for c in conflicts(flags, values["--balancer"]) if values.get("--balancer") else ():
        p.add(f"{path}[{c.option}]", flags[c.option], c.expected, c.fix)
    if len(p.lines) != before:
        return None
    return _replica_args({FLAG_BY_OPTION[o].dest: v for o, v in values.items()}, flags)


def _replica_args(v: Mapping[str, Any], flags: Mapping[str, str]) -> ReplicaArgs:
    """The :class:`ReplicaArgs` of validated values keyed by flag ``dest``."""
    return ReplicaArgs(
        bootstrap=v["bootstrap"], topic=v["topic"], group=v["group"], balancer=v["balancer"],
        process_ms=v["process_ms"], inflight=v["inflight"], commit=v["commit"],
        drain_timeout_s=v["drain_timeout"], metrics_port=v["metrics_port"], store=v["store"],
        instance_id=v.get("instance_id"), engine=v.get("engine", FLAG_BY_OPTION["--engine"].default),
        trigger_interval_s=v.get("trigger_interval",
                                 FLAG_BY_OPTION["--trigger-interval"].default),
        flags=MappingProxyType(dict(flags)))


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
        if name not in FLAG_BY_OPTION:
            guess = nearest(name, FLAG_BY_OPTION) if name.startswith("-") else None
            fix = (f"rename it to '{guess}'" if guess
                   else f"remove it (known flags: {', '.join(FLAG_BY_OPTION)})")
            p.add(f"{path}[{token}]", token, "a flag of the replica contract", fix)
            takes_next = not eq and i + 1 < len(rest) and not str(rest[i + 1]).startswith("-")
            i += 2 if takes_next else 1
            continue
        if not eq:
            if i + 1 >= len(rest):
                flag = FLAG_BY_OPTION[name]
                p.add(f"{path}[{name}]", MISSING, flag.allowed,
                      f"give it a value: '{name}={flag.example}'")
                break
            value = str(rest[i + 1])
            i += 1
        flags[name] = value
        i += 1
    return flags


def without_flags(argv: Sequence[str], flags: Iterable[str]) -> tuple[str, ...]:
    """``argv`` without the replica program's ``flags`` after the program (both the
    ``--flag=value`` and the ``--flag value`` forms); the program and what precedes it kept.

    Example:
        >>> without_flags(("python", "-m", "spark_consumer", "--a=1", "--b", "2", "--c=3"),
        ...               ("--a", "--b"))
        ('python', '-m', 'spark_consumer', '--c=3')
    """
    names = set(flags)
    end = program_end(argv) or len(argv)
    kept, skip = list(argv[:end]), False
    for arg in argv[end:]:
        if skip:
            skip = False
            continue
        if arg.split("=", 1)[0] in names:
            skip = "=" not in arg
            continue
        kept.append(arg)
    return tuple(kept)


def program_end(argv: Sequence[str]) -> int | None:
    """Index just after ``-m spark_consumer`` or a ``spark-consumer`` executable; None if absent."""
    for i, token in enumerate(argv):
        if token == "-m" and i + 1 < len(argv) and argv[i + 1] == "spark_consumer":
            return i + 2
        if str(token).rsplit("/", 1)[-1] == "spark-consumer":
            return i + 1
    return None
