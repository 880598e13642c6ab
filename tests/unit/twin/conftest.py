"""Shared inputs of the twin's tests: the bundled spike-ci run, planned once."""

from __future__ import annotations

import pytest

from pytest_lagscale.experiment.settings import RunSettings


def settings(**changes) -> RunSettings:
    """The bundled spike-ci run (profile spike-ci, policy scaledobject-ci) with ``changes``."""
    return RunSettings(**{"profile": "spike-ci", "policy": "scaledobject-ci", **changes})


@pytest.fixture(scope="session")
def spike_plan():
    """The planned spike-ci run."""
    from pytest_lagscale.twin.run import plan_of

    return plan_of(settings())


@pytest.fixture(scope="session")
def spike_production(spike_plan):
    """Its per-partition production on the twin's grid."""
    from pytest_lagscale.twin.load import production
    from pytest_lagscale.twin.run import TICK_S

    return production(spike_plan.profile, TICK_S)


@pytest.fixture(scope="session")
def spike_run(spike_plan, spike_production):
    """One simulated spike-ci run (seed 7, draw 0)."""
    from pytest_lagscale.twin.run import simulate

    return simulate(spike_plan, seed=7, prod=spike_production)


def one_member_world(params, cumulative):
    """``(world, replica)``: the twin's world with ``params`` on one partition whose produced
    records by each tick are ``cumulative`` (ints), and one member replica already past its
    start that owns the partition (fetchable since -1 s)."""
    import numpy as np

    from pytest_lagscale.twin.load import Production
    from pytest_lagscale.twin.run import TICK_S
    from pytest_lagscale.twin.world import Draw, EventSink, Replica, World

    table = np.asarray(cumulative, dtype=np.int64).reshape(-1, 1)
    prod = Production(tick_s=TICK_S, cumulative=table, total_records=int(table[-1, 0]),
                      end_s=(len(table) - 1) * TICK_S)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([1, 0])))
    world = World(params, prod, Draw(seed=1, controller_phase_s=0.0, rng=rng), EventSink())
    replica = Replica(rid="r", ordinal=0, started_s=-10.0, work_s=0.0, probe_phase_s=0.0,
                      phase="member", owned={0: -1.0})
    world.replicas.append(replica)
    return world, replica


def records_on_a_backlog(params, seconds: float) -> int:
    """Records one member replica (already past its start, owning partition 0 of a backlog that
    never runs dry) has processed after ``seconds`` of the twin's world with ``params``."""
    from pytest_lagscale.twin.run import TICK_S

    ticks = int(seconds / TICK_S)
    world, _ = one_member_world(params, [10_000_000] * (ticks + 1))
    for k in range(ticks + 1):
        world.tick(k)
    return int(world.processed[0])
