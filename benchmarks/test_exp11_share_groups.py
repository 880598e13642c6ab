"""Experiment 11 — past the partition ceiling with a share group? (KIP-932, docs/experiments.md)

What it asks: experiment 4 shows that P partitions cap a consumer group's useful parallelism. A
share group (Apache Kafka 4.2+, KIP-932; the pinned broker is 4.3.1) lets several members
consume one partition: records are acquired one by one under a lock (30 s), acknowledged, and
redelivered (delivery count + 1) when a lock expires or a member releases them. Does a share
group of the same replicas use 2P replicas where a consumer group cannot, and at what cost in
redeliveries, duplicates and dips? A vendor demo claims share-group autoscaling has "no
rebalancing ... without throughput dips"; this measures it.

Runs (ci: P = 4, the ``ceiling-ci`` profile: 2,000 records/s for 55 s, 500 per partition
against ~400 per Spark replica, uniform keys, so every partition stays backlogged at P and at
2P): experiment 4's two consumer-group runs (``scaledobject-ceiling-idle-ci``: scaled P -> 2P,
and ``scaledobject-ceiling-ci``: capped at P; the session shares them with experiment 4) and two
share-group runs of the same Spark replicas (``--group-type share``) under the share-group scaler
the run serves itself (``scaledobject-share-group-ceiling-ci``: P -> 2P on the share group's
lag, no partition cap; ``scaledobject-share-group-ceiling-capped-ci``: held at P). Throughput "at
P" is the capped run's and "at 2P" the scaled run's, over the same window of run time as
experiment 4 (from the last replica's join + 3 s, after every surplus replica's cold start, to
the spike's end), counted from the store's per-record write times.

Per group type: per-replica records, partitions each member was assigned (the group observer:
DescribeConsumerGroups, or the share group's members through Kafka's Admin), throughput at P
and 2P, redeliveries (stored rows with delivery count > 1), duplicates in the store (a
(partition, offset) stored more than once) attributed to redelivery (a later copy with delivery
count > 1: a lock expired or a member released it) or left unattributed, the scale steps' dips
(:mod:`pytest_lagscale.analyze.dip`), and processed == produced (0 lost).

Asserted: the consumer group's replicas beyond P add <= 5 % (experiment 4's rule); every share
run loses nothing, and every share-group duplicate is a redelivery (delivery count > 1). The
share group's gain beyond P, its duplicate cost and the verdict on "no dips" are recorded, not
asserted: they are what the experiment finds. A spike-ci run of the share group under its scaler
gives the reaction decomposed (detection, actuation, cold start). Not in the CI gate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pytest

from pytest_lagscale.analyze.completions import group_rate, run_completions
from pytest_lagscale.analyze.tables import spike_window

pytestmark = [pytest.mark.acceptance, pytest.mark.experiment(11), pytest.mark.integration,
              pytest.mark.xdist_group("ceiling")]

THROUGHPUT_TOLERANCE = 0.05   # experiment 4's rule for the consumer group
NO_DIP = 0.05                 # a dip below this reads as "no dip" (the rate's own batch noise)
SETTLE_AFTER_JOIN_S = 3.0     # after the last replica's join (its rebalance, its first batch)
MIN_WINDOW_S = 8.0            # a shorter window is not a measurement


def _suffix(scale: str) -> str:
    return "-ci" if scale == "ci" else ""


def _consumer_runs(lagscale_run: Any, scale: str) -> tuple[Any, Any]:
    """Experiment 4's runs: (scaled past P with allowIdleConsumers, capped at P)."""
    return (lagscale_run("ceiling", policy=f"scaledobject-ceiling-idle{_suffix(scale)}"),
            lagscale_run("ceiling", policy=f"scaledobject-ceiling{_suffix(scale)}"))


def _share_runs(lagscale_run: Any, scale: str) -> tuple[Any, Any]:
    """The share group's runs: (scaled P -> 2P, held at P)."""
    if scale != "ci":
        pytest.skip("experiment 11 has ci-scale share-group manifests only (P = 4 -> 8)")
    return (lagscale_run("ceiling", policy="scaledobject-share-group-ceiling-ci", group_type="share"),
            lagscale_run("ceiling", policy="scaledobject-share-group-ceiling-capped-ci", group_type="share"))


def _store(result: Any) -> Any:
    """The run's store (every replica's rows) as one pyarrow table, with ``delivery_count``
    for a share group's."""
    from pytest_lagscale.contract.rundir import RunDir
    from spark_consumer.store import SHARE_STORE_SCHEMA, STORE_SCHEMA, read_store

    share = result.run_info.get("group_type") == "share"
    return read_store(RunDir(result.run_dir).store, SHARE_STORE_SCHEMA if share else STORE_SCHEMA)


def _window(scaled: Any) -> tuple[float, float]:
    """[the last replica's first ``joined`` + settle, spike end], seconds since the run start:
    every surplus replica has started and joined (a consumer group's surplus joins and owns
    nothing; a share group's joins and is handed records)."""
    end_s = spike_window(scaled.events)[1]
    events = scaled.events
    joins = events[(events["event"] == "joined") & events["replica_id"].notna()]
    if end_s is None or not len(joins):
        return math.nan, math.nan
    last = float(joins.groupby("replica_id")["t_s"].min().max())
    return last + SETTLE_AFTER_JOIN_S, float(end_s)


def _throughput(completions: Any, start_s: float, end_s: float) -> float | None:
    if not end_s - start_s >= MIN_WINDOW_S:
        return None
    return group_rate(completions, start_s, end_s)


def duplicates(table: Any) -> dict[str, int]:
    """Rows, redelivered rows (delivery count > 1), duplicated (partition, offset) pairs and
    their extra rows, and how many duplicated pairs a redelivery explains (a copy with delivery
    count > 1) or none does; a store without ``delivery_count`` (a consumer group) counts every
    duplicate as unattributed."""
    keys = table.select(["partition", "offset"]).to_pandas()
    counts = keys.value_counts()
    dup = counts[counts > 1]
    has_count = "delivery_count" in table.column_names
    redelivered = int(pc.sum(pc.greater(table.column("delivery_count"), 1)).as_py() or 0) if has_count else 0
    explained = 0
    if has_count and len(dup):
        frame = table.select(["partition", "offset", "delivery_count"]).to_pandas()
        frame = frame.set_index(["partition", "offset"]).loc[dup.index]
        explained = int((frame.groupby(level=[0, 1])["delivery_count"].max() > 1).sum())
    return {"rows": table.num_rows, "redelivered_rows": redelivered, "duplicated_pairs": int(len(dup)),
            "duplicate_rows": int((dup - 1).sum()), "duplicates_from_redelivery": explained,
            "duplicates_unattributed": int(len(dup)) - explained}


def _per_replica(result: Any, completions: Any) -> list[dict[str, Any]]:
    """Per replica: records written and the most partitions the group observer saw it assigned
    (matched by ``client.id``, which holds the replica id)."""
    from pytest_lagscale.contract.eventlog import read_events
    from pytest_lagscale.contract.rundir import RunDir

    records = completions.groupby("replica_id")["records"].sum()
    assigned: dict[str, int] = {}
    path = RunDir(result.run_dir).source_events("group")
    for event in read_events(path) if path.is_file() else ():
        if event.get("event") == "group_snapshot":
            for member in event.get("members") or []:
                cid = str(member.get("client_id", ""))
                assigned[cid] = max(assigned.get(cid, 0), len(member.get("partitions") or ()))
    return [{"replica_id": rid, "records": int(n),
             "max_partitions": max((v for k, v in assigned.items() if rid in k), default=None)}
            for rid, n in records.items()]


def _steps(result: Any) -> list[dict[str, Any]]:
    """The run's scale steps up: when, to how many, the dip and its recovery."""
    return [{"t_s": s.t_s, "replicas": [s.replicas_before, s.replicas_after], "dip": s.dip,
             "dip_reason": s.dip_reason, "recovery_s": s.recovery_s,
             "rebalance_duration_s": s.rebalance_duration_s}
            for s in result.measurements.steps if s.direction == "up"]


def _figures(scaled: Any, capped: Any) -> dict[str, Any]:
    completions = run_completions(scaled.run_dir, scaled.events)
    start_s, end_s = _window(scaled)
    at_2p = _throughput(completions, start_s, end_s)
    at_p = _throughput(run_completions(capped.run_dir, capped.events), start_s, end_s)
    steps = _steps(scaled)
    dips = [s["dip"] for s in steps if s["dip"] is not None]
    return {
        "partitions": scaled.spec.partitions,
        "max_desired": int(scaled.timeline["desired_replicas"].max()),
        "window_s": [round(start_s, 2), round(end_s, 2)],
        "throughput_at_p_per_s": at_p, "throughput_at_2p_per_s": at_2p,
        "throughput_change": (at_2p / at_p - 1.0) if at_p and at_2p is not None else None,
        "per_replica": _per_replica(scaled, completions),
        "store": duplicates(_store(scaled)), "store_at_p": duplicates(_store(capped)),
        "lost_records": scaled.metrics.get("lost_records"),
        "lost_records_at_p": capped.metrics.get("lost_records"),
        "up_steps": steps, "max_dip": max(dips) if dips else None,
        "group_config": (scaled.run_info.get("share_group") or {}).get("group_config"),
        "run_dirs": [str(scaled.run_dir), str(capped.run_dir)],
    }


def test_share_group_past_the_partition_ceiling(lagscale_run, lagscale_settings) -> None:
    scale = lagscale_settings.scale
    c_scaled, c_capped = _consumer_runs(lagscale_run, scale)
    s_scaled, s_capped = _share_runs(lagscale_run, scale)
    consumer, share = _figures(c_scaled, c_capped), _figures(s_scaled, s_capped)
    gain = share["throughput_change"]
    no_dips = share["max_dip"] is not None and share["max_dip"] < NO_DIP
    verdict = (f"holds here: every measured share-group scale step's dip < {NO_DIP:.0%}" if no_dips else
               f"does not hold here: the share group's largest dip was {share['max_dip']:.1%}"
               if share["max_dip"] is not None else "not measured: no share-group scale step had a dip measured")
    s_scaled.record("share_groups", {"share": share, "consumer": consumer, "share_gain_beyond_p": gain,
                                     "consumer_gain_beyond_p": consumer["throughput_change"],
                                     "no_dips_claim": verdict})
    print(f"\nexperiment 11: consumer group {consumer['throughput_at_p_per_s']} -> "
          f"{consumer['throughput_at_2p_per_s']} records/s at P -> 2P ({consumer['throughput_change']}); "
          f"share group {share['throughput_at_p_per_s']} -> {share['throughput_at_2p_per_s']} ({gain}); "
          f"share store {share['store']}; dips consumer {consumer['max_dip']} share {share['max_dip']}; "
          f"{verdict}; runs {consumer['run_dirs']} {share['run_dirs']}")
    change = consumer["throughput_change"]
    unattributed = share["store"]["duplicates_unattributed"] + share["store_at_p"]["duplicates_unattributed"]
    verdicts = {
        "consumer group: no throughput beyond P": s_scaled.check(
            f"consumer group |throughput at 2P / at P - 1| <= {THROUGHPUT_TOLERANCE:g}", change,
            THROUGHPUT_TOLERANCE, change is not None and abs(change) <= THROUGHPUT_TOLERANCE),
        "share group scaled past P": s_scaled.check(
            "share group max desired_replicas > P", share["max_desired"], share["partitions"],
            share["max_desired"] > share["partitions"]),
        "share group lost nothing": s_scaled.check(
            "share group lost records == 0 (at 2P and at P)",
            (share["lost_records"] or 0) + (share["lost_records_at_p"] or 0), 0,
            share["lost_records"] == 0 and share["lost_records_at_p"] == 0),
        "share duplicates are redeliveries": s_scaled.check(
            "share group duplicates without a redelivery (delivery count > 1) == 0", unattributed, 0,
            unattributed == 0),
    }
    failed = [name for name, ok in verdicts.items() if not ok]
    assert not failed, f"{failed} failed; share {share}; consumer {consumer}; see {s_scaled.benchmark_path}"


def test_share_group_spike_under_its_scaler_reacts_and_loses_nothing(lagscale_run, lagscale_settings) -> None:
    if lagscale_settings.scale != "ci":
        pytest.skip("experiment 11's spike run has a ci-scale manifest only")
    result = lagscale_run("spike", policy="scaledobject-share-group-ci", group_type="share")
    m = result.metrics
    figures = {k: m.get(k) for k in ("reaction_time_s", "detection_s", "actuation_s", "cold_start_s", "join_s",
                                     "first_fetch_s",
                                     "peak_lag_records", "drain_time_s", "replica_seconds",
                                     "lost_records", "duplicated_records")}
    figures["store"] = duplicates(_store(result))
    result.record("share_spike", figures)
    print(f"\nexperiment 11 (spike-ci, share group under its scaler): {figures}; run {result.run_dir}")
    assert m.get("lost_records") == 0, f"lost {m.get('lost_records')}; see {result.benchmark_path}"
    assert figures["store"]["duplicates_unattributed"] == 0, figures
    assert m.get("reaction_time_s") is not None and np.isfinite(m["reaction_time_s"]), figures
