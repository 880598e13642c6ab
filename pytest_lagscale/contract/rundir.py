"""The run directory: every path of one run, and the one find/merge of its event logs.

One run writes one directory, ``<out>/<UTC stamp>-<label>[-N]/``::

    benchmark.json  summary.md  timeline.png  replicas.png  timeline.parquet  timeline.csv
    events.jsonl                    the merged event table (written by :meth:`RunDir.merge_events`)
    runner.events.jsonl             run phases and scheduled actions
    producer.events.jsonl           load start/end, phases, spike marks
    controller.events.jsonl         the autoscaler's decisions
    platform.events.jsonl           replica started/ready/exited, scaled
    replicas/<replica id>/events.jsonl, output.log
    store/                          the replicas' Parquet store
    manifest.json  report.json      the producer's acknowledged offsets; its report
    prometheus/                     Prometheus's config, data and log
    kube/                           the local control plane (--platform kubernetes)
    reconcile.log  librdkafka.log   JVM output of the reconciliation; librdkafka's own log lines
    scaler.log                      the run's own external scaler (lagscale scaler serve), if any
    moto.log  spark-connect/        moto (CloudWatch), the run's Spark Connect server, if any

Both the harness and the replica program import this module (it is part of the contract layer):
it uses the standard library only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from .errors import ConfigError
from .eventlog import read_events

#: Per-source event logs directly in the run directory, in merge order (ties keep this order).
SOURCE_EVENT_LOGS = ("runner.events.jsonl", "producer.events.jsonl", "controller.events.jsonl",
                     "platform.events.jsonl", "group.events.jsonl")
#: A replica's event log inside ``replicas/<replica id>/``.
REPLICA_EVENT_LOG = "events.jsonl"
#: A replica's stdout and stderr inside ``replicas/<replica id>/``.
REPLICA_LOG = "output.log"
#: The merged event table.
MERGED_EVENT_LOG = "events.jsonl"

# The names of a run directory's entries: the one place that spells them. Code with a RunDir
# uses its attributes; code given a bare directory (a finished run, a producer's output
# directory, a part's home) joins these names.
BENCHMARK_JSON = "benchmark.json"
SUMMARY_MD = "summary.md"
TIMELINE_PNG = "timeline.png"
REPLICAS_PNG = "replicas.png"
TIMELINE_PARQUET = "timeline.parquet"
TIMELINE_CSV = "timeline.csv"
REPLICAS_DIR = "replicas"
STORE_DIR = "store"
MANIFEST_JSON = "manifest.json"
REPORT_JSON = "report.json"
PROMETHEUS_DIR = "prometheus"
KUBE_DIR = "kube"
RECONCILE_LOG = "reconcile.log"
LIBRDKAFKA_LOG = "librdkafka.log"
IMAGE_BUILD_LOG = "image-build.log"
SCALER_LOG = "scaler.log"
MOTO_LOG = "moto.log"
SPARK_CONNECT_DIR = "spark-connect"


class _In:
    """A path inside the run directory, read as an attribute of a :class:`RunDir`."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, run: "RunDir | None", owner: type | None = None) -> Any:
        return self if run is None else run.root / self.name


@dataclass(frozen=True)
class RunDir:
    """The paths of one run, rooted at ``root`` (absolute: Prometheus resolves file_sd paths
    against its own config file's directory).

    Args:
        root: the run directory.
    """

    root: Path

    @classmethod
    def create(cls, out_dir: str | os.PathLike[str], label: str,
               now: datetime | None = None) -> "RunDir":
        """Make a new, unique ``<out_dir>/<UTC stamp>-<label>[-N]`` directory.

        Safe when several processes (pytest-xdist workers) create runs with the same label in the
        same second: the directory is claimed with an exclusive ``mkdir``.

        Raises:
            OSError: ``out_dir`` cannot be created.
        """
        stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
        parent = Path(out_dir).resolve()
        parent.mkdir(parents=True, exist_ok=True)
        base, n = f"{stamp}-{label}", 1
        while True:
            path = parent / (base if n == 1 else f"{base}-{n}")
            try:
                path.mkdir()
            except FileExistsError:
                n += 1
                continue
            return cls(path)

    @property
    def name(self) -> str:
        """The directory's name, e.g. ``20261122T174355Z-spike-ci``."""
        return self.root.name

    #: Results.
    benchmark_json = _In(BENCHMARK_JSON)
    summary_md = _In(SUMMARY_MD)
    timeline_png = _In(TIMELINE_PNG)
    #: The per-replica breakdown figure (ownership and record rates).
    replicas_png = _In(REPLICAS_PNG)
    timeline_parquet = _In(TIMELINE_PARQUET)
    timeline_csv = _In(TIMELINE_CSV)
    #: The merged event table (see :meth:`merge_events`).
    events_jsonl = _In(MERGED_EVENT_LOG)
    #: ``replicas/<replica id>/`` directories.
    replicas_dir = _In(REPLICAS_DIR)
    #: The replicas' Parquet store (one row per processed record).
    store = _In(STORE_DIR)
    #: The producer's acknowledged offsets per partition.
    manifest_json = _In(MANIFEST_JSON)
    #: The producer's report (sent, acknowledged and failed records, rates).
    report_json = _In(REPORT_JSON)
    prometheus_dir = _In(PROMETHEUS_DIR)
    #: The local control plane of ``--platform kubernetes`` (PKI, kubeconfigs, etcd, logs).
    kube_dir = _In(KUBE_DIR)
    reconcile_log = _In(RECONCILE_LOG)
    librdkafka_log = _In(LIBRDKAFKA_LOG)
    #: The output of the local platform's image build step (the replicas' CDS training).
    image_build_log = _In(IMAGE_BUILD_LOG)
    #: The output of the run's own external scaler (``lagscale scaler serve``), when its policy
    #: has one.
    scaler_log = _In(SCALER_LOG)
    #: moto's output, when the run's lag source or a trigger reads CloudWatch.
    moto_log = _In(MOTO_LOG)
    #: The run's own Spark Connect server (engine spark-connect without --spark-remote).
    spark_connect_dir = _In(SPARK_CONNECT_DIR)

    def source_events(self, source: str) -> Path:
        """The event log of ``source`` (``runner``, ``producer``, ``controller``, ``platform``)."""
        name = f"{source}.events.jsonl"
        if name not in SOURCE_EVENT_LOGS:
            raise ConfigError(f"event source {source!r}: not one of "
                              f"{', '.join(n.split('.')[0] for n in SOURCE_EVENT_LOGS)}; "
                              "add it to SOURCE_EVENT_LOGS")
        return self.root / name

    def replica_dir(self, replica_id: str) -> Path:
        """``replicas/<replica_id>/``: the replica's event log and output."""
        return self.replicas_dir / replica_id

    def replica_events(self, replica_id: str) -> Path:
        return self.replica_dir(replica_id) / REPLICA_EVENT_LOG

    def replica_log(self, replica_id: str) -> Path:
        """The replica's stdout and stderr."""
        return self.replica_dir(replica_id) / REPLICA_LOG

    def artifacts(self) -> dict[str, Path]:
        """The paths a finished run lists in its benchmark JSON, by name."""
        return {"benchmark_json": self.benchmark_json, "timeline_png": self.timeline_png,
                "summary_md": self.summary_md, "timeline_parquet": self.timeline_parquet,
                "timeline_csv": self.timeline_csv, "events_jsonl": self.events_jsonl,
                "manifest_json": self.manifest_json, "store": self.store}

    # -- event logs ----------------------------------------------------------------------
    def event_logs(self) -> list[Path]:
        """Every per-source event log that exists: the run's own (in :data:`SOURCE_EVENT_LOGS`
        order), then each replica's (by replica id). The merged table is never one of them."""
        own = [self.root / name for name in SOURCE_EVENT_LOGS]
        replicas = sorted(self.replicas_dir.glob(f"*/{REPLICA_EVENT_LOG}"))
        return [path for path in own + replicas if path.is_file()]

    def merge_events(self) -> list[dict[str, Any]]:
        """Merge :meth:`event_logs` into :attr:`events_jsonl`; returns the records.

        Raises:
            ConfigError: a record lacks ``monotonic_s``.
        """
        return merge_event_logs(self.event_logs(), self.events_jsonl)


def merge_event_logs(paths: Iterable[str | os.PathLike[str]],
                     out_path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Merge JSONL event logs into one list ordered by ``monotonic_s`` and write it.

    Args:
        paths: the logs (runner, producer, controller, platform, replicas), in any order; ties in
            ``monotonic_s`` keep the order of ``paths`` then of lines. ``out_path`` itself is
            skipped if listed. A torn last line is skipped (see ``read_events``).
        out_path: the merged JSONL file (default: ``events.jsonl`` beside the first log).

    Returns:
        The records, as dicts, ordered by ``monotonic_s`` (seconds).

    Raises:
        ConfigError: a record lacks ``monotonic_s`` (file and line number given).
    """
    paths = [Path(p) for p in paths]
    if out_path is None and not paths:
        return []
    out = Path(out_path) if out_path is not None else paths[0].parent / MERGED_EVENT_LOG
    records: list[dict[str, Any]] = []
    for path in paths:
        if path.resolve() == out.resolve():
            continue
        for number, record in enumerate(read_events(path), start=1):
            if not isinstance(record, dict) or "monotonic_s" not in record:
                raise ConfigError(f"{path}: record {number} {record!r} lacks 'monotonic_s'; "
                                  "write events with EventLog.emit")
            records.append(record)
    records.sort(key=lambda r: float(r["monotonic_s"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "w") as fh:
        for record in records:
            fh.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")
    os.replace(tmp, out)
    return records
