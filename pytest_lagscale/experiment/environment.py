"""Where a run ran: machine, commit and component versions for the benchmark JSON.

As pytest-benchmark's ``get_machine_id``/``get_commit_info``: small, never failing (an unknown
value is ``"unknown"``), so a report is written even on a machine without git.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any


def machine_info() -> dict[str, Any]:
    """``{node, machine, system, release, python_implementation, cpu_count, memory_bytes}``."""
    try:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory_bytes = None
    return {"node": platform.node(), "machine": platform.machine(), "system": platform.system(),
            "release": platform.release(),
            "python_implementation": platform.python_implementation(),
            "cpu_count": os.cpu_count(), "memory_bytes": memory_bytes}


def machine_id() -> str:
    """Folder name of the history storage: ``<system>-<implementation>-<python>-<bits>bit``."""
    bits = 64 if sys.maxsize > 2**32 else 32
    return (f"{platform.system()}-{platform.python_implementation()}-"
            f"{'.'.join(platform.python_version_tuple()[:2])}-{bits}bit")


def commit_info(cwd: str | Path | None = None) -> dict[str, Any]:
    """``{id, dirty, branch}`` of the git checkout at ``cwd`` (``id`` None outside git)."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                                 timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "--short=12", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"id": commit, "dirty": bool(status), "branch": git("rev-parse", "--abbrev-ref", "HEAD")}


def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown"


def versions(kafka_version: str = "unknown") -> dict[str, str]:
    """``{kafka, spark, librdkafka, confluent_kafka, python}`` (without importing pyspark)."""
    try:
        import confluent_kafka

        librdkafka = confluent_kafka.libversion()[0]
    except ImportError:
        librdkafka = "unknown"
    return {"kafka": kafka_version, "spark": _package_version("pyspark"),
            "librdkafka": librdkafka, "confluent_kafka": _package_version("confluent-kafka"),
            "python": platform.python_version()}
