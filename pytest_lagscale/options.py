"""Option definitions shared by the pytest plugin and the ``lagscale`` CLI.

As in pytest-benchmark's ``add_*_options(addoption, prefix)``: each group is defined once and
parsed by the ``parse_*`` functions, which raise ``argparse.ArgumentTypeError`` carrying the repr
of the bad value (pytest turns that into a usage error, exit code 4; the CLI exits 2).
"""

from __future__ import annotations

import argparse
from typing import Callable

from .kafka import KINDS


def parse_kafka_config(value: str) -> tuple[str, str]:
    """Parse one ``KEY=VALUE`` librdkafka setting (``--kafka-config``)."""
    key, sep, val = value.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"--kafka-config: {value!r} is not KEY=VALUE; e.g. security.protocol=SASL_SSL")
    return key.strip(), val


def add_kafka_options(addoption: Callable[..., object], prefix: str = "") -> None:
    """Register ``--kafka``, ``--kafka-bootstrap`` and ``--kafka-config``."""
    addoption(f"--{prefix}kafka", choices=KINDS, default="embedded",
              help="Where the broker comes from: an embedded KRaft node from pinned Maven "
                   "jars, a testcontainers container, or an external cluster. "
                   "Default: embedded.")
    addoption(f"--{prefix}kafka-bootstrap", metavar="HOST:PORT", default=None,
              help="Bootstrap servers of the external cluster (only with --kafka=external)")
    addoption(f"--{prefix}kafka-config", metavar="KEY=VALUE", action="append",
              type=parse_kafka_config, default=[],
              help="A librdkafka setting for every client of an external cluster, e.g. "
                   "security.protocol=SASL_SSL; repeatable. Default: none.")


def check_kafka_options(kind: str, bootstrap: str | None) -> str | None:
    """Return a conflict message for the kafka options, or None when they agree."""
    if kind == "external" and not bootstrap:
        return "--kafka=external needs --kafka-bootstrap HOST:PORT; add it or use --kafka=embedded"
    if kind != "external" and bootstrap:
        return (f"--kafka-bootstrap is only used with --kafka=external, not --kafka={kind}; "
                "add --kafka=external or drop --kafka-bootstrap")
    return None


# -- run options (--platform, --profile, --lag-threshold, ... --lagscale-baseline) ------------
#: Mirrors of :mod:`pytest_lagscale.experiment.settings` (not imported: the plugin stays cheap).
PLATFORMS = ("local", "kubernetes")
SCALES = ("ci", "full")
BALANCERS = ("cooperative-sticky", "range", "roundrobin", "consumer")
MAX_LAG_THRESHOLD = 10_000_000
MAX_PARTITIONS = 1024


def _integer(option: str, text: str, lo: int, hi: int, allowed: str) -> int:
    """``text`` as an int in [lo, hi]; ``allowed`` describes the accepted form for the fix."""
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{option}: {text!r} is not an integer; allowed: {allowed}") from None
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(
            f"{option}: {value!r} is out of range; allowed: {allowed}")
    return value


def parse_lag_thresholds(value: str) -> tuple[int, ...]:
    """Parse ``--lag-threshold N[,N...]``: records per replica, 1..10,000,000, no repeats.

    Raises:
        argparse.ArgumentTypeError: a value is not an integer in range, or repeats.
    """
    allowed = (f"integers in [1, {MAX_LAG_THRESHOLD:,}] records, comma-separated for a sweep "
               "(e.g. 1000,10000,100000)")
    thresholds = tuple(_integer("--lag-threshold", part, 1, MAX_LAG_THRESHOLD, allowed)
                       for part in value.split(","))
    repeated = sorted({t for t in thresholds if thresholds.count(t) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(
            f"--lag-threshold: {value!r} repeats {', '.join(map(str, repeated))}; "
            "list each value of the sweep once")
    return thresholds


def parse_partitions(value: str) -> int:
    """Parse ``--partitions N``: partitions of the topic, 1..1024.

    Raises:
        argparse.ArgumentTypeError: not an integer in range.
    """
    return _integer("--partitions", value, 1, MAX_PARTITIONS,
                    f"an integer in [1, {MAX_PARTITIONS:,}] partitions")


def add_run_options(addoption: Callable[..., object], prefix: str = "lagscale-") -> None:
    """Register the options of an experiment run.

    ``--platform``, ``--profile``, ``--lag-threshold``, ``--balancer`` and ``--partitions`` are
    unprefixed; ``--<prefix>scale``, ``--<prefix>out`` and ``--<prefix>baseline`` carry
    ``prefix`` (the pytest plugin: ``lagscale-``; a CLI: ``""``). Destinations are
    ``platform``, ``profile``, ``lag_thresholds``, ``balancer``, ``partitions``,
    ``lagscale_scale``, ``lagscale_out`` and ``lagscale_baseline`` whatever the prefix.
    """
    addoption("--platform", choices=PLATFORMS, default="local",
              help="Where replicas run: local processes, or a Kubernetes cluster with KEDA. "
                   "Default: local.")
    addoption("--profile", metavar="PATH", default=None,
              help="Traffic profile YAML for every experiment run, e.g. "
                   "fixtures/profiles/bursty-ci.yaml. Default: the test's own, else "
                   "fixtures/profiles/spike-ci.yaml (ci) or spike.yaml (full).")
    addoption("--lag-threshold", metavar="RECORDS[,RECORDS...]", dest="lag_thresholds",
              type=parse_lag_thresholds, default=None,
              help="Override the trigger's lagThreshold (1 to 10,000,000 records); a comma "
                   "list runs the experiments once per value (test ids lt<N>). "
                   "Default: the ScaledObject's.")
    addoption("--balancer", choices=BALANCERS, default=None,
              help="Partition assignment protocol of the replicas. Default: the Deployment's "
                   "(cooperative-sticky).")
    addoption("--partitions", metavar="N", type=parse_partitions, default=None,
              help="Partitions of the topic (1 to 1024). Default: the profile's.")
    addoption(f"--{prefix}scale", dest="lagscale_scale", choices=SCALES, default="ci",
              help="Size of the runs: ci (P = 8, minutes) or full (the seed lab's P = 24, "
                   "10x spike for 10-15 min). Default: ci.")
    addoption(f"--{prefix}out", dest="lagscale_out", metavar="DIR", default="lagscale-runs",
              help="Parent directory of the run directories. Default: lagscale-runs.")
    addoption(f"--{prefix}baseline", dest="lagscale_baseline", metavar="PATH", default=None,
              help="Baseline benchmark JSON: one file for every run, or a directory of "
                   "<run label>.json files; a regression fails the session. Default: none.")


def check_run_options(profile: str | None, baseline: str | None, out: str) -> list[str]:
    """Problems with the run options that argparse cannot see, one line each."""
    from pathlib import Path

    problems = []
    if profile is not None and not Path(profile).is_file():
        problems.append(f"--profile: {profile!r} is not a readable file; give the path of a "
                        "traffic profile YAML, e.g. fixtures/profiles/spike-ci.yaml")
    if baseline is not None and not Path(baseline).exists():
        problems.append(f"--lagscale-baseline: {baseline!r} does not exist; give a benchmark "
                        "JSON file or a directory of <run label>.json files")
    if Path(out).exists() and not Path(out).is_dir():
        problems.append(f"--lagscale-out: {out!r} is a file, not a directory; give a "
                        "directory (created when missing)")
    return problems
