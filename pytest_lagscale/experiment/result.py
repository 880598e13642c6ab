"""The outcome of one run: :class:`RunResult`, its benchmark JSON and its assertions.

A test asserts through :meth:`RunResult.check`, which records the assertion (threshold, value,
verdict) in ``benchmark.json`` and ``summary.md`` before the test's own ``assert`` — so a failing
run leaves the same self-describing report as a passing one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..analyze.measure import LOWER, METRICS, Measurements, RunSpec
from ..contract.rundir import BENCHMARK_JSON, SUMMARY_MD
from ..report.benchjson import Assertion, BenchmarkRun, Inputs, build_document, metrics_from_flat
from ..report.summary import write_summary
from .settings import RunSettings

#: Metrics a run adds to ``Measurements.flat()``: name -> (unit, direction).
RUN_METRICS: dict[str, tuple[str, str]] = {
    "lost_records": ("records", LOWER),
    "duplicated_records": ("records", LOWER),
    "produced_records": ("records", "higher_is_better"),
    "run_wall_time_s": ("s", LOWER),
}
#: Relative tolerances for the baseline comparison (default 10 %): timing on a shared 2-core
#: machine is noisy, counts of lost/duplicated records are not.
TOLERANCES: dict[str, float] = {
    "reaction_time_s": 0.5, "detection_s": 1.0, "actuation_s": 1.0, "cold_start_s": 1.0,
    "join_s": 1.0, "first_fetch_s": 1.0, "peak_lag_records": 0.5,
    "lag_build_up_rate_per_s": 0.5, "drain_time_s": 0.5, "max_dip": 1.0,
    "max_recovery_s": 1.0, "scale_steps": 0.5, "replica_seconds": 0.3,
    "replica_seconds_ratio": 0.3, "drain_time_ratio": 0.5, "run_wall_time_s": 0.3,
    "lost_records": 0.0, "duplicated_records": 0.0,
    "cold_start_median_s": 1.0, "burst_load_average_max": 1.0,
    "mean_dip": 1.0, "rebalance_cost_records": 1.0, "even_spread_replica_seconds_ratio": 0.3,
    "even_spread_drain_time_ratio": 0.5,
}


def run_title(label: str, inputs: Inputs) -> str:
    """The name a run goes by in its summary, timeline PNG and terminal table: its label and
    what the replicas ran on, e.g. ``spike-ci · engine spark, trigger 2 s``."""
    parts = [f"engine {inputs.engine}"]
    if "kubernetes" in inputs.versions:  # the real KEDA + HPA decided (--platform kubernetes)
        parts.append(f"KEDA {inputs.versions['keda']} + HPA {inputs.versions['kubernetes']}")
    if inputs.trigger_interval_s:
        parts.append(f"trigger {inputs.trigger_interval_s:g} s")
    if inputs.spark_remote:
        parts.append(f"remote {inputs.spark_remote}")
    return f"{label} · {', '.join(parts)}"


@dataclass
class RunResult:
    """One analysed run.

    Attributes:
        settings: what the run was given.
        run_dir: the run directory (``benchmark.json``, ``timeline.png``, ``summary.md``,
            ``timeline.parquet``/``.csv``, ``events.jsonl``, ``manifest.json``, ``store/``).
        spec: thresholds and bounds the analysis used.
        measurements: every DESIGN.md measurement.
        reconciliation: lost/duplicated from the Spark job, or None when it could not run.
        timeline, events: the two recorded tables.
        inputs: the run's inputs as written in the JSON.
        artifacts: name -> path of every file the run left.
        extra_metrics: values of :data:`RUN_METRICS`.
        run_info: what the run was besides its inputs (topic, group, lagThreshold, replica
            bounds, per-replica capacity, graceful drain, settled, files), under ``run``.
        assertions: assertions recorded so far (by :meth:`check`).
        experiment: an experiment's own figures and tables (by :meth:`record`), under
            ``experiment`` in the JSON.
        machine_info, commit_info: the environment (see :mod:`.environment`).
        store_times: the store's record times (:class:`~..analyze.store_rate.StoreTimes`),
            read once by the analysis; None when there is no store.
        world: what the run saw and could not (``faults``, ``lag_unread_s``,
            ``lag_unread_longest_s``, ``settled``, ``incomplete``, ``problems``:
            :func:`~.analysis.world_of`), top-level keys of ``benchmark.json``.
    """

    settings: RunSettings
    run_dir: Path
    spec: RunSpec
    measurements: Measurements
    reconciliation: Any
    timeline: pd.DataFrame
    events: pd.DataFrame
    inputs: Inputs
    artifacts: dict[str, Path] = field(default_factory=dict)
    extra_metrics: dict[str, float | None] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)
    assertions: list[Assertion] = field(default_factory=list)
    experiment: dict[str, Any] = field(default_factory=dict)
    machine_info: Mapping[str, Any] = field(default_factory=dict)
    commit_info: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    store_times: Any = None
    world: dict[str, Any] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        """One line per reason this run is not a good one (not settled, lag unread for more
        than 10 % of it, ended early); empty for a good run."""
        return list(self.world.get("problems", ()))

    @property
    def benchmark_path(self) -> Path:
        """``<run_dir>/benchmark.json``."""
        return self.run_dir / BENCHMARK_JSON

    @property
    def metrics(self) -> dict[str, float | None]:
        """Metric name -> value (units in :data:`~..analyze.measure.METRICS` and
        :data:`RUN_METRICS`); None = not measurable in this run."""
        return {**self.measurements.flat(), **self.extra_metrics}

    def document(self) -> dict[str, Any]:
        """The benchmark JSON document (schema of :mod:`..report.benchjson`)."""
        specs = {**METRICS, **RUN_METRICS}
        run = BenchmarkRun(
            inputs=self.inputs,
            metrics=metrics_from_flat(self.metrics, specs, TOLERANCES),
            assertions=tuple(self.assertions),
            artifacts={name: str(path) for name, path in self.artifacts.items()},
            machine_info=self.machine_info, commit_info=self.commit_info)
        doc = build_document(run, self.created_at)
        doc["run"] = {**self.run_info, "label": self.settings.label(),
                      "run_dir": str(self.run_dir),
                      "reaction_replica": self.measurements.reaction.replica_id,
                      "reaction_incomplete": self.measurements.reaction.reason,
                      "reconciliation": (self.reconciliation.to_dict()
                                         if self.reconciliation is not None else None)}
        scale_out = self.measurements.scale_out
        doc["scale_out"] = scale_out.to_dict() if scale_out is not None else None
        doc.update(self.measurements.detail())  # "steps" and "skew"
        doc["experiment"] = self.experiment
        doc.update({key: value for key, value in self.world.items() if key != "lag_max_age_s"})
        return doc

    @property
    def title(self) -> str:
        """See :func:`run_title`."""
        return run_title(self.settings.label(), self.inputs)

    def write(self) -> Path:
        """(Re)write ``benchmark.json`` and ``summary.md`` atomically; returns the JSON path."""
        tmp = self.benchmark_path.with_name(f".{BENCHMARK_JSON}.tmp")
        tmp.write_text(json.dumps(self.document(), indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, self.benchmark_path)
        write_summary(self.run_dir / SUMMARY_MD, self.measurements, self.assertions,
                      title=f"lagscale run {self.title}", experiment=self.experiment)
        return self.benchmark_path

    def record(self, name: str, value: Any) -> Any:
        """Record an experiment's figure or table (JSON-ready) under ``experiment.<name>`` of
        ``benchmark.json`` and rewrite the reports; returns ``value``. Experiments record what
        they compare before they assert on it."""
        self.experiment[name] = value
        self.write()
        return value

    def check(self, name: str, value: float | None, threshold: float | None,
              passed: bool) -> bool:
        """Record one acceptance assertion and rewrite the reports; returns ``passed``.

        Args:
            name: what is asserted, e.g. ``"reaction_time_s < 90"``.
            value: the measured value (None when it could not be measured).
            threshold: the limit it is held to.
            passed: the verdict (a None value should be passed as False).
        """
        self.assertions.append(Assertion(name, threshold, value, "pass" if passed else "fail"))
        self.write()
        return passed
