"""Event-level facts of a real run directory, for calibrating and validating the twin.

:func:`read_run` reads one run directory of ``lagscale run`` (``benchmark.json``, the merged
``events.jsonl`` and the replicas' parquet ``store/``) into :class:`RunFacts`: the run's
settings (to plan and simulate it again), each replica's lifecycle (``replica_started``,
``engine_ready``, ``subscribed``, first ``joined``, first non-empty ``assigned``,
``first_record``, ``replica_terminating``, ``closed``, ``replica_stopped``; wall-clock seconds)
and its micro-batches (one row per distinct ``processed_at_ns`` of a replica). Only event-level
facts are read here: never a reaction time, peak lag, drain time or replica-seconds.

:func:`keep_facts` writes what :func:`read_run` needs of a run in a few hundred kilobytes
(``benchmark.json``, ``events.jsonl`` and the micro-batches as ``batches.parquet`` instead of
the store), and :func:`read_run` reads such a directory back: a calibration's source runs kept
this way can be calibrated from again, with another model, in a later session.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..contract.errors import ConfigError
from ..contract.rundir import RunDir
from ..report.benchjson import read_run_document

#: A kept run's micro-batches (:func:`keep_facts`), read in place of the store.
BATCHES_FILE = "batches.parquet"
#: Events whose first occurrence per replica is kept (replica event name -> lifecycle key).
LIFECYCLE_EVENTS = ("replica_started", "engine_ready", "subscribed", "joined", "assigned",
                    "first_record", "replica_terminating", "closed", "replica_stopped")


@dataclass(frozen=True)
class RunFacts:
    """What the calibration reads from one real run.

    Attributes:
        name: the run directory's name.
        path: the run directory.
        benchmark: the parsed ``benchmark.json``.
        engine: the replicas' engine (``spark``, ``arrow``, ...).
        balancer: the replicas' ``--balancer``.
        lifecycles: replica id -> lifecycle key -> wall-clock seconds (first occurrence;
            ``assigned`` is the first assignment with partitions).
        load_start_s: wall-clock seconds of the producer's ``load_start`` (nan when absent).
        batches: one row per micro-batch: ``replica_id``, ``records``, ``start_s``
            (processed_at), ``write_start_s`` and ``write_end_s`` (first and last
            ``written_at``), ``next_start_s`` (the replica's next batch, nan for its last);
            empty when the run has no store.
        broker: the broker's settings (``inputs.broker``).
        handovers_s: per revoked partition, seconds from its ``revoked`` to its next
            ``assigned`` (to any replica), in event order.
    """

    name: str
    path: Path
    benchmark: dict[str, Any]
    engine: str
    balancer: str
    lifecycles: dict[str, dict[str, float]]
    load_start_s: float
    batches: pd.DataFrame
    broker: dict[str, str]
    handovers_s: tuple[float, ...] = ()

    def counts_at(self, t_s: float, exclude: str | None = None,
                  starting_delay_s: float = 0.0) -> tuple[int, int]:
        """``(members, starting)`` at wall-clock ``t_s``: replicas past ``engine_ready`` and
        not yet stopped, and replicas started ``starting_delay_s`` or more before ``t_s``
        whose engine is not ready (``exclude`` left out).
        """
        members = starting = 0
        for rid, life in self.lifecycles.items():
            if rid == exclude or "replica_started" not in life:
                continue
            end = life.get("replica_stopped", math.inf)
            ready = life.get("engine_ready", end)
            if life["replica_started"] + starting_delay_s <= t_s < ready:
                starting += 1
            elif ready <= t_s < end:
                members += 1
        return members, starting

    def warming_at(self, t_s: float, warming_s: float, exclude: str | None = None) -> int:
        """Members at wall-clock ``t_s`` (see :meth:`counts_at`) whose ``engine_ready`` is
        less than ``warming_s`` seconds before it (``exclude`` left out); 0 when ``warming_s``
        is 0."""
        if warming_s <= 0:
            return 0
        count = 0
        for rid, life in self.lifecycles.items():
            ready = life.get("engine_ready")
            if rid == exclude or ready is None or "replica_started" not in life:
                continue
            if ready <= t_s < min(ready + warming_s, life.get("replica_stopped", math.inf)):
                count += 1
        return count

    def change_times(self) -> np.ndarray:
        """Sorted wall-clock seconds at which :meth:`counts_at` can change."""
        times = {life[key] for life in self.lifecycles.values()
                 for key in ("replica_started", "engine_ready", "replica_stopped") if key in life}
        return np.array(sorted(times), dtype=float)


def run_settings(benchmark: dict[str, Any]) -> Any:
    """The :class:`~pytest_lagscale.experiment.settings.RunSettings` a run's ``benchmark.json``
    records (``inputs.settings``, read by ``RunSettings.from_document``; a document written
    before those were recorded gives what its ``inputs`` held: see
    :func:`pytest_lagscale.report.benchjson.recorded_settings`).

    Raises:
        ConfigError: ``inputs`` is missing or lacks the profile; a recorded field RunSettings
            does not have.
    """
    from ..experiment.settings import RunSettings
    from ..report.benchjson import recorded_settings

    inputs = benchmark.get("inputs")
    if not isinstance(inputs, dict) or not inputs.get("profile"):
        raise ConfigError(f"'inputs.profile': got {inputs!r:.60}, expected the run's profile "
                          "name in benchmark.json; give a benchmark.json of lagscale run")
    return RunSettings.from_document(recorded_settings(benchmark))


def _lifecycles(events_path: Path) -> tuple[dict[str, dict[str, float]], float,
                                            tuple[float, ...]]:
    """Lifecycles, ``load_start`` and handovers (see :class:`RunFacts`) of an event log."""
    with open(events_path, encoding="utf-8") as fh:
        records = sorted((json.loads(line) for line in fh), key=lambda r: r["wall_ns"])
    lives: dict[str, dict[str, float]] = {}
    load_start = math.nan
    revoked: dict[int, float] = {}
    handovers = []
    for rec in records:
        name, rid, t = rec.get("event"), rec.get("replica_id"), rec["wall_ns"] / 1e9
        parts = [int(q) for q in rec.get("partitions") or []]
        if name == "load_start" and math.isnan(load_start):
            load_start = t
        elif name == "revoked":
            revoked.update({q: t for q in parts})
        elif name == "assigned":
            handovers += [t - revoked.pop(q) for q in parts if q in revoked]
        if name in LIFECYCLE_EVENTS and rid and (name != "assigned" or parts):
            lives.setdefault(rid, {}).setdefault(name, t)
    return lives, load_start, tuple(handovers)


def read_batches(store: Path) -> pd.DataFrame:
    """One row per micro-batch of every replica under ``store/`` (see :attr:`RunFacts.batches`).
    """
    frames = []
    for replica_dir in sorted(p for p in store.iterdir() if p.is_dir()) if store.is_dir() else []:
        files = sorted(replica_dir.glob("*.parquet"))
        if not files:
            continue
        rows = pd.concat(pd.read_parquet(f, columns=["processed_at_ns", "written_at_ns"])
                         for f in files)
        g = rows.groupby("processed_at_ns")["written_at_ns"].agg(["size", "min", "max"])
        g = g.reset_index().sort_values("processed_at_ns")
        frames.append(pd.DataFrame({
            "replica_id": replica_dir.name, "records": g["size"].to_numpy(),
            "start_s": g["processed_at_ns"].to_numpy() / 1e9,
            "write_start_s": g["min"].to_numpy() / 1e9, "write_end_s": g["max"].to_numpy() / 1e9,
            "next_start_s": np.append(g["processed_at_ns"].to_numpy()[1:] / 1e9, np.nan)}))
    columns = ["replica_id", "records", "start_s", "write_start_s", "write_end_s",
               "next_start_s"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def read_run(run_dir: str | Path, *, with_store: bool = True) -> RunFacts:
    """Read one run directory (see the module docstring).

    Raises:
        ConfigError: not a directory, or ``benchmark.json`` / ``events.jsonl`` missing or bad.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise ConfigError(f"RUN_DIR: got {str(path)!r}, expected a run directory of lagscale "
                          "run (benchmark.json, events.jsonl, store/); check the path")
    run = RunDir(path)
    bench = read_run_document(path)
    if not run.events_jsonl.is_file():
        raise ConfigError(f"RUN_DIR: {str(path)!r} has no events.jsonl, expected the merged "
                          "event log of lagscale run; give a complete run directory")
    try:
        lives, load_start, handovers = _lifecycles(run.events_jsonl)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"'{run.events_jsonl}': got {type(exc).__name__}: {exc}, "
                          "expected one JSON event per line with wall_ns; give an intact "
                          "event log") from exc
    inputs = bench.get("inputs") or {}
    kept = path / BATCHES_FILE
    if not with_store:
        batches = read_batches(path / "-")
    elif not run.store.is_dir() and kept.is_file():
        batches = pd.read_parquet(kept)
    else:
        batches = read_batches(run.store)
    return RunFacts(name=path.name, path=path, benchmark=bench,
                    engine=str(inputs.get("engine") or ""),
                    balancer=str(inputs.get("balancer") or ""), lifecycles=lives,
                    load_start_s=load_start, batches=batches,
                    broker=dict(inputs.get("broker") or {}), handovers_s=handovers)


def keep_facts(facts: RunFacts, out: Path) -> Path:
    """Write ``facts``' run as ``out/<name>/``: its ``benchmark.json`` and ``events.jsonl``
    copied, its micro-batches as :data:`BATCHES_FILE` (what :func:`read_run` reads; the store
    itself is left out). Returns the directory written.

    Raises:
        OSError: ``out`` cannot be written.
    """
    import shutil

    run = RunDir(facts.path)
    target = out / facts.name
    if target.resolve() == facts.path.resolve():  # calibrated from the kept copy itself
        return target
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run.benchmark_json, target / run.benchmark_json.name)
    shutil.copyfile(run.events_jsonl, target / run.events_jsonl.name)
    facts.batches.to_parquet(target / BATCHES_FILE, index=False)
    return target


__all__ = ["BATCHES_FILE", "LIFECYCLE_EVENTS", "RunFacts", "keep_facts", "read_batches",
           "read_run", "run_settings"]
