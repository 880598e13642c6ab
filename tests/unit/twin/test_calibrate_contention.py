"""The contention terms of the calibration act in the twin's world: engine time grows with the
replicas running and starting, cold starts slow down with the members running."""

from __future__ import annotations

import pytest

from pytest_lagscale.twin.params import with_changes
from pytest_lagscale.twin.run import params_for, simulate


def _engine_ready_s(run) -> list[float]:
    """replica_started -> engine_ready of every replica of a twin run, in start order."""
    started, out = {}, []
    for row in run.events.itertuples():
        if row.event == "replica_started":
            started[row.replica_id] = row.monotonic_s
        elif row.event == "engine_ready":
            out.append(row.monotonic_s - started[row.replica_id])
    return out


def test_engine_time_grows_with_members_and_starting_replicas(spike_plan) -> None:
    params = with_changes(params_for(spike_plan), per_batch_engine_s=0.2,
                          engine_s_per_member=0.05, engine_s_per_starting=0.3)
    assert params.engine_s() == pytest.approx(0.2)
    assert params.engine_s(members=8, starting=2) == pytest.approx(0.2 + 7 * 0.05 + 2 * 0.3)
    assert params.batch_s(2000, 8, 0) == pytest.approx(0.55 + 5.0)


def test_a_starting_replica_slows_batches_only_after_its_starting_delay(spike_plan) -> None:
    """load(t) counts a replica starting since 1 s as starting only without a delay, one
    starting since 5 s either way; load() (cold starts, the controller) counts both."""
    from .conftest import one_member_world
    from pytest_lagscale.twin.world import Replica

    def starting_at(delay_s: float) -> tuple[int, int, int]:
        params = with_changes(params_for(spike_plan), engine_starting_delay_s=delay_s)
        world, _ = one_member_world(params, [0, 0])
        for rid, started_s in (("young", 9.0), ("old", 5.0)):
            world.replicas.append(Replica(rid=rid, ordinal=1, started_s=started_s, work_s=5.0,
                                          probe_phase_s=0.0, phase="starting"))
        return world.load(10.0)[1], world.load()[1], world.load(10.0)[0]

    assert starting_at(0.0) == (2, 2, 1)
    assert starting_at(3.5) == (1, 2, 1)


def test_a_warming_member_slows_the_others_batches_more_than_a_settled_one(spike_plan) -> None:
    """engine_s counts each warming other member engine_s_per_warming more; the world counts a
    member as warming for engine_warming_s after its engine start, never the batch's own."""
    from .conftest import one_member_world
    from pytest_lagscale.twin.world import Replica

    params = with_changes(params_for(spike_plan), per_batch_engine_s=0.2,
                          engine_s_per_member=0.03, engine_s_per_starting=0.0,
                          engine_warming_s=30.0, engine_s_per_warming=0.04)
    assert params.engine_s(members=3, warming=2) == pytest.approx(0.2 + 2 * 0.03 + 2 * 0.04)
    world, _ = one_member_world(params, [0, 0])
    own = world.replicas[0]
    own.ready_at_s = 95.0
    for rid, ready_s in (("new", 90.0), ("settled", 50.0)):
        world.replicas.append(Replica(rid=rid, ordinal=1, started_s=ready_s - 8.0, work_s=0.0,
                                      probe_phase_s=0.0, phase="member", ready_at_s=ready_s))
    assert world.warming(100.0, own) == 1        # "new" (10 s); not "settled" (50 s), not own
    assert world.warming(100.0) == 2             # own counts when not excluded
    assert world.warming(125.0, own) == 0        # "new" settled at 120 s


def test_a_replicas_first_batches_take_the_warm_up(spike_plan) -> None:
    """The k-th batch's engine time x (1 + extra x exp(-(k - 1) / batches)); warm: x 1."""
    import math

    params = with_changes(params_for(spike_plan), per_batch_engine_s=0.2,
                          engine_s_per_member=0.0, engine_s_per_starting=0.0,
                          engine_warmup_extra=1.5, engine_warmup_batches=2.0)
    assert params.engine_s(batch=1) == pytest.approx(0.2 * 2.5)
    assert params.engine_s(batch=3) == pytest.approx(0.2 * (1 + 1.5 * math.exp(-1.0)))
    assert params.engine_s() == pytest.approx(0.2)  # warm
    assert params.batch_s(2000, batch=1) == pytest.approx(0.5 + 5.0)
    assert params.capacity_per_s == pytest.approx(2000 / 5.2)  # a warm replica's


def test_a_warm_up_slows_a_new_replicas_first_batches(spike_plan) -> None:
    """One fresh replica on a backlog: with a warm-up its first batches take longer, so it has
    processed fewer records after 20 s than without one (a whole run's drain is not the test: a
    slower first replica also scales the Deployment out earlier)."""
    from .conftest import records_on_a_backlog

    base = with_changes(params_for(spike_plan), engine_warmup_extra=0.0)
    cold = with_changes(base, engine_warmup_extra=20.0, engine_warmup_batches=3.0)
    assert records_on_a_backlog(cold, 20) < 0.7 * records_on_a_backlog(base, 20)


def test_a_busier_machine_drains_slower(spike_plan, spike_production) -> None:
    base = with_changes(params_for(spike_plan), engine_s_per_member=0.0,
                        engine_s_per_starting=0.0)
    loaded = with_changes(base, engine_s_per_member=0.3)
    quiet_run = simulate(spike_plan, base, seed=1, prod=spike_production)
    busy_run = simulate(spike_plan, loaded, seed=1, prod=spike_production)
    quiet = quiet_run.measurements.flat()["drain_time_s"]
    busy = busy_run.measurements.flat()["drain_time_s"]
    assert busy > quiet * 1.2, (quiet, busy)


def test_members_slow_cold_starts(spike_plan, spike_production) -> None:
    base = with_changes(params_for(spike_plan), cold_start_member_load=0.0, cold_start_jitter=0.0,
                        run_cold_start_sd=0.0, run_engine_sd=0.0)
    heavy = with_changes(base, cold_start_member_load=2.0)
    quiet = _engine_ready_s(simulate(spike_plan, base, seed=1, prod=spike_production))
    busy = _engine_ready_s(simulate(spike_plan, heavy, seed=1, prod=spike_production))
    # the first replica starts alone on an idle machine: alone_s either way (to the tick)
    assert quiet[0] == pytest.approx(base.cold_start_alone_s, abs=0.126)
    assert busy[0] == pytest.approx(quiet[0])
    # the burst starts with one member running: slower when members load the machine
    assert min(busy[1:]) > max(quiet[1:]) * 0.99 and sum(busy[1:]) > sum(quiet[1:]) * 1.1


def test_cooperative_joins_wait_only_for_an_unserved_callback(spike_run) -> None:
    """cooperative-sticky: a new member joins round_s after the round's last change when no
    member has a rebalance callback left to serve; a member that has one (a revocation or an
    assignment delivered while it was mid-batch) rejoins only at its next batch boundary, where
    it serves it (librdkafka rejoins only once the application's assign/unassign call is done;
    the callbacks run inside ``consume()``, between batches), and the round ends then, or
    round_s later when that was within round_s of the round's last change. So a slow join ends
    at, or round_s after, another member's ``revoked`` or ``assigned``."""
    round_s = params_for_run(spike_run).round_s["cooperative"]
    tick_s = 0.126
    subscribed: dict[str, float] = {}
    joins, served = [], []
    for row in spike_run.events.itertuples():
        if row.event == "subscribed":
            subscribed[row.replica_id] = row.monotonic_s
        elif row.event == "joined" and row.replica_id in subscribed:
            joins.append((row.replica_id, row.monotonic_s))
        elif row.event in ("revoked", "assigned") and row.fields.get("partitions"):
            served.append((row.replica_id, row.monotonic_s))
    # prompt: round_s after the last subscribe (its own or a later member's) before the join
    slow = [(rid, t) for rid, t in joins
            if t - max(at for at in subscribed.values() if at <= t) > round_s + tick_s]
    assert len(joins) >= 7 and slow, joins
    for rid, t in slow:
        assert any(other != rid and min(abs(t - at), abs(t - round_s - at)) <= tick_s
                   for other, at in served), (rid, t, served)


def params_for_run(run):
    """The bundled spark calibration's parameters of the spike-ci plan."""
    from pytest_lagscale.twin.run import plan_of
    from tests.unit.twin.conftest import settings

    return params_for(plan_of(settings()))
