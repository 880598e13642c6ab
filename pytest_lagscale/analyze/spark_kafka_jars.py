"""Spark's Kafka source for the reconciliation: pinned jars, fetched once into the per-user cache.

pyspark ships without the Kafka connector. :data:`JARS` pins it and the rest of its runtime
closure that pyspark's ``jars/`` lacks (the connector's pom, apache/spark v4.2.0
connector/kafka-0-10-sql/pom.xml: spark-token-provider-kafka-0-10, kafka-clients at the
connector's ``kafka.version``, commons-pool2; scala-parallel-collections and jsr305 are in
pyspark already, kafka-clients' compression codecs too), each with its SHA-256 (Maven Central's
published ``.sha256``, or the jar's own digest where Central publishes only ``.sha1``, checked
against it). Maven Central has the connector up to 4.2.0 while pyspark here is 4.3.0; the 4.2.0
connector reads a topic on the 4.3.0 runtime (batch read with headers, checked before it was
adopted and by tests/integration/test_reconcile_topic.py).

:func:`resolve` returns the jars' paths under ``<cache>/spark-kafka/`` (``<cache>`` is
:func:`pytest_lagscale.contract.paths.cache_dir`), downloading and checking what is missing;
``scripts/fetch-spark-kafka`` (run by ``scripts/bootstrap``) calls it once per machine:
``python -m pytest_lagscale.analyze.spark_kafka_jars`` prints the directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..contract.errors import LagscaleError
from ..contract.paths import cache_dir

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
DOWNLOAD_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class PinnedJar:
    """One Maven artifact: ``group:artifact:version`` and the jar's SHA-256 (hex)."""

    group: str
    artifact: str
    version: str
    sha256: str

    @property
    def file_name(self) -> str:
        """``<artifact>-<version>.jar``."""
        return f"{self.artifact}-{self.version}.jar"

    @property
    def url(self) -> str:
        """The jar's address on Maven Central."""
        return (f"{MAVEN_CENTRAL}/{self.group.replace('.', '/')}/{self.artifact}/{self.version}/"
                f"{self.file_name}")


JARS: tuple[PinnedJar, ...] = (
    PinnedJar("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.2.0",
              "64539c45e5d39f7ddb747312c239f38f5208d08c1a0ddf7d70beb2fbd9373705"),
    PinnedJar("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", "4.2.0",
              "641c7947afc8aa1189e433b7c2d305293993c8691bc1c2062d6d4f513b12518c"),
    PinnedJar("org.apache.kafka", "kafka-clients", "3.9.2",
              "014b4ef36884478a932641818b080c36a8f8e2e92dc771e800c9d2694f4f83d8"),
    PinnedJar("org.apache.commons", "commons-pool2", "2.13.1",
              "f77a5060d6936a9144023584232f9de3f2248f1abfe156e9d31795f18770674f"),
)
"""The Kafka source's jars, in class-path order."""


def jars_dir() -> Path:
    """``<cache>/spark-kafka`` (not created)."""
    return cache_dir() / "spark-kafka"


def resolve(*, fetch: bool = True) -> list[Path]:
    """The paths of :data:`JARS`, each checked against its SHA-256, downloading missing ones.

    Concurrent callers (pytest-xdist workers, a bootstrap) serialise on a lock file. A jar is
    downloaded to a temporary name and renamed only once its digest matches.

    Args:
        fetch: download what is missing (False: a missing jar is an error).

    Returns:
        Absolute paths, in :data:`JARS` order.

    Raises:
        LagscaleError: a jar is missing and ``fetch`` is False, a download failed, or a file's
            digest differs from its pin (a cached file that differs is replaced once).
    """
    root = jars_dir()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return [_ensure(jar, root, fetch) for jar in JARS]


def _ensure(jar: PinnedJar, root: Path, fetch: bool) -> Path:
    path = root / jar.file_name
    if path.is_file() and _sha256(path) == jar.sha256:
        return path
    if not fetch:
        raise LagscaleError(f"Spark's Kafka source: {path} is missing or damaged; run "
                            "scripts/fetch-spark-kafka (scripts/bootstrap runs it)")
    fd, tmp = tempfile.mkstemp(prefix=f".{jar.file_name}.", dir=root)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(jar.url, timeout=DOWNLOAD_TIMEOUT_S) as resp:
                    while chunk := resp.read(1 << 20):
                        out.write(chunk)
            except (urllib.error.URLError, OSError) as exc:
                raise LagscaleError(f"Spark's Kafka source: downloading {jar.url} failed "
                                    f"({exc}); check the network or fetch it by hand into "
                                    f"{root}") from exc
        got = _sha256(Path(tmp))
        if got != jar.sha256:
            raise LagscaleError(f"Spark's Kafka source: {jar.url} has SHA-256 {got}, pinned "
                                f"{jar.sha256}; the download is damaged or the pin is wrong")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> int:
    """Fetch and check the jars; print their directory (exit 1 with the reason on failure)."""
    try:
        paths = resolve()
    except LagscaleError as exc:
        print(f"fetch-spark-kafka: {exc}", file=sys.stderr)
        return 1
    print(paths[0].parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
