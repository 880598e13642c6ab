"""Experiment 6 — scale-down without loss (docs/design.md; an acceptance test).

After the spike, the drain and the scale-down to minReplicaCount, the downstream store must
hold every produced record exactly once when replicas drain gracefully on SIGTERM
(reconciled on Spark against the producer's manifest). The same run with graceful drain off
(scale-down SIGKILLs replicas) measures the duplication instead of asserting it is zero; it
still asserts that nothing is lost, since replicas commit only what they wrote.

The graceful run is the same run as experiment 2's (the ``lagscale_run`` fixture shares it).
Both runs' replicas are the ci Deployment's: Spark replicas (a local SparkSession each).
"""

from __future__ import annotations

import pytest

# Experiments 2 and 6 share the graceful spike run: one xdist_group keeps them on one worker.
pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(6), pytest.mark.integration,
              pytest.mark.xdist_group("spike-run")]


def _scale_downs(result) -> int:
    return sum(1 for step in result.measurements.steps if step.direction == "down")


def _killed(result) -> int:
    stopped = result.events[result.events["event"] == "replica_stopped"]
    return sum(1 for fields in stopped["fields"] if fields.get("outcome") == "killed")


@pytest.mark.gate
def test_graceful_scale_down_loses_and_duplicates_nothing(lagscale_run) -> None:
    result = lagscale_run()
    rec = result.reconciliation
    assert rec is not None, "the Spark reconciliation did not run; see the log"
    final = int(result.timeline.iloc[-1]["current_replicas"])
    print(f"\ngraceful: produced {rec.produced_total:,}, lost {rec.lost_total}, duplicated "
          f"{rec.duplicated_total}, scale-downs {_scale_downs(result)}, run dir "
          f"{result.run_dir}")
    verdicts = [
        result.check("scale-down steps >= 1", _scale_downs(result), 1, _scale_downs(result) >= 1),
        result.check("replicas == minReplicaCount at the end", final, result.spec.min_replicas,
                     final == result.spec.min_replicas),
        result.check("produced == acknowledged records reconciled", rec.produced_total,
                     result.metrics["produced_records"],
                     rec.produced_total == result.metrics["produced_records"] > 0),
        result.check("lost_records == 0", rec.lost_total, 0, rec.lost_total == 0),
        result.check("duplicated_records == 0", rec.duplicated_total, 0,
                     rec.duplicated_total == 0),
    ]
    assert all(verdicts), (f"lost {rec.lost_total} (e.g. {rec.lost_examples}), duplicated "
                           f"{rec.duplicated_total} (e.g. {rec.duplicated_examples}); see "
                           f"{result.benchmark_path}")


def test_scale_down_without_graceful_drain_measures_duplicates(lagscale_run) -> None:
    result = lagscale_run(graceful=False)
    rec = result.reconciliation
    assert rec is not None, "the Spark reconciliation did not run; see the log"
    killed = _killed(result)
    print(f"\nSIGKILL on scale-down: {killed} replicas killed, produced {rec.produced_total:,}, "
          f"lost {rec.lost_total}, duplicated {rec.duplicated_total} "
          f"({rec.duplicate_rows_total} extra rows), run dir {result.run_dir}")
    result.check("duplicated_records (measured)", rec.duplicated_total, None, True)
    verdicts = [
        result.check("replicas killed on scale-down >= 1", killed, 1, killed >= 1),
        result.check("lost_records == 0 (commit after write)", rec.lost_total, 0,
                     rec.lost_total == 0),
    ]
    assert all(verdicts), f"killed {killed}, lost {rec.lost_total}; see {result.benchmark_path}"
