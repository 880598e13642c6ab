"""The twin drives the Pods-metric HPA (hpa-pods-lag-ci) on the replicas' own lag: the per-pod
values are each replica's gauge (owned partitions with a known position, log end minus position,
read between batches at most once a second) as the newest 1 s scrape serves them, and a spike-ci
run scales out, back, and processes every record once."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from pytest_lagscale.control.hpa import PodMetric
from pytest_lagscale.twin.load import Production
from pytest_lagscale.twin.pod_lag import GAUGE_REFRESH_S, SCRAPE_INTERVAL_S, PodLagMetric
from pytest_lagscale.twin.run import TICK_S, params_for
from pytest_lagscale.twin.world import Batch, Draw, EventSink, Replica, World

from .conftest import settings


@pytest.fixture(scope="module")
def pods_run():
    """One simulated spike-ci run under hpa-pods-lag-ci (seed 7, draw 0)."""
    from pytest_lagscale.twin.run import simulate

    return simulate(settings(policy="hpa-pods-lag-ci"), seed=7)


def _decisions(run) -> list[tuple[float, int, int]]:
    rows = run.events[run.events["event"] == "decision"]
    return [(float(t), int(f["current_replicas"]), int(f["desired_replicas"]))
            for t, f in zip(rows["t_s"], rows["fields"])]


def test_settles_and_processes_every_record_once(pods_run) -> None:
    assert pods_run.settled
    assert pods_run.processed == pods_run.produced
    assert sum(pods_run.produced) == 210_000


def test_scales_out_during_the_spike_and_back_to_one(pods_run) -> None:
    decisions = _decisions(pods_run)
    ups = [d for d in decisions if d[2] > d[1]]
    downs = [d for d in decisions if d[2] < d[1]]
    assert ups and 60.0 < ups[0][0] < 150.0 and max(d[2] for d in ups) == 8
    assert downs and downs[0][0] > 150.0 and downs[-1][2] == 1
    assert all(f["via"] == "hpa_sync" for f in pods_run.events[
        pods_run.events["event"] == "decision"]["fields"])


def test_every_hpa_sync_reads_the_pods_metric_first(pods_run) -> None:
    events = pods_run.events
    syncs = events[events["event"] == "hpa_sync"]
    reads = events[events["event"] == "pod_metrics"]
    # the first read starts the schedule (no sync yet, as the local autoscaler's first step)
    assert len(syncs) > 50 and list(reads["t_s"])[1:] == list(syncs["t_s"])
    values = [f["values"] for f in reads["fields"]]
    assert {f["metric"] for f in reads["fields"]} == {"consumer_records_lag"}
    # a new replica is missing until it reports; the spike's backlog shows on the pods
    assert any(None in v.values() for v in values)
    assert max(sum(x for x in v.values() if x is not None) for v in values) > 16_000


def test_the_constants_are_the_real_runs() -> None:
    from spark_consumer.lag import ConsumerLagCollector

    from pytest_lagscale.observe.prometheus import PrometheusServer

    assert GAUGE_REFRESH_S == inspect.signature(
        ConsumerLagCollector).parameters["interval_s"].default
    assert SCRAPE_INTERVAL_S == inspect.signature(
        PrometheusServer).parameters["scrape_interval_s"].default


# -- a small constructed world -------------------------------------------------------------

def _world(spike_plan) -> World:
    """Four partitions, no production (offsets are set by hand), draw seed 3."""
    prod = Production(tick_s=TICK_S, cumulative=np.zeros((2, 4), dtype=np.int64),
                      total_records=0, end_s=0.0)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([3, 0])))
    return World(params_for(spike_plan), prod, Draw(seed=3, controller_phase_s=0.0, rng=rng),
                 EventSink())


def _replica(world: World, rid: str, ordinal: int, phase: str, owned: dict[int, float]):
    replica = Replica(rid=rid, ordinal=ordinal, started_s=-30.0, work_s=0.0, probe_phase_s=0.0,
                      phase=phase, owned=dict(owned))
    world.replicas.append(replica)
    return replica


def _start_batch(world: World, replica: Replica, t: float, counts: dict[int, int]) -> None:
    for q, n in counts.items():
        world.position[q] += n
    replica.batch = Batch(t, t + 0.3, t + 5.0, dict(counts), sum(counts.values()), tick_s=t)


def _end_batch(world: World, replica: Replica) -> None:
    for q, n in replica.batch.counts.items():
        world.committed[q] += n
    replica.batch = None


def _ticks(pod: PodLagMetric, first: int, last: int) -> None:
    for k in range(first, last + 1):
        pod.tick(k)


def test_pod_values_equal_the_hand_computed_lag_per_pod(spike_plan) -> None:
    w = _world(spike_plan)
    a = _replica(w, "replica-a", 0, "member", {0: 0.0, 1: 0.0})
    b = _replica(w, "replica-b", 1, "member", {2: 0.0, 3: 0.0})
    c = _replica(w, "replica-c", 2, "member", {})        # owns nothing: never a series
    d = _replica(w, "replica-d", 3, "starting", {})      # still starting
    w.log_end[:] = [1000, 800, 600, 400]
    w.committed[:] = [700, 500, 500, 400]
    w.position[:] = w.committed
    pod = PodLagMetric(w)
    # t = 0: a takes 300 + 200, b takes 100 of partition 2 (3 has nothing): read before that,
    # nothing is known yet (no position) -> every pod missing
    _start_batch(w, a, 0.0, {0: 300, 1: 200})
    _start_batch(w, b, 0.0, {2: 100})
    _ticks(pod, 0, 7)
    assert pod.values() == {"replica-a": None, "replica-b": None, "replica-c": None,
                            "replica-d": None}
    # t = 1: more produced; a committed and waits (read: 1100 - 1000 and 900 - 700), b still
    # in its batch (not read: its last reading, empty, stays)
    w.log_end[:] = [1100, 900, 650, 450]
    _end_batch(w, a)
    _ticks(pod, 8, 15)
    assert pod.values() == {"replica-a": 300, "replica-b": None, "replica-c": None,
                            "replica-d": None}
    # t = 2: b commits and starts its next batch at once (50 of 2, 50 of 3): read before it
    # takes them, and only partition 2 has a position (650 - 600); a lost partition 1: its
    # series is gone at the next scrape (1100 - 1000)
    _end_batch(w, b)
    _start_batch(w, b, 2.0, {2: 50, 3: 50})
    del a.owned[1]
    _ticks(pod, 16, 23)
    assert pod.values() == {"replica-a": 100, "replica-b": 50, "replica-c": None,
                            "replica-d": None}
    assert pod.read() == (PodMetric(100_000), PodMetric(50_000), PodMetric(None),
                          PodMetric(None))
    # a terminating replica is no pod of the scale target any more
    c.sigterm_s = 2.9
    assert list(pod.values()) == ["replica-a", "replica-b", "replica-d"]
    assert d.phase == "starting"


def test_a_reading_is_at_most_one_per_second_and_only_between_batches(spike_plan) -> None:
    w = _world(spike_plan)
    a = _replica(w, "replica-a", 0, "member", {0: 0.0})
    w.log_end[0], w.committed[0] = 500, 0
    w.position[:] = w.committed
    pod = PodLagMetric(w)
    _start_batch(w, a, 0.0, {0: 500})
    _ticks(pod, 0, 0)                 # read at t = 0 (nothing known), learns partition 0
    _end_batch(w, a)
    w.log_end[0] = 700
    _ticks(pod, 1, 7)                 # t < 1 s: no new reading
    assert pod.values() == {"replica-a": None}
    _start_batch(w, a, 1.0, {0: 200})
    _ticks(pod, 8, 8)                 # t = 1: read before the batch takes its 200
    w.log_end[0] = 900
    _ticks(pod, 9, 24)                # busy until t = 6: no new reading
    assert pod.values() == {"replica-a": 200}


def test_the_scrape_phases_leave_the_draws_other_random_inputs_alone(spike_plan) -> None:
    w = _world(spike_plan)
    state = w.draw.rng.bit_generator.state
    stream = w.draw.stream(1)
    assert w.draw.rng.bit_generator.state == state
    assert stream.integers(1 << 30) == w.draw.stream(1).integers(1 << 30)
    assert stream.integers(1 << 30) != w.draw.stream(2).integers(1 << 30)
