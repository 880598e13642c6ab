"""Experiment 2 — scale-out reaction and drain (docs/design.md; an acceptance test).

A 10x step in the input rate (``spike-ci.yaml`` at ``--lagscale-scale ci``, ``spike.yaml`` at
``full``) must scale the consumer group out on lag: reaction time < 90 s with its five-part
breakdown reported, the backlog drains to <= 1 x lagThreshold after the spike with a monotone
drain at full parallelism, and the replicas return to minReplicaCount. Every assertion is
recorded in the run's ``benchmark.json`` (threshold, value, verdict) before it is asserted.
The replicas are the ci Deployment's: Spark replicas (a local SparkSession each), so the cold
start of the reaction is seven JVMs starting at once on the machine (``scale_out`` in the JSON
has it per replica, with the machine's load during the burst).
"""

from __future__ import annotations

import pytest

# Experiments 2 and 6 share the graceful spike run: one xdist_group keeps them on one worker.
pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(2), pytest.mark.integration,
              pytest.mark.xdist_group("spike-run")]

REACTION_LIMIT_S = 90.0


@pytest.mark.gate
def test_spike_scales_out_on_lag_reacts_drains_and_returns_to_min(lagscale_run) -> None:
    result = lagscale_run()
    m, spec = result.metrics, result.spec
    reaction = result.measurements.reaction
    print(f"\nreaction {m['reaction_time_s']} s = detection {m['detection_s']} + actuation "
          f"{m['actuation_s']} + cold start {m['cold_start_s']} + join {m['join_s']} + first "
          f"fetch {m['first_fetch_s']} (replica {reaction.replica_id}); peak lag "
          f"{m['peak_lag_records']}; drain {m['drain_time_s']} s; run dir {result.run_dir}")

    peak_desired = int(result.timeline["desired_replicas"].max())
    final = result.timeline.iloc[-1]
    verdicts = {
        "scaled out on lag": result.check(
            "max desired_replicas > minReplicaCount", peak_desired, spec.min_replicas,
            peak_desired > spec.min_replicas),
        "reaction time": result.check(
            f"reaction_time_s < {REACTION_LIMIT_S:g}", m["reaction_time_s"], REACTION_LIMIT_S,
            m["reaction_time_s"] is not None and m["reaction_time_s"] < REACTION_LIMIT_S),
        "breakdown complete": result.check(
            "reaction breakdown has all five parts", reaction.reason is None, None,
            reaction.reason is None),
        "drained": result.check(
            "lag <= 1 x lagThreshold after the spike (drain_time_s measured)",
            m["drain_time_s"], spec.lag_threshold_records, m["drain_time_s"] is not None),
        "monotone drain": result.check(
            "drain monotone at full parallelism", m["drain_monotone"], 1.0,
            m["drain_monotone"] == 1.0),
        "back to min": result.check(
            "replicas == minReplicaCount at the end", float(final["current_replicas"]),
            spec.min_replicas, int(final["current_replicas"]) == spec.min_replicas),
    }
    failed = [name for name, ok in verdicts.items() if not ok]
    assert not failed, (f"{failed} failed; reaction {reaction}, metrics {m}; see "
                        f"{result.benchmark_path}")
