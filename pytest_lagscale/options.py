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
