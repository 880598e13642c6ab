"""The benchmark JSON document: build, write (one file per test, even a failing one), load.

A document (``schema_version`` 1) is a dict::

    {"schema_version": 1, "lagscale_version": "0.1.0", "datetime": "<UTC ISO-8601>",
     "machine_info": {...}, "commit_info": {"id": str, "dirty": bool, ...},
     "inputs": {"profile", "policy", "balancer", "partitions", "seed", "scale", "engine",
                "trigger_interval_s", "spark_remote" (Spark Connect only, no credentials),
                "versions": {"kafka", "spark", "librdkafka", "python"}, "broker": {...}},
     "metrics": {name: {"value": float | None, "unit": str,
                        "direction": "lower_is_better" | "higher_is_better",
                        "tolerance": float}},   # relative, a fraction of the baseline value
     "assertions": [{"name", "threshold", "value", "verdict": "pass" | "fail"}],
     "artifacts": {name: path}}

A ``lagscale run`` document adds optional top-level sections (not validated, not compared):
``run`` (topic, group, replica bounds, reaction replica, reconciliation); ``scale_out``, every
replica started after the spike start with its start-up times
(:meth:`pytest_lagscale.analyze.scale_out.ScaleOut.to_dict`; a measurement, so not in ``run``);
``steps`` and ``skew`` (:meth:`pytest_lagscale.analyze.measure.Measurements.detail`: each scale
step's rebalance and dip; the partitions' shares, ideal drain and oracle); and ``experiment``,
an experiment's own figures (``RunResult.record``) plus, for every run, ``experiment.replicas``
(:meth:`pytest_lagscale.analyze.replicas.ReplicaTable.to_dict`, drawn in ``replicas.png``).

History files live in ``<root>/<machine-id>/NNNN_<commit>_<utc>[_dirty].json`` (as
pytest-benchmark's storage/file.py). :func:`load` is the one reader; it upgrades old schema
versions step by step through :data:`UPGRADES`.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .. import __version__
from ..contract.errors import ConfigError
from ..contract.rundir import RunDir

SCHEMA_VERSION = 1
DIRECTIONS = ("lower_is_better", "higher_is_better")
VERDICTS = ("pass", "fail")
_REQUIRED_V1 = ("datetime", "machine_info", "commit_info", "inputs", "metrics", "assertions",
                "artifacts")
_COUNTER = re.compile(r"^(\d{4})_")


@dataclass(frozen=True)
class Metric:
    """One measurement: ``value`` in ``unit``; ``tolerance`` is relative (0.1 = 10 %)."""

    value: float | None
    unit: str
    direction: str
    tolerance: float = 0.1

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction: {self.direction!r} is not one of {DIRECTIONS!r}; "
                             "state which way is better")


@dataclass(frozen=True)
class Assertion:
    """One acceptance assertion: its threshold, the measured value and ``pass``/``fail``."""

    name: str
    threshold: float | None
    value: float | None
    verdict: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict: {self.verdict!r} is not one of {VERDICTS!r}")


@dataclass(frozen=True)
class Inputs:
    """What the run was given. ``versions`` maps kafka/spark/librdkafka/python to strings;
    ``trigger_interval_s`` is the replicas' micro-batch trigger (seconds); ``spark_remote`` the
    Spark Connect URL with credentials removed (None for other engines); ``static_membership``
    whether the replicas were static group members (``--static-membership``);
    ``deployment_sha256`` the hex SHA-256 of the Deployment file's bytes when the run was given
    one (``--deployment``), None for the bundled one."""

    profile: str
    policy: str
    balancer: str
    partitions: int
    seed: int
    scale: str
    engine: str = "spark"
    trigger_interval_s: float | None = None
    spark_remote: str | None = None
    static_membership: bool = False
    versions: Mapping[str, str] = field(default_factory=dict)
    broker: Mapping[str, Any] = field(default_factory=dict)
    deployment_sha256: str | None = None
    #: the run's settings as given, every field
    #: (:meth:`pytest_lagscale.experiment.settings.RunSettings.to_document`); read them back
    #: with ``RunSettings.from_document(doc["inputs"]["settings"])``.
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BenchmarkRun:
    """Everything one document holds besides the version and the time."""

    inputs: Inputs
    metrics: Mapping[str, Metric]
    assertions: Sequence[Assertion] = ()
    artifacts: Mapping[str, str] = field(default_factory=dict)
    machine_info: Mapping[str, Any] = field(default_factory=dict)
    commit_info: Mapping[str, Any] = field(default_factory=dict)


def metrics_from_flat(values: Mapping[str, float | None],
                      specs: Mapping[str, tuple[str, str]],
                      tolerances: Mapping[str, float] | None = None,
                      default_tolerance: float = 0.1) -> dict[str, Metric]:
    """Metrics from ``Measurements.flat()`` values and ``analyze.METRICS`` (unit, direction)."""
    tolerances = tolerances or {}
    return {name: Metric(value, specs[name][0], specs[name][1],
                         tolerances.get(name, default_tolerance))
            for name, value in values.items()}


def build_document(run: BenchmarkRun, generated_at: datetime) -> dict[str, Any]:
    """The schema-1 document of ``run``; ``generated_at`` must be timezone-aware.

    Raises:
        ValueError: ``generated_at`` is naive.
    """
    if generated_at.tzinfo is None:
        raise ValueError("generated_at: a naive datetime; pass datetime.now(timezone.utc)")
    return {
        "schema_version": SCHEMA_VERSION,
        "lagscale_version": __version__,
        "datetime": generated_at.astimezone(timezone.utc).isoformat(),
        "machine_info": dict(run.machine_info),
        "commit_info": dict(run.commit_info),
        "inputs": {**{k: v for k, v in asdict(run.inputs).items() if k != "settings"},
                   "versions": dict(run.inputs.versions),
                   "broker": dict(run.inputs.broker),
                   # absent when the writer had no RunSettings (a document built in code)
                   **({"settings": dict(run.inputs.settings)} if run.inputs.settings else {})},
        "metrics": {name: asdict(m) for name, m in run.metrics.items()},
        "assertions": [asdict(a) for a in run.assertions],
        "artifacts": {name: str(path) for name, path in run.artifacts.items()},
    }


def _stamp(doc: Mapping[str, Any]) -> str:
    moment = datetime.fromisoformat(doc["datetime"]).astimezone(timezone.utc)
    return moment.strftime("%Y%m%dT%H%M%SZ")


def _next_counter(folder: Path) -> int:
    counters = [int(m.group(1)) for p in folder.glob("*.json") if (m := _COUNTER.match(p.name))]
    return max(counters, default=0) + 1


def document_path(root: str | Path, machine_id: str, doc: Mapping[str, Any]) -> Path:
    """``<root>/<machine_id>/NNNN_<commit>_<utc>[_dirty].json`` with the next free counter."""
    folder = Path(root) / machine_id
    commit = doc["commit_info"].get("id") or "unversioned"
    dirty = "_dirty" if doc["commit_info"].get("dirty") else ""
    return folder / f"{_next_counter(folder):04d}_{commit}_{_stamp(doc)}{dirty}.json"


def write_document(doc: Mapping[str, Any], root: str | Path, machine_id: str) -> Path:
    """Write ``doc`` atomically to a new history file and return its path.

    The verdicts play no part: a failing run is written like a passing one.
    """
    path = document_path(root, machine_id, doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path


@contextmanager
def written_on_exit(root: str | Path, machine_id: str,
                    build: Callable[[], Mapping[str, Any]]) -> Iterator[list[Path]]:
    """Write ``build()`` when the block exits, also when it raises (the error propagates).

    Yields a list that holds the written path afterwards. Use around a test body so that the
    measurements gathered so far are written even when an assertion fails.
    """
    written: list[Path] = []
    try:
        yield written
    finally:
        written.append(write_document(build(), root, machine_id))


def _check_v1(doc: Mapping[str, Any], source: str) -> None:
    missing = [key for key in _REQUIRED_V1 if key not in doc]
    if missing:
        raise ConfigError(f"{source}: keys {missing!r} are missing from a schema 1 document; "
                          "rewrite it with write_document")
    problems = []

    def wrong(where: str, value: Any, allowed: str) -> None:
        problems.append(f"{source}: '{where}' is {type(value).__name__} {_short(value)}; "
                        f"allowed: {allowed}; rewrite it with write_document")

    for key in ("machine_info", "commit_info", "inputs", "artifacts"):
        if not isinstance(doc[key], Mapping):
            wrong(key, doc[key], "an object")
    if not isinstance(doc["assertions"], list):
        wrong("assertions", doc["assertions"], "a list")
    metrics = doc["metrics"]
    if not isinstance(metrics, Mapping):
        wrong("metrics", metrics, "an object of name: {value, unit, direction}")
        metrics = {}
    for name, metric in metrics.items():
        where = f"metrics.{name}"
        if not isinstance(metric, Mapping):
            wrong(where, metric, "an object with value, unit and direction")
            continue
        value = metric.get("value")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            wrong(f"{where}.value", value, "a number or null")
        if not isinstance(metric.get("unit", ""), str):
            wrong(f"{where}.unit", metric.get("unit"), "a string")
        if metric.get("direction") not in DIRECTIONS:
            wrong(f"{where}.direction", metric.get("direction"), f"one of {DIRECTIONS!r}")
    if problems:
        raise ConfigError(problems)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: version n -> function turning a version-n document into a version-(n+1) one.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
#: version -> validation of a document of that version (run before upgrading it).
CHECKS: dict[int, Callable[[Mapping[str, Any], str], None]] = {1: _check_v1}


def upgrade(doc: dict[str, Any], source: str = "<document>") -> dict[str, Any]:
    """Upgrade ``doc`` to :data:`SCHEMA_VERSION`, validating each version on the way.

    Raises:
        ConfigError: the version is missing, unknown or newer than this pytest-lagscale.
    """
    version = doc.get("schema_version")
    if version not in CHECKS:
        hint = ("upgrade pytest-lagscale" if isinstance(version, int)
                and version > SCHEMA_VERSION else "it is not a lagscale benchmark file")
        raise ConfigError(f"{source}: 'schema_version' {version!r} is not one of "
                          f"{sorted(CHECKS)!r}; {hint}")
    while True:
        CHECKS[version](doc, source)
        if version == SCHEMA_VERSION:
            return doc
        doc = UPGRADES[version](doc)
        version = doc["schema_version"] = version + 1


#: ``inputs`` keys -> RunSettings fields, for a document written before ``inputs.settings``.
_LEGACY_SETTINGS = ("profile", "policy", "scale", "balancer", "partitions", "engine",
                    "trigger_interval_s", "lag_threshold", "static_membership")


def recorded_settings(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings a loaded document records (``inputs.settings``), for
    :meth:`pytest_lagscale.experiment.settings.RunSettings.from_document`.

    A document written before ``inputs.settings`` existed gives them from what it recorded: its
    ``inputs``, ``run.lag_threshold`` and ``run.graceful_drain`` (kafka, platform, lag source
    and the other settings were not recorded then and keep their defaults).
    """
    inputs = doc.get("inputs") if isinstance(doc.get("inputs"), Mapping) else {}
    if isinstance(inputs.get("settings"), Mapping) and inputs["settings"]:
        return dict(inputs["settings"])
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    settings = {key: inputs[key] for key in _LEGACY_SETTINGS if inputs.get(key) is not None}
    if inputs.get("lag_threshold") is None and run.get("lag_threshold") is not None:
        settings["lag_threshold"] = run["lag_threshold"]
    if "graceful_drain" in run:
        settings["graceful"] = bool(run["graceful_drain"])
    settings.setdefault("scale", "ci")
    return settings


def load(path: str | Path) -> dict[str, Any]:
    """Read a benchmark JSON file of any known schema version, upgraded to the current one.

    Raises:
        ConfigError: the file cannot be read, is not UTF-8 JSON, not a known schema version,
            or a field has the wrong type (one line each).
    """
    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{str(path)[:200]}: cannot be read ({exc.strerror}); pass a "
                          "benchmark.json") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: is not UTF-8 text (byte at offset {exc.start}), so not "
                          "JSON; pass a file written by write_document") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: is not JSON ({exc}); "
                          "pass a file written by write_document") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: top level is {type(doc).__name__}, not an object; "
                          "pass a file written by write_document")
    return upgrade(doc, str(path))


#: The file name of a run directory's benchmark document (:attr:`RunDir.benchmark_json`).
RUN_DOCUMENT = RunDir.benchmark_json.name


def run_document_path(path: str | Path) -> Path:
    """The benchmark document ``path`` names: a run directory's ``benchmark.json``, else
    ``path`` itself (a benchmark JSON file, or a path that does not exist)."""
    path = Path(path)
    return RunDir(path).benchmark_json if path.is_dir() else path


def find_run_documents(path: str | Path) -> list[Path]:
    """The benchmark documents under ``path``: ``path`` itself when it is a file, a run
    directory's ``benchmark.json``, or else the ``benchmark.json`` of every run directory
    directly inside the folder ``path`` (a ``lagscale-runs`` parent), sorted by path; ``[]``
    when there is none or ``path`` does not exist."""
    path = Path(path)
    if path.is_file():
        return [path]
    if RunDir(path).benchmark_json.is_file():
        return [RunDir(path).benchmark_json]
    return sorted(path.glob(f"*/{RUN_DOCUMENT}")) if path.is_dir() else []


def read_run_document(path: str | Path, name: str | None = None) -> dict[str, Any]:
    """The benchmark document of a run: ``path`` is its run directory or a benchmark JSON file;
    read with :func:`load` (any known schema version, upgraded to the current one).

    Every command that takes a run reads it here (``lagscale compare``, ``report``,
    ``baseline``, ``twin calibrate``, ``twin predict``, ``--lagscale-report``).

    Args:
        path: a run directory or a benchmark JSON file.
        name: what the caller calls the path (an argument such as ``BASELINE``); it starts
            every problem line. Default: the lines start with the path.

    Returns:
        The document, a dict of the current :data:`SCHEMA_VERSION`.

    Raises:
        ConfigError: the path does not exist, a directory has no ``benchmark.json``, or the
            file is unreadable, not JSON or not a benchmark document; each line names the path.
    """
    path = Path(path)
    file = run_document_path(path)
    prefix = f"{name}: " if name else ""
    if not file.is_file():
        what = f"has no {RUN_DOCUMENT}" if path.is_dir() else "does not exist"
        raise ConfigError(f"{prefix}{str(path)!r} {what}; give a benchmark JSON file or a run "
                          "directory")
    try:
        return load(file)
    except ConfigError as exc:
        raise ConfigError([f"{prefix}{line}" for line in exc.problems]) from exc
