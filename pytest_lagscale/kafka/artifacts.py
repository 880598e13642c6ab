"""The pinned Apache Kafka classpath, resolved from Maven Central into a per-user cache.

The Kafka release tarball is not used. The bundled ``pytest_lagscale/data/kafka/pom.xml`` (in a
checkout also ``fixtures/kafka/pom.xml``, a symlink) pins the broker (``kafka_2.13``),
the perf tools (``kafka-tools``) and the log4j SLF4J binding; the installed Maven copies their
runtime closure into ``~/.cache/pytest-lagscale/kafka-<version>/libs`` once. A marker file holding
the pom's SHA-256 makes later calls return at once; a changed pom resolves again. Concurrent
resolvers (pytest-xdist, two shells) serialise on a file lock.

Source: apache/kafka build.gradle project(':core') (the broker's dependencies beyond
kafka-clients are ``implementation``, so runtime scope in the published POM; the release tarball
adds the log4j SLF4J binding as ``releaseOnly``, which no POM carries) at the pom's
``kafka.version``; maven-dependency-plugin ``copy-dependencies -DincludeScope=runtime``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..config.bundled import data_path
from ..contract.errors import BrokerError
from ..process import cache_dir

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
MAVEN_TIMEOUT_S = 900.0


def fixtures_dir() -> Path:
    """The directory holding ``kafka/pom.xml`` and ``prometheus/prometheus.yml.template``.

    ``$LAGSCALE_FIXTURES`` (a directory with that layout) overrides the bundled package data
    (``pytest_lagscale/data/``).
    """
    env = os.environ.get("LAGSCALE_FIXTURES")
    return Path(env) if env else data_path()


def pinned_pom() -> Path:
    """Path of the pom that pins the Kafka classpath (``<fixtures_dir()>/kafka/pom.xml``)."""
    return fixtures_dir() / "kafka" / "pom.xml"


def pinned_version(pom: Path | None = None) -> str:
    """The ``kafka.version`` property of the pin (e.g. ``"4.3.1"``).

    Raises:
        BrokerError: the pom is missing or has no ``kafka.version`` property.
    """
    pom = pom or pinned_pom()
    try:
        root = ET.parse(pom).getroot()
    except (OSError, ET.ParseError) as exc:
        raise BrokerError(f"{str(pom)!r}: cannot read the Kafka pin: {exc}; reinstall "
                          "pytest-lagscale or unset LAGSCALE_FIXTURES") from exc
    node = root.find("m:properties/m:kafka.version", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise BrokerError(f"{str(pom)!r}: no <kafka.version> property; add it under <properties>")
    return node.text.strip()


@dataclass(frozen=True)
class KafkaDistribution:
    """A resolved Kafka classpath.

    Attributes:
        version: Apache Kafka version, e.g. ``"4.3.1"``.
        libs_dir: directory holding every jar of the runtime closure.
    """

    version: str
    libs_dir: Path

    @property
    def classpath(self) -> str:
        """A ``java -cp`` value covering every jar (``<libs>/*``)."""
        return f"{self.libs_dir}/*"


def resolve(pom: Path | None = None, *, maven: str = "mvn") -> KafkaDistribution:
    """Return the pinned Kafka classpath, resolving it with Maven on first use.

    Args:
        pom: the pin (default :func:`pinned_pom`).
        maven: the Maven executable.

    Raises:
        BrokerError: Maven or Java is missing, or resolution failed (the last 20 lines of
            Maven's output are in the message).
    """
    pom = pom or pinned_pom()
    version = pinned_version(pom)
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    home = cache_dir() / f"kafka-{version}"
    libs, marker = home / "libs", home / "resolved.sha256"
    if _is_resolved(marker, digest, libs):
        return KafkaDistribution(version, libs)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_resolved(marker, digest, libs):
            _copy_dependencies(pom, home, maven)
            marker.write_text(digest + "\n")
    return KafkaDistribution(version, libs)


def kafka_classpath() -> str:
    """Shortcut: the ``java -cp`` string of the pinned Kafka (resolving it if needed)."""
    return resolve().classpath


def _is_resolved(marker: Path, digest: str, libs: Path) -> bool:
    return (marker.exists() and marker.read_text().strip() == digest
            and any(libs.glob("kafka_2.13-*.jar")))


def _copy_dependencies(pom: Path, home: Path, maven: str) -> None:
    if shutil.which(maven) is None:
        raise BrokerError(f"maven: {maven!r} not found on PATH; install Maven "
                          "(apt-get install maven) to resolve the Kafka jars")
    staging = home / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [maven, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
           "-DincludeScope=runtime", f"-DoutputDirectory={staging}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S,
                              start_new_session=True)
    except subprocess.TimeoutExpired as exc:
        raise BrokerError(f"maven: resolving {str(pom)!r} took over {MAVEN_TIMEOUT_S:.0f} s; "
                          "check access to Maven Central and retry") from exc
    if done.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise BrokerError(f"maven: resolving {str(pom)!r} failed with exit code "
                          f"{done.returncode}; check access to Maven Central\n{tail}")
    shutil.rmtree(home / "libs", ignore_errors=True)
    staging.rename(home / "libs")
