"""Experiment 10 — the cost of a late lag signal (docs/experiments.md, "Experiment 10").

The ``spike`` profile (``spike-ci`` at ci: 90 s of 10x) under the same ScaledObject (the
committed one's replicas, HPA behavior, pollingInterval and threshold), with lag read from three
sources:

* ``broker``: KEDA's kafka trigger on the group's offsets, read at each poll
  (``scaledobject[-ci]``);
* ``prometheus``: KEDA's prometheus trigger on the run's Prometheus, which scrapes the lag
  exporter's kafka_exporter series every 1 s (``scaledobject-prometheus[-ci]``);
* ``cloudwatch``: KEDA's aws-cloudwatch trigger on MSK-style ``SumOffsetLag`` (Maximum per
  period) in a local moto server, to which the run publishes its real lag once a period
  (``scaledobject-cloudwatch[-ci]``: 60 s periods over 5 minutes at full, as MSK and the recipe;
  10 s over 60 s at ci, because spike-ci's spike lasts 90 s and a 60 s period would leave it
  nothing to measure but the wait — the manifest's header says so).

The three runs run at the same time, in the session's concurrent batch of the spike profile
(:mod:`pytest_lagscale.experiment.batch`: one ``lagscale run`` process each, on the session's
broker, each with its own topic, group, producer, Prometheus, moto and autoscaler), together with
experiment 9's six when the session has both; the broker run is then experiment 9's ``keda`` run
(the same options), run once. Every source sees the same seeded records at the same instants on
the same machine at the same moment. Engine: ``arrow`` at ci, because the batch's groups of up
to 8 replicas are more replicas than the 2-core machine holds as Spark JVMs; at full,
``spark-connect`` through one shared Spark Connect server (``experiment.lag_sources.engine`` /
``engine_reason``). The reconciliation still runs on Spark.

Per source (``experiment.lag_sources``, :mod:`pytest_lagscale.analyze.lag_delay`): reaction time
and its detection term (spike start -> first scale-out decision: the part the source changes),
the signal's staleness at the decisions (``datapoint_utc`` to the read, from the controller's
events), peak lag, drain time to the committed ScaledObject's lagThreshold, replica-seconds.

Asserted, after recording: every run completes with processed == produced (0 lost, 0
duplicated), and the broker's detection is no later than each other source's within one
controller period (the larger of pollingInterval and the HPA sync period: 3 s at ci, 15 s at
full): each run's schedule starts at its own first decision, so two runs reading the same lag at
the same instant may decide one period apart. The detection term is compared, not the whole
reaction: actuation, cold start, join and first fetch do not depend on the source and vary by
seconds between concurrent runs on a loaded machine.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.analyze.lag import drain
from pytest_lagscale.analyze.lag_delay import COLUMNS, broker_first, source_row, tolerance_s
from pytest_lagscale.analyze.reaction import reaction_time
from pytest_lagscale.analyze.tables import spike_window
from pytest_lagscale.config.bundled import resolve_profile
from pytest_lagscale.experiment.batch import ENGINE
from pytest_lagscale.experiment.finished import FinishedRun

pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(10), pytest.mark.integration,
              pytest.mark.xdist_group("concurrent")]

#: Source name -> manifest by scale.
SOURCES = {
    "broker": {"ci": "scaledobject-ci", "full": "scaledobject"},
    "prometheus": {"ci": "scaledobject-prometheus-ci", "full": "scaledobject-prometheus"},
    "cloudwatch": {"ci": "scaledobject-cloudwatch-ci", "full": "scaledobject-cloudwatch"},
}
ENGINE_REASONS = {
    "ci": ("three concurrent groups of up to 8 replicas are more replicas than the 2-core machine "
           "holds as Spark JVMs, and they share the spike batch with experiment 9's six groups: "
           "the replicas run the same pipeline in pyarrow; the reconciliation still runs on "
           "Spark"),
    "full": ("three concurrent groups share one Spark Connect server, as experiment 9: every "
             "replica a thin client, Spark enriches every batch"),
}


def run_options(source: str, scale: str) -> list[str]:
    """``lagscale run`` options of one source's run (the broker's are experiment 9's ``keda``
    run's, so a session with both runs it once)."""
    return ["--profile", str(resolve_profile("spike", scale)), "--policy", SOURCES[source][scale],
            "--scale", scale, "--engine", ENGINE[scale]]


def concurrent_members(profile: str, scale: str, folder: Path) -> dict[str, list[str]]:
    """The three runs on the spike profile in the session's concurrent batch
    (:mod:`pytest_lagscale.experiment.batch`); none for another profile."""
    return {name: run_options(name, scale) for name in SOURCES} if profile == "spike" else {}


@functools.cache
def _yardstick(scale: str) -> tuple[int, float]:
    """The committed ScaledObject's lagThreshold (records: every source's drain target) and its
    controller period (seconds: :func:`~pytest_lagscale.analyze.lag_delay.tolerance_s`)."""
    from pytest_lagscale.config.bundled import resolve_manifest
    from pytest_lagscale.config.policy import load_policy_manifest
    from pytest_lagscale.control.policy.build import build_policy

    policy = build_policy(load_policy_manifest(resolve_manifest(SOURCES["broker"][scale], "--policy")))
    return int(policy.lag_threshold_records), tolerance_s(policy.polling_interval_s, policy.sync_period_s)


def source_figures(run: FinishedRun, source: str, scale: str) -> dict[str, Any]:
    """One source's row (:func:`~pytest_lagscale.analyze.lag_delay.source_row`) plus where the
    run lies and what it lost."""
    start_s, end_s = spike_window(run.events)
    detection = reaction_time(run.events, start_s).detection_s if start_s is not None else None
    yardstick, _ = _yardstick(scale)
    full = min(int(run.run.get("max_replicas") or 1), int(run.inputs.get("partitions") or 1))
    drained = drain(run.timeline, end_s, yardstick, full).drain_time_s if end_s is not None else None
    rec = run.run.get("reconciliation") or {}
    return {**source_row(source, run.metrics, detection, drained, run.run.get("lag_signal") or {}),
            "manifest": run.inputs.get("policy"), "engine": run.inputs.get("engine"),
            "drain_yardstick_records": yardstick, "lost_records": rec.get("lost_total"),
            "duplicated_records": rec.get("duplicated_total"), "run_dir": str(run.run_dir)}


def table_lines(rows: dict[str, dict[str, Any]]) -> list[str]:
    """The per-source table as Markdown lines."""
    header = ["source", *COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in rows.items():
        cells = [name, *("-" if row.get(c) is None else f"{row[c]:,.1f}" for c in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def test_every_source_completes_and_the_broker_reacts_first(lagscale_concurrent,
                                                            lagscale_settings) -> None:
    scale = lagscale_settings.scale
    runs = lagscale_concurrent(__name__, "spike", lagscale_settings)
    rows = {name: source_figures(run, name, scale) for name, run in runs.items()}
    _, tolerance = _yardstick(scale)
    verdicts = broker_first(rows, tolerance)
    record: dict[str, Any] = {"profile": "spike", "table": rows, "engine": ENGINE[scale],
                              "engine_reason": ENGINE_REASONS[scale], "concurrent": True,
                              "tolerance_s": tolerance,
                              "broker_first": [{**v.__dict__, "sentence": v.sentence()} for v in verdicts]}
    for name, run in runs.items():
        run.record("lag_sources", {**record, "source": name, "row": rows[name]})
        run.mark_experiment(10)
    print("\n" + "\n".join(table_lines(rows)))
    for verdict in verdicts:
        print(verdict.sentence())
    lossless = {name: runs[name].check("processed == produced (lost == duplicated == 0)", _sum(row), 0,
                                       _sum(row) == 0) for name, row in rows.items()}
    broker = runs["broker"]
    first = [broker.check(f"broker detection <= {v.source} detection + {tolerance:g} s", v.broker_s,
                          None if v.other_s is None else v.other_s + tolerance, v.passed) for v in verdicts]
    failed = {name: (rows[name]["lost_records"], rows[name]["duplicated_records"])
              for name, ok in lossless.items() if not ok}
    assert not failed, f"(lost, duplicated) by source {failed}"
    assert all(first), "; ".join(v.sentence() for v in verdicts if not v.passed)


def _sum(row: dict[str, Any]) -> int | None:
    lost, dup = row.get("lost_records"), row.get("duplicated_records")
    return None if lost is None or dup is None else int(lost) + int(dup)
