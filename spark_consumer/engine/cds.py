"""A class-data-sharing (AppCDS) archive of the classes a Spark replica loads.

Starting the JVM, SparkContext and the first queries loads about 14,000 classes; mapping them
from a dynamic CDS archive instead of parsing them from ~280 jars measured 5.4-5.6 s instead of
9.7-9.9 s of engine start (2 cores, JDK 17), at the same RSS. The archive (~160 MB) is built
once per machine, JDK, pyspark installation (jar sizes and times) and JVM settings by a training run that starts the
engine, warms it and exits (``-XX:ArchiveClassesAtExit``; the dump itself takes ~15 s):

    python -m spark_consumer.engine.cds      # or spark_consumer.engine.cds.prepare_archive()

Replicas use the archive when it exists (``-XX:SharedArchiveFile``, ``-Xshare:auto``: a stale
or mismatched archive is ignored by the JVM) and start without it otherwise. Container images
should run the training step at build time. Location: ``<cache dir>/spark-cds/`` (see
:func:`pytest_lagscale.contract.paths.cache_dir`); each new archive prunes that directory to the
:data:`KEEP_ARCHIVES` most recent ones (every checkout with its own virtualenv keys its own
archive, so the directory would otherwise grow by ~160 MB per checkout).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

from pytest_lagscale.contract.paths import cache_dir

QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
#: Archives kept in the cache directory (the newest by modification time).
KEEP_ARCHIVES = 3


def archive_path(java_options: Sequence[str], class_path: str) -> Path:
    """Where the archive for these JVM settings lives (it may not exist)."""
    import pyspark

    java = shutil.which(os.path.join(os.environ["JAVA_HOME"], "bin", "java")
                        if os.environ.get("JAVA_HOME") else "java") or "java"
    key = "\n".join([os.path.realpath(java), pyspark.__version__, *java_options, class_path,
                     *_jar_stamps()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_dir() / "spark-cds" / f"spark-{pyspark.__version__}-{digest}.jsa"


def _jar_stamps() -> list[str]:
    """``name:size:mtime`` of every Spark jar, mtime in whole seconds. The JVM validates the
    archived class path by size and modification time in seconds (``st_mtime``: JDK 17
    src/hotspot/share/cds/filemap.cpp ``SharedClassPathEntry::validate``) and silently ignores a
    mismatched archive, so a reinstalled pyspark at the same path (a new virtualenv) must get
    an archive of its own; whole seconds, because an image layer keeps no more (the archive
    trained into the replica image must match its unpacked jars)."""
    from pyspark.find_spark_home import _find_spark_home

    jars = sorted((Path(_find_spark_home()) / "jars").glob("*.jar"))
    return [f"{jar.name}:{st.st_size}:{int(st.st_mtime)}" for jar in jars for st in [jar.stat()]]


def use_options(path: Path) -> tuple[str, ...]:
    """JVM options that map ``path`` if it exists (nothing otherwise)."""
    if not path.is_file():
        return ()
    return (f"-XX:SharedArchiveFile={path}", "-Xshare:auto", *QUIET)


def prepare_archive(timeout_s: float = 180.0) -> Path:
    """Build the archive for the default engine settings unless it exists; returns its path.

    Raises:
        RuntimeError: the training JVM did not write the archive within ``timeout_s`` seconds.
    """
    from ..dimension import load_dimension
    from ..options import DEFAULT_DIMENSION
    from . import spark

    path = spark.cds_archive()
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    engine = spark.SparkEngine(load_dimension(DEFAULT_DIMENSION), app_name="cds-training",
                               extra_java_options=(f"-XX:ArchiveClassesAtExit={tmp}", *QUIET),
                               use_cds=False)
    engine.start()
    engine.stop(jvm_exit_timeout_s=timeout_s)
    deadline = time.monotonic() + 5.0
    while not tmp.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not tmp.is_file():
        raise RuntimeError(f"spark engine: the training JVM wrote no CDS archive at {tmp}; "
                           "check the JDK supports -XX:ArchiveClassesAtExit (JDK >= 13)")
    os.replace(tmp, path)
    prune_archives(path.parent, keep=KEEP_ARCHIVES)
    return path


def prune_archives(directory: Path, keep: int = KEEP_ARCHIVES) -> list[Path]:
    """Delete all but the ``keep`` newest ``spark-*.jsa`` archives in ``directory``; returns
    the deleted paths. A JVM that has an archive mapped keeps its pages (unlinked, not
    unmapped); a checkout whose archive was pruned builds it again on its next prepare.

    Raises:
        ValueError: ``keep`` < 1.
    """
    if keep < 1:
        raise ValueError(f"keep: {keep} is below 1; the archive just built must stay")
    archives = sorted(directory.glob("spark-*.jsa"), key=lambda p: p.stat().st_mtime,
                      reverse=True)
    removed = []
    for old in archives[keep:]:
        try:
            old.unlink()
            removed.append(old)
        except FileNotFoundError:  # pruned by a concurrent prepare
            continue
    return removed


if __name__ == "__main__":
    print(prepare_archive())
    sys.exit(0)
