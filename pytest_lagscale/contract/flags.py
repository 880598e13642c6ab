"""The replica's flags: one table for the replica's parser and the harness's Deployment check.

Every flag ``--foo-bar`` of ``python -m spark_consumer`` is one :class:`Flag` row of
:data:`FLAGS`: its type, its range or choices (with the sentence naming them, unit included),
its default, its environment equivalent ``LAGSCALE_FOO_BAR``, its help, an example value and
whether the platform sets it per replica (:data:`PLATFORM_FLAGS`). ``spark_consumer.options``
builds its argparse parser and environment fallbacks from it;
:mod:`pytest_lagscale.config.replica_args` validates a Deployment's ``args`` with it. The enums
(:data:`BALANCERS`, :data:`COOPERATIVE_BALANCERS`, :data:`REMOTE_ASSIGNORS`,
:data:`COMMIT_MODES`, :data:`ENGINES`, :data:`SINKS`, :data:`GROUP_TYPES`,
:data:`SHARE_OFFSET_RESETS`) are declared here only.

Example:
    >>> FLAG_BY_OPTION["--max-batch"].parse("5000")
    5000
    >>> FLAG_BY_OPTION["--max-batch"].allowed
    'a whole number of records in 1..1000000'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Collection, Mapping

ENV_PREFIX = "LAGSCALE_"
BALANCERS = ("cooperative-sticky", "range", "roundrobin", "consumer")
"""Rebalance protocols: classic eager (range, roundrobin), classic cooperative
(cooperative-sticky) and KIP-848 (consumer)."""
COOPERATIVE_BALANCERS = ("cooperative-sticky", "consumer")
"""Balancers whose rebalance callbacks carry incremental partition lists."""
REMOTE_ASSIGNORS = ("uniform", "range")
"""Broker-side assignors of the KIP-848 ``consumer`` protocol."""
COMMIT_MODES = ("manual", "auto")
ENGINES = ("spark", "arrow", "spark-connect")
SINKS = ("parquet", "topic")
"""Where a replica writes its processed records: the Parquet store (``--store``) or an output
topic (``--output-topic``, the record contract of :mod:`pytest_lagscale.contract.output_topic`)."""
SPARK_REMOTE_PATTERN = re.compile(
    r"sc://(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
    r":(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})"
    r"(?:/;[A-Za-z_]+=[^;=\s]*(?:;[A-Za-z_]+=[^;=\s]*)*)?")
"""A Spark Connect URL ``sc://HOST:PORT[/;key=value;...]`` (pyspark's connection string)."""
GROUP_TYPES = ("consumer", "share")
"""What the replica joins: a consumer group (partitions assigned, offsets committed) or a share
group (Apache Kafka 4.3.1 KIP-932: records acquired and acknowledged one by one)."""
SHARE_OFFSET_RESETS = ("earliest", "latest")
"""Values of the share group's ``share.auto.offset.reset`` config (Apache Kafka 4.3.1 KIP-932)."""
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
"""Replica ids and static member ids: 1-64 characters, safe in file names and client ids."""
BOOL_WORDS = ("1", "0", "true", "false", "yes", "no")
_ID_TEXT = "1-64 characters of A-Z a-z 0-9 _ . - starting with a letter or digit"


@dataclass(frozen=True)
class Flag:
    """One flag of the replica.

    Attributes:
        name: the flag without its dashes (``max-batch``).
        type: the value's type: ``str``, ``int``, ``float``, ``bool`` or ``Path``.
        help: the ``--help`` text (ends with the default).
        allowed: the allowed values as a phrase with the unit (``a whole number of records in
            1..1000000``), used in every problem line.
        example: a valid value, for the fix in problem lines.
        default: the value when neither the flag nor its environment variable is given (None:
            none, or computed by the replica).
        metavar: the ``--help`` placeholder (a unit such as ``MS``, or the choices).
        lo: smallest number allowed (numbers only).
        hi: largest number allowed (numbers only).
        lo_open: ``lo`` itself is excluded.
        choices: the allowed values of an enum flag.
        pattern: a regular expression the whole value must match (text only).
        required: the replica does not start without it.
        platform: set per replica by the platform (not taken from the Deployment).
    """

    name: str
    type: type
    help: str
    allowed: str
    example: str
    default: Any = None
    metavar: str | None = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    choices: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    required: bool = False
    platform: bool = False

    @property
    def option(self) -> str:
        """The flag as written on a command line (``--max-batch``)."""
        return "--" + self.name

    @property
    def env(self) -> str:
        """Its environment equivalent (``LAGSCALE_MAX_BATCH``)."""
        return ENV_PREFIX + self.name.upper().replace("-", "_")

    @property
    def dest(self) -> str:
        """Its Python name (``max_batch``)."""
        return self.name.replace("-", "_")

    def parse(self, text: str) -> Any:
        """The typed value of ``text``.

        Raises:
            ValueError: ``text`` is not one of :attr:`allowed` (the message is not meant for
                users; callers report :attr:`allowed`).
        """
        if self.type is bool:
            low = text.strip().lower()
            if low not in BOOL_WORDS:
                raise ValueError(text)
            return low in ("1", "true", "yes")
        if self.type in (int, float):
            return self._number(text)
        if self.choices or self.pattern is not None:
            if text not in self.choices and not (self.pattern and self.pattern.fullmatch(text)):
                raise ValueError(text)
            return text
        value = text.strip()
        if not value:
            raise ValueError(text)
        return Path(value) if self.type is Path else value

    def _number(self, text: str) -> int | float:
        value = self.type(text)
        if not self.allows(value):
            raise ValueError(text)
        return value

    def allows(self, value: Any) -> bool:
        """Whether the typed ``value`` is one of :attr:`allowed` (the rule :meth:`parse` applies
        after converting text)."""
        if self.type is bool:
            return isinstance(value, bool)
        if self.type in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    self.type is int and not isinstance(value, int)):
                return False
            if isinstance(value, float) and not math.isfinite(value):
                return False
            if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
                return False
            return self.hi is None or value <= self.hi
        if self.choices or self.pattern is not None:
            return isinstance(value, str) and (value in self.choices or bool(
                self.pattern and self.pattern.fullmatch(value)))
        return isinstance(value, (str, Path)) and bool(str(value).strip())


def _enum(name: str, choices: tuple[str, ...], default: str | None, help: str) -> Flag:
    return Flag(name, str, help, "one of " + ", ".join(choices), choices[0] if default is None
                else default, default, "{" + ",".join(choices) + "}", choices=choices)


FLAGS: tuple[Flag, ...] = (
    Flag("bootstrap", str, "Kafka bootstrap servers, comma-separated (required)",
         "a non-empty host:port list", "kafka:9092", metavar="HOST:PORT", required=True),
    Flag("topic", str, "Topic to consume (default: events)", "a non-empty topic name", "events",
         "events", "NAME"),
    Flag("group", str, "Consumer group id (default: enrich)", "a non-empty group id", "enrich",
         "enrich", "NAME"),
    _enum("balancer", BALANCERS, "cooperative-sticky",
          "Rebalance protocol: classic eager range or roundrobin, classic cooperative-sticky "
          "or KIP-848 consumer (default: cooperative-sticky)"),
    _enum("remote-assignor", REMOTE_ASSIGNORS, None,
          "Broker-side assignor, only with --balancer consumer (default: uniform)"),
    Flag("session-timeout", float,
         "Classic-group session timeout, not allowed with --balancer consumer (default: 10)",
         "a number of seconds in 1..3600", "10", metavar="SECONDS", lo=1.0, hi=3600.0),
    Flag("process-ms", float, "Simulated downstream write time per record (default: 5)",
         "a number of ms in 0..60000", "5", 5.0, "MS", lo=0.0, hi=60000.0),
    Flag("inflight", int, "Records written downstream concurrently (default: 10)",
         "a whole number of records in 1..100000", "500", 10, "RECORDS", lo=1, hi=100000),
    _enum("commit", COMMIT_MODES, "manual",
          "Commit processed offsets synchronously after each batch (manual) or store them for "
          "the auto-committer (auto) (default: manual)"),
    Flag("drain-timeout", float,
         "Time allowed from SIGTERM to exit, past it the replica exits 1 (default: 25)",
         "a number of seconds in (0, 3600]", "30", 25.0, "SECONDS", lo=0.0, hi=3600.0,
         lo_open=True),
    Flag("metrics-host", str, "Address of the /metrics and /ready server (default: 127.0.0.1)",
         "a non-empty address", "0.0.0.0", "127.0.0.1", "ADDRESS"),
    Flag("metrics-port", int,
         "Port of the /metrics and /ready server, 0 = ephemeral (default: 0)",
         "a port number in 0..65535", "9400", 0, "PORT", lo=0, hi=65535, platform=True),
    Flag("port-file", Path, "File receiving the bound metrics port (default: none)", "a path",
         "/tmp/replica.port", metavar="PATH"),
    Flag("store", Path, "Directory of the downstream Parquet store, unused with --sink topic "
         "(required)", "a directory path", "/data/store", metavar="PATH", required=True,
         platform=True),
    Flag("sink", str, "Where processed records go: one Parquet file per batch in --store "
         "(parquet) or one record per processed record, with its input partition and offset in "
         "headers, to --output-topic (topic) (default: parquet)", "one of " + ", ".join(SINKS),
         "topic", "parquet", "{" + ",".join(SINKS) + "}", choices=SINKS),
    Flag("output-topic", str, "Topic receiving the processed records, required with --sink "
         "topic and refused otherwise (default: none)", "a non-empty topic name",
         "events-processed", metavar="NAME"),
    Flag("instance-id", str, "Static membership group.instance.id (default: none)", _ID_TEXT,
         "$(POD_NAME)", metavar="ID", pattern=ID_PATTERN),
    Flag("max-batch", int, "Most records per micro-batch (default: 2000)",
         "a whole number of records in 1..1000000", "5000", 2000, "RECORDS", lo=1, hi=1000000),
    Flag("batch-wait-ms", float, "Longest wait for a micro-batch to fill (default: 500)",
         "a number of ms in 1..60000", "500", 500.0, "MS", lo=1.0, hi=60000.0),
    Flag("trigger-interval", float, "Shortest time from one micro-batch's start to the next, "
         "as Spark's processingTime trigger, 0 = one consume() per batch "
         "(default: 0)", "a number of seconds in 0..300", "2", 0.0, "SECONDS", lo=0.0, hi=300.0),
    Flag("replica-id", str, "Name in metrics, event log, store rows and client.id "
         "(default: <hostname>-<pid>)", _ID_TEXT, "replica-0001", metavar="ID",
         pattern=ID_PATTERN, platform=True),
    Flag("engine", str, "Enrichment engine: a local SparkSession (spark), pyarrow without a JVM "
         "(arrow) or a Spark Connect server's client (spark-connect, with --spark-remote) "
         "(default: spark)", "one of " + ", ".join(ENGINES), "spark-connect", "spark",
         "{" + ",".join(ENGINES) + "}", choices=ENGINES),
    Flag("spark-remote", str, "Spark Connect server URL, required with --engine spark-connect "
         "and refused otherwise (default: none)", "a Spark Connect URL "
         "sc://HOST:PORT (PORT 1-65535), optionally with /;KEY=VALUE parameters separated by ;",
         "sc://spark-connect:15002",
         metavar="URL", pattern=SPARK_REMOTE_PATTERN),
    Flag("event-log", Path, "JSONL event log to append to (default: none)", "a path",
         "/data/events.jsonl", metavar="PATH", platform=True),
    Flag("log-batches", bool, "Write one batch event per micro-batch with its timings "
         "(default: false)", "one of true, false, 1, 0, yes, no",
         "true", False, "BOOL"),
    Flag("dimension", Path, "Dimension table CSV with bucket,segment,region (default: the "
         "segments.csv shipped with the replica)", "a path", "/data/segments.csv",
         metavar="PATH"),
    _enum("group-type", GROUP_TYPES, "consumer",
          "Join --group as a consumer group (consumer) or as a KIP-932 share group (share: "
          "records acknowledged one by one after their batch was written; --balancer is "
          "ignored) (default: consumer)"),
    _enum("share-offset-reset", SHARE_OFFSET_RESETS, "earliest",
          "The share group's share.auto.offset.reset, set by every share replica at start "
          "(earliest: a new group reads the topic from its start); ignored with --group-type "
          "consumer (default: earliest)"),
)
"""Every flag of the replica, in ``--help`` order."""

FLAG_BY_OPTION: Mapping[str, Flag] = MappingProxyType({f.option: f for f in FLAGS})
"""``{"--max-batch": Flag(...)}``."""
FLAG_BY_DEST: Mapping[str, Flag] = MappingProxyType({f.dest: f for f in FLAGS})
"""``{"max_batch": Flag(...)}``."""
PLATFORM_FLAGS: tuple[str, ...] = tuple(f.option for f in FLAGS if f.platform)
"""Flags the platform sets per replica (``--metrics-port``, ``--store``, ``--replica-id``,
``--event-log``); a Deployment's values of them are replaced."""


@dataclass(frozen=True)
class Conflict:
    """A flag given with a ``--balancer`` or ``--engine`` it does not work with.

    Attributes:
        option: the flag (``--session-timeout``).
        reason: what is wrong, after the value (``is not allowed with --balancer consumer ...``).
        expected: what is allowed instead, as a phrase for a problem line.
        fix: the fix, an imperative without a trailing period.
    """

    option: str
    reason: str
    expected: str
    fix: str


def conflicts(given: Collection[str], balancer: str, engine: str | None = None
              ) -> list[Conflict]:
    """The flags of ``given`` that ``balancer`` or ``engine`` does not allow, in table order.

    Args:
        given: the flags set explicitly (``--remote-assignor``, ...), or a mapping of them to
            their values.
        balancer: the effective ``--balancer`` (one of :data:`BALANCERS`).
        engine: the effective ``--engine``; None: ``given["--engine"]`` when ``given`` is a
            mapping holding it, else the default.

    Returns:
        One :class:`Conflict` per offending flag: ``--session-timeout`` with the KIP-848
        ``consumer`` protocol (its session timeout is a broker setting), ``--remote-assignor``
        with a classic balancer, ``--spark-remote`` with an engine other than spark-connect,
        ``--output-topic`` with a ``--sink`` other than topic (``given["--sink"]`` when
        ``given`` is a mapping holding it, else the default), and with ``--group-type share``
        (``given["--group-type"]``, a mapping's only) the consumer-group-only flags
        ``--session-timeout``, ``--remote-assignor``, ``--instance-id`` and ``--commit auto``.
    """
    found = []
    if balancer == "consumer" and "--session-timeout" in given:
        why = "--balancer consumer (KIP-848 session timeouts are broker settings)"
        found.append(Conflict("--session-timeout", f"is not allowed with {why}",
                              f"no --session-timeout with {why}",
                              "drop --session-timeout or choose a classic balancer"))
    if balancer != "consumer" and "--remote-assignor" in given:
        found.append(Conflict("--remote-assignor",
                              f"is only valid with --balancer consumer, not {balancer!r}",
                              f"--remote-assignor only with --balancer consumer, not {balancer!r}",
                              "drop --remote-assignor or pass --balancer consumer"))
    if engine is None:
        engine = given.get("--engine") if isinstance(given, Mapping) else None
    engine = engine or FLAG_BY_OPTION["--engine"].default
    if engine in ENGINES and engine != "spark-connect" and "--spark-remote" in given:
        found.append(Conflict("--spark-remote",
                              f"is only valid with --engine spark-connect, not {engine!r}",
                              f"--spark-remote only with --engine spark-connect, not {engine!r}",
                              "drop --spark-remote or pass --engine spark-connect"))
    sink = (given.get("--sink") if isinstance(given, Mapping) else None) or \
        FLAG_BY_OPTION["--sink"].default
    if sink in SINKS and sink != "topic" and "--output-topic" in given:
        found.append(Conflict("--output-topic",
                              f"is only valid with --sink topic, not {sink!r}",
                              f"--output-topic only with --sink topic, not {sink!r}",
                              "drop --output-topic or pass --sink topic"))
    found += _share_conflicts(given, {c.option for c in found})
    return found


_NOT_WITH_SHARE = (
    ("--session-timeout", "share-group session timeouts are broker settings"),
    ("--remote-assignor", "the broker assigns a share group's partitions"),
    ("--instance-id", "share groups have no static membership"),
)
"""Consumer-group flags a share replica refuses, with why (Apache Kafka 4.3.1 KIP-932)."""


def _share_conflicts(given: Collection[str], already: set[str]) -> list[Conflict]:
    """The consumer-group-only flags of ``given`` with ``--group-type share`` (none reported
    twice: ``already`` holds the flags found by the other rules)."""
    if not isinstance(given, Mapping) or given.get("--group-type") != "share":
        return []
    found = []
    for option, why in _NOT_WITH_SHARE:
        if option in given and option not in already:
            found.append(Conflict(option, f"is not allowed with --group-type share ({why})",
                                  f"no {option} with --group-type share ({why})",
                                  f"drop {option} or pass --group-type consumer"))
    if given.get("--commit") == "auto":
        why = "a share replica acknowledges each batch and commits it synchronously"
        found.append(Conflict("--commit", f"is not allowed with --group-type share ({why})",
                              f"--commit manual with --group-type share ({why})",
                              "pass --commit manual or --group-type consumer"))
    return found
