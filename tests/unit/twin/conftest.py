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
