"""A finished run read back from its run directory, for runs another process made
(:mod:`.concurrent`): its figures as analysed, its tables, and records added to its
``benchmark.json`` the way :meth:`~.result.RunResult.record` and ``check`` add them.

What is read: ``benchmark.json`` (metrics, steps, run info, inputs), ``timeline.parquet`` (the
1 s timeline) and ``events.jsonl`` (the merged event log, its times made seconds since the load
started: the producer's ``load_start``, else the runner's ``load`` phase mark).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..analyze.tables import events_from_records
from ..contract.errors import ConfigError
from ..contract.rundir import BENCHMARK_JSON, MERGED_EVENT_LOG, TIMELINE_PARQUET


@dataclass(frozen=True)
class FinishedRun:
    """One finished run as its directory holds it.

    Attributes:
        run_dir: the run directory.
        doc: ``benchmark.json`` as loaded.
        timeline: the timeline table (``t_s`` from 0 at the load's start).
        events: the event table (``t_s`` on the same origin).
    """

    run_dir: Path
    doc: dict[str, Any]
    timeline: pd.DataFrame
    events: pd.DataFrame

    @property
    def metrics(self) -> dict[str, Any]:
        """Metric name -> value (None when unmeasured)."""
        return {name: (entry or {}).get("value")
                for name, entry in (self.doc.get("metrics") or {}).items()}

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The scale steps as recorded (``t_s``, ``replicas_before/after``, ``rebalance_s``...)."""
        return list(self.doc.get("steps") or [])

    @property
    def run(self) -> dict[str, Any]:
        """The ``run`` section (label, topic, group, max_replicas, reconciliation...)."""
        return dict(self.doc.get("run") or {})

    @property
    def inputs(self) -> dict[str, Any]:
        """The ``inputs`` section (profile, policy, engine, partitions...)."""
        return dict(self.doc.get("inputs") or {})

    @property
    def benchmark_path(self) -> Path:
        """The run's ``benchmark.json``."""
        return self.run_dir / BENCHMARK_JSON

    def record(self, name: str, value: Any) -> Any:
        """Write ``value`` (JSON-ready) under ``experiment.<name>`` of ``benchmark.json``;
        returns it."""
        self.doc.setdefault("experiment", {})[name] = value
        self._write()
        return value

    def mark_experiment(self, number: int) -> None:
        """Add ``number`` to ``experiment.numbers`` (what the findings report places it by)."""
        numbers = set(self.doc.setdefault("experiment", {}).get("numbers") or ())
        self.doc["experiment"]["numbers"] = sorted(numbers | {number})
        self._write()

    def check(self, name: str, value: float | None, threshold: float | None,
              passed: bool) -> bool:
        """Append one acceptance assertion to ``benchmark.json``; returns ``passed``."""
        self.doc.setdefault("assertions", []).append(
            {"name": name, "threshold": threshold, "value": value,
             "verdict": "pass" if passed else "fail"})
        self._write()
        return passed

    def _write(self) -> None:
        self.benchmark_path.write_text(json.dumps(self.doc, indent=2, sort_keys=True) + "\n")


def _origin_s(records: list[Mapping[str, Any]]) -> float:
    for event, extra in (("load_start", {}), ("run_phase", {"phase": "load"})):
        for rec in records:
            if rec.get("event") == event and all(rec.get(k) == v for k, v in extra.items()):
                return float(rec["monotonic_s"])
    raise ConfigError("events.jsonl: no load_start event and no run_phase 'load' mark, "
                      "expected the merged event log of a finished lagscale run")


def read_finished_run(run_dir: str | Path) -> FinishedRun:
    """Read a finished run's directory.

    Raises:
        ConfigError: not a directory, or ``benchmark.json``, ``timeline.parquet`` or
            ``events.jsonl`` missing or unreadable (the message names the file).
    """
    path = Path(run_dir)
    files = {name: path / name for name in (BENCHMARK_JSON, TIMELINE_PARQUET, MERGED_EVENT_LOG)}
    missing = [name for name, file in files.items() if not file.is_file()]
    if missing:
        raise ConfigError(f"run directory {str(path)!r}: missing {', '.join(missing)}, expected "
                          "the directory of a finished lagscale run")
    try:
        doc = json.loads(files[BENCHMARK_JSON].read_text())
        records = [json.loads(line) for line in
                   files[MERGED_EVENT_LOG].read_text().splitlines() if line.strip()]
        timeline = pd.read_parquet(files[TIMELINE_PARQUET])
    except (OSError, ValueError) as exc:
        raise ConfigError(f"run directory {str(path)!r}: {type(exc).__name__}: {exc}") from exc
    events = events_from_records(records, origin_s=_origin_s(records))
    return FinishedRun(path, doc, timeline, events)


__all__ = ["FinishedRun", "read_finished_run"]
