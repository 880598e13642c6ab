"""Experiment 3 — the rebalance dip by protocol.

The same scale-out under saturation (``rebalance-ci``: P = 4, 10 s at 200/s, 50 s at 2,000/s —
more than the group's ~1,400/s at 4 Spark replicas — then 200/s while the backlog drains; at
``full``, ``rebalance``: P = 24 at the lab's rates) runs four times on Spark replicas, under
``scaledobject-rebalance[-ci]``: the ci ScaledObject with one replica per scale-up step (1 -> 2
-> 3 -> 4, every 10 s), so every step's rebalance hits members that are already saturated (a
single 1 -> 5 step measures almost nothing: before it one replica works, after it five), and
maxReplicaCount = P (which also keeps KEDA's floor-cap quirk from adding an idle fifth):

* ``range``: eager (stop-the-world) rebalancing, every partition revoked at every change;
* ``cooperative-sticky``: incremental cooperative rebalancing (KIP-429), only moved partitions
  stop;
* ``consumer``: the KIP-848 protocol, the broker's uniform assignor;
* ``cooperative-sticky`` with static membership (``group.instance.id`` per replica slot,
  ``--static-membership``, classic session timeout 45 s).

At the end of the saturation a ``rolling_restart`` restarts every replica, oldest first (SIGTERM,
graceful drain, the same slot's replacement ready, then the next): with static membership a
restarted member comes back under its instance id, so the survivors should not rebalance.

Per scale step (``analyze.steps``, anchored at the step's rebalance, rate from the store's
per-record times): dip, recovery, rebalance_cost_records, rebalance duration (the replicas'
``rebalance_done`` durations, the observations of their rebalance histogram) and partitions
stopped. Per restart: the surviving members' rebalance callbacks and the dip at the restart.
Asserted: every variant's rolling restart completed, cooperative-sticky has a measured scale-out
dip, and static membership spares the survivors the restart's rebalances. The lab's SLO for
cooperative-sticky (dip < 20 % and recovery < 5 s on every measured scale-out step) and its
claim that range dips more than cooperative-sticky (mean dip over the scale-out steps) are
recorded and checked (:data:`LAB_TARGETS`); where the measurement contradicts them the test
reports a known miss (xfail) with the numbers (and, for the claim, :data:`EAGER_REASON`) rather
than a tuned threshold. Reported beside them:
KIP-848 and the drain time of the same backlog per protocol.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_lagscale.analyze.dip import rebalance_dip
from pytest_lagscale.config.bundled import resolve_profile
from pytest_lagscale.load.profiles import ActionSpec, load_profile
from pytest_lagscale.platform.image import LOCAL_IMAGES

pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(3), pytest.mark.integration,
              pytest.mark.xdist_group("exp3")]

#: variant -> RunSettings overrides
VARIANTS: dict[str, dict[str, Any]] = {
    "range": {"balancer": "range"},
    "cooperative-sticky": {"balancer": "cooperative-sticky"},
    "consumer": {"balancer": "consumer"},
    "cooperative-sticky-static": {"balancer": "cooperative-sticky", "static_membership": True},
}
DIP_LIMIT = 0.20          # the lab's SLO for cooperative-sticky, per step
RECOVERY_LIMIT_S = 5.0
CALLBACKS = ("assigned", "revoked", "lost")
RESTART_SETTLE_S = 5.0    # after a replacement is ready, its rebalance may still be running
LAB_CLAIM = "range mean dip > cooperative-sticky mean dip (the lab's claim)"
#: Verdicts on the lab's own claim and SLO: measured and recorded; a miss is a known miss (xfail
#: with the numbers), not a tuned threshold. Measured on the 2-core machine: cooperative-sticky
#: max recovery 6.27 s in one CI session (under 5 s in the one before), at a 4.4 s rate window.
LAB_TARGETS = frozenset({LAB_CLAIM, "cooperative dip", "cooperative recovery"})
#: Why the claim can miss here (measured): the replicas poll between 1 s micro-batches, so every
#: eager member rejoins within one poll and a range rebalance completes in 10-60 ms (anchor to
#: last callback), far below the rate window of 2 batch intervals (4-9 s under saturation);
#: a cooperative rebalance takes two rounds, 5-10 s here.
EAGER_REASON = ("an eager rebalance completes in 10-60 ms here (every member rejoins within one "
                "poll between 1 s micro-batches), below the rate window of two batch intervals")


def _run(lagscale_run, scale: str, variant: str) -> Any:
    """One variant's run (the session's cached one when another test ran it)."""
    profile = load_profile(resolve_profile("rebalance", scale))
    restart_at_s = profile.shape.spike_start_s + profile.shape.spike_hold_s
    restart = (ActionSpec(restart_at_s, "rolling_restart", {"pause_s": 1}),)
    policy = "scaledobject-rebalance" + ("-ci" if scale == "ci" else "")
    return lagscale_run("rebalance", policy=policy, actions=restart, **VARIANTS[variant])


def _runs(lagscale_run, scale: str) -> dict[str, Any]:
    return {name: _run(lagscale_run, scale, name) for name in VARIANTS}


def _restarts(result, store) -> list[dict[str, Any]]:
    """Per restarted replica: the survivors' rebalance callbacks and the dip at the restart."""
    ev = result.events
    started = ev[ev["event"] == "replica_restart_started"]
    done = ev[ev["event"] == "replica_restarted"]
    out = []
    for (t0, replica_id), (t1, done_fields) in zip(zip(started["t_s"], started["replica_id"]),
                                                   zip(done["t_s"], done["fields"])):
        mine = {replica_id, done_fields.get("replacement_id")}
        window = ev[(ev["t_s"] >= t0) & (ev["t_s"] <= t1 + RESTART_SETTLE_S)
                    & ev["event"].isin(CALLBACKS)]
        survivors = window[~window["replica_id"].isin(mine)]
        dip = rebalance_dip(store, result.timeline, float(t0)) if store is not None else None
        out.append({"replica_id": replica_id, "t_s": round(float(t0), 3),
                    "downtime_s": done_fields.get("downtime_s"),
                    "survivor_callbacks": int(len(survivors)),
                    "survivor_revoked_partitions": int(sum(
                        len(f.get("partitions") or ()) for e, f in
                        zip(survivors["event"], survivors["fields"]) if e != "assigned")),
                    "dip": None if dip is None else dip.dip,
                    "dip_reason": None if dip is None else dip.reason,
                    "recovery_s": None if dip is None else dip.recovery_s,
                    "cost_records": None if dip is None else dip.cost_records})
    return out


def _summary(result, store) -> dict[str, Any]:
    ups = [s for s in result.measurements.steps if s.direction == "up"]
    dips = [s.dip for s in ups if s.dip is not None]
    restarts = _restarts(result, store)
    restart_dips = [r["dip"] for r in restarts if r["dip"] is not None]
    action = next((a for a in result.run_info.get("actions", [])
                   if a.get("action") == "rolling_restart"), {})
    return {
        "run_dir": str(result.run_dir),
        "steps": [s.to_dict() for s in result.measurements.steps],
        "up_steps": len(ups), "up_steps_measured": len(dips),
        "mean_dip": float(np.mean(dips)) if dips else None,
        "max_dip": max(dips) if dips else None,
        "max_recovery_s": max((s.recovery_s for s in ups if s.recovery_s is not None),
                              default=None),
        "rebalance_cost_records": float(sum(s.rebalance_cost_records or 0.0 for s in ups)),
        "rebalance_duration_max_s": max((s.rebalance_duration_s for s in ups
                                         if s.rebalance_duration_s is not None), default=None),
        "partitions_stopped": int(sum(s.partitions_stopped or 0 for s in ups)),
        "restarts": restarts,
        "restart_completed": bool(action) and not action.get("interrupted"),
        "restarted": action.get("restarted"),
        "restart_mean_dip": float(np.mean(restart_dips)) if restart_dips else None,
        "restart_cost_records": float(sum(r["cost_records"] or 0.0 for r in restarts)),
        "restart_survivor_callbacks": int(sum(r["survivor_callbacks"] for r in restarts)),
        "drain_time_s": result.metrics["drain_time_s"],
        "peak_lag_records": result.metrics["peak_lag_records"],
        "lost_records": result.metrics.get("lost_records"),
        "duplicated_records": result.metrics.get("duplicated_records"),
    }


@pytest.mark.gate
def test_cooperative_sticky_scale_out_dip_is_measured_and_its_restart_completes(
        lagscale_run, lagscale_settings) -> None:
    """The CI gate's run of experiment 3: cooperative-sticky alone. Its scale-out steps have a
    measured dip, its rolling restart completes, and the lab's SLO for it (dip < 20 %,
    recovery < 5 s per scale-out step) is checked; a miss of the SLO is a known miss (xfail
    with the numbers), as in :func:`test_rebalance_dip_by_protocol`, which reuses this run."""
    result = _run(lagscale_run, lagscale_settings.scale, "cooperative-sticky")
    coop = _summary(result, result.store_times)
    result.record("rebalance_dip_cooperative_sticky", coop)
    print(f"\ncooperative-sticky: up steps measured {coop['up_steps_measured']}/"
          f"{coop['up_steps']}, mean dip {coop['mean_dip']}, max dip {coop['max_dip']}, max "
          f"recovery {coop['max_recovery_s']} s, restarted {coop['restarted']}, drain "
          f"{coop['drain_time_s']} s; run dir {result.run_dir}")
    coop_steps = [s for s in result.measurements.steps if s.direction == "up"
                  and s.dip is not None]
    verdicts = {
        "restart completed": result.check(
            "cooperative-sticky: rolling restart completed (not interrupted)",
            coop["restarted"], None, coop["restart_completed"]),
        "cooperative steps measured": result.check(
            "cooperative-sticky: scale-out steps with a measured dip >= 1",
            len(coop_steps), 1, len(coop_steps) >= 1),
        "cooperative dip": result.check(
            f"cooperative-sticky: max dip < {DIP_LIMIT:.0%} per scale-out step", coop["max_dip"],
            DIP_LIMIT, coop["max_dip"] is not None and coop["max_dip"] < DIP_LIMIT),
        "cooperative recovery": result.check(
            f"cooperative-sticky: max recovery < {RECOVERY_LIMIT_S:g} s per scale-out step",
            coop["max_recovery_s"], RECOVERY_LIMIT_S,
            all(s.recovery_s is not None and s.recovery_s < RECOVERY_LIMIT_S
                for s in coop_steps) and bool(coop_steps)),
    }
    failed = [name for name, ok in verdicts.items() if not ok]
    assert not [name for name in failed if name not in LAB_TARGETS], \
        f"{failed} failed; {coop}; see {result.benchmark_path}"
    if failed:
        # The lab's SLO, measured and not tuned: a miss is recorded in the JSON (verdict fail)
        # and reported as a known miss with the numbers.
        pytest.xfail(f"the lab's cooperative-sticky SLO (dip < {DIP_LIMIT:.0%}, recovery < "
                     f"{RECOVERY_LIMIT_S:g} s) is missed here: max dip {coop['max_dip']}, max "
                     f"recovery {coop['max_recovery_s']} s (rate window "
                     f"{result.metrics.get('rate_window_s')} s; 4 Spark JVMs and the broker "
                     f"on {os.cpu_count()} cores)")


def test_rebalance_dip_by_protocol(lagscale_run, lagscale_settings) -> None:
    """All four variants side by side (the cooperative-sticky run is the gate test's): every
    rolling restart completes, static membership spares the survivors the restart's
    rebalances, and the lab's claim that range dips more than cooperative-sticky is checked (a
    miss is a known miss, xfail with :data:`EAGER_REASON`)."""
    runs = _runs(lagscale_run, lagscale_settings.scale)
    table = {name: _summary(run, run.store_times) for name, run in runs.items()}
    coop, eager, static = (table["cooperative-sticky"], table["range"],
                           table["cooperative-sticky-static"])
    drain = {name: row["drain_time_s"] for name, row in table.items()}
    faster = (eager["drain_time_s"] / coop["drain_time_s"]
              if eager["drain_time_s"] and coop["drain_time_s"] else None)
    comparison = {"variants": table, "drain_time_s": drain,
                  "range_over_cooperative_drain_time": faster,
                  "rate_window_s": runs["cooperative-sticky"].metrics.get("rate_window_s")}
    for run in runs.values():
        run.record("rebalance_dip", comparison)
    print("\nexperiment 3: variant, up steps measured, mean dip, max dip, max recovery s, cost "
          "records | restarts, survivor callbacks, mean dip, cost records | drain s")
    for name, row in table.items():
        print(f"  {name:26s} {row['up_steps_measured']}/{row['up_steps']} {row['mean_dip']} "
              f"{row['max_dip']} {row['max_recovery_s']} {row['rebalance_cost_records']:.0f} | "
              f"{row['restarted']} {row['restart_survivor_callbacks']} "
              f"{row['restart_mean_dip']} {row['restart_cost_records']:.0f} | "
              f"{row['drain_time_s']}")

    result = runs["cooperative-sticky"]
    completed = [name for name, row in table.items() if row["restart_completed"]]
    verdicts = {
        "restarts completed": result.check(
            "rolling restart completed (not interrupted) in every variant", len(completed),
            len(table), len(completed) == len(table)),
        LAB_CLAIM: runs["range"].check(
            LAB_CLAIM, eager["mean_dip"], coop["mean_dip"],
            None not in (eager["mean_dip"], coop["mean_dip"])
            and eager["mean_dip"] > coop["mean_dip"]),
        "static spares the survivors": runs["cooperative-sticky-static"].check(
            "rolling restart: survivors' rebalance callbacks, static < dynamic membership",
            static["restart_survivor_callbacks"], coop["restart_survivor_callbacks"],
            static["restart_survivor_callbacks"] < coop["restart_survivor_callbacks"]),
    }
    failed = [name for name, ok in verdicts.items() if not ok]
    assert not [name for name in failed if name not in LAB_TARGETS], \
        f"{failed} failed; {comparison}"
    # The lab's claim, measured and not tuned: a miss is recorded in the JSON (verdict fail)
    # and reported as a known miss with the numbers.
    if LAB_CLAIM in failed:
        pytest.xfail(f"the lab's claim is not confirmed here: range mean dip "
                     f"{eager['mean_dip']} vs cooperative-sticky {coop['mean_dip']}; "
                     f"{EAGER_REASON}")


#: The lab's own consumer (examples/franz-go-consumer: twmb/franz-go's balancers, commits after
#: processing, an output topic), a command consumer measured from the broker's side only:
#: rebalances from the group's generations, dips from its output topic's per-record times.
FRANZ_GO_VARIANTS: dict[str, dict[str, Any]] = {
    "range": {"balancer": "range"},
    "cooperative-sticky": {"balancer": "cooperative-sticky"},
}
FRANZ_GO_CLAIM = "franz-go: range mean dip > cooperative-sticky mean dip (the lab's claim)"


def _franz_go_run(lagscale_run, scale: str, variant: str) -> Any:
    """One franz-go variant's run: the same profile, ScaledObject and rolling restart as
    :func:`_run`, with the franz-go Deployment (skipped where Go cannot build it)."""
    script = Path(__file__).resolve().parents[1] / LOCAL_IMAGES["pytest-lagscale/franz-go-consumer"]
    built = subprocess.run([str(script)], capture_output=True, text=True, timeout=600)
    if not built.stdout.strip():
        pytest.skip(f"the franz-go consumer cannot be built here: {built.stderr.strip()}")
    profile = load_profile(resolve_profile("rebalance", scale))
    restart_at_s = profile.shape.spike_start_s + profile.shape.spike_hold_s
    restart = (ActionSpec(restart_at_s, "rolling_restart", {"pause_s": 1}),)
    suffix = "-ci" if scale == "ci" else ""
    # the replica program's options do not apply to a command consumer: cleared
    return lagscale_run("rebalance", policy=f"scaledobject-rebalance{suffix}", actions=restart,
                        deployment=f"franz-go-consumer-deployment{suffix}", engine=None,
                        trigger_interval_s=None, spark_remote=None, static_membership=False,
                        **FRANZ_GO_VARIANTS[variant])


@pytest.mark.xdist_group("exp3-franz-go")
def test_rebalance_dip_with_the_labs_franz_go_consumer(lagscale_run, lagscale_settings) -> None:
    """Range (eager) vs cooperative-sticky with the lab's own client: dip per saturated scale
    step, recovery, rebalance duration from the broker's generations, partitions stopped, the
    rolling restart, drain of the same backlog, and exactness through the output topic (0 lost;
    duplicates measured). The lab's claim (range dips more) is checked; a miss is a known miss
    (xfail with the numbers)."""
    runs = {name: _franz_go_run(lagscale_run, lagscale_settings.scale, name)
            for name in FRANZ_GO_VARIANTS}
    table = {name: {**_summary(run, run.store_times),
                    "measured_from": run.run_info.get("measured_from")}
             for name, run in runs.items()}
    coop, eager = table["cooperative-sticky"], table["range"]
    comparison = {"variants": table, "client": "franz-go v1.22.3",
                  "rate_window_s": runs["cooperative-sticky"].metrics.get("rate_window_s")}
    for run in runs.values():
        run.record("rebalance_dip_franz_go", comparison)
    print("\nexperiment 3, franz-go: variant, up steps measured, mean dip, max dip, max recovery "
          "s, rebalance max s, partitions stopped | restarted, survivor callbacks | drain s | "
          "lost, duplicated")
    for name, row in table.items():
        print(f"  {name:20s} {row['up_steps_measured']}/{row['up_steps']} {row['mean_dip']} "
              f"{row['max_dip']} {row['max_recovery_s']} {row['rebalance_duration_max_s']} "
              f"{row['partitions_stopped']} | {row['restarted']} "
              f"{row['restart_survivor_callbacks']} | {row['drain_time_s']} | "
              f"{row['lost_records']}, {row['duplicated_records']}")
    result = runs["cooperative-sticky"]
    verdicts = {
        "measured from the output topic": result.check(
            "franz-go: variants whose dips and exactness came from the output topic",
            sum((row["measured_from"] or {}).get("rates_and_dips") == "output_topic"
                and (row["measured_from"] or {}).get("exactness") == "output_topic"
                for row in table.values()), len(table),
            all((row["measured_from"] or {}).get("rates_and_dips") == "output_topic"
                and (row["measured_from"] or {}).get("exactness") == "output_topic"
                for row in table.values())),
        "nothing lost": result.check(
            "franz-go: lost records, both variants (output topic)",
            sum(row["lost_records"] or 0 for row in table.values()), 0,
            all(row["lost_records"] == 0 for row in table.values())),
        "restarts completed": result.check(
            "franz-go: variants whose rolling restart completed",
            sum(bool(row["restart_completed"]) for row in table.values()), len(table),
            all(row["restart_completed"] for row in table.values())),
        FRANZ_GO_CLAIM: runs["range"].check(
            FRANZ_GO_CLAIM, eager["mean_dip"], coop["mean_dip"],
            None not in (eager["mean_dip"], coop["mean_dip"])
            and eager["mean_dip"] > coop["mean_dip"]),
    }
    failed = [name for name, ok in verdicts.items() if not ok]
    assert not [name for name in failed if name != FRANZ_GO_CLAIM], \
        f"{failed} failed; {comparison}"
    if FRANZ_GO_CLAIM in failed:
        pytest.xfail(f"the lab's claim is not confirmed with franz-go here: range mean dip "
                     f"{eager['mean_dip']} vs cooperative-sticky {coop['mean_dip']}")
