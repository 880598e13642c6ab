"""The twin drives the lag-per-slot halving policy (lag-per-slot-ci on spike-ci) through the
real control code: it scales out on the spike, halves back to minParallelism, honours the
cooldown, and every produced record is processed once."""

from __future__ import annotations

import pytest

from pytest_lagscale.config.bundled import manifest_names
from pytest_lagscale.tune.simulated import full_counterpart

from .conftest import settings


@pytest.fixture(scope="module")
def lag_per_slot_run():
    """One simulated spike-ci run under lag-per-slot-ci (seed 7, draw 0)."""
    from pytest_lagscale.twin.run import simulate

    return simulate(settings(policy="lag-per-slot-ci"), seed=7)


def _decisions(run) -> list[tuple[float, int, int]]:
    rows = run.events[run.events["event"] == "decision"]
    return [(float(t), int(f["current_replicas"]), int(f["desired_replicas"]))
            for t, f in zip(rows["t_s"], rows["fields"])]


def test_settles_and_processes_every_record_once(lag_per_slot_run) -> None:
    assert lag_per_slot_run.settled
    assert lag_per_slot_run.processed == lag_per_slot_run.produced
    assert sum(lag_per_slot_run.produced) == 210_000


def test_scales_out_on_the_spike_and_halves_back_to_min(lag_per_slot_run) -> None:
    decisions = _decisions(lag_per_slot_run)
    ups = [d for d in decisions if d[2] > d[1]]
    downs = [d for d in decisions if d[2] < d[1]]
    assert ups and ups[0][0] > 60.0 and max(d[2] for d in ups) == 8
    assert [d[2] for d in downs] == [max(d[1] // 2, 2) for d in downs] and downs[-1][2] == 2
    assert decisions == sorted(ups + downs) and max(d[0] for d in ups) < min(d[0] for d in downs)


def test_operations_are_a_cooldown_apart(lag_per_slot_run) -> None:
    times = [d[0] for d in _decisions(lag_per_slot_run)]
    assert len(times) >= 3 and min(b - a for a, b in zip(times, times[1:])) >= 30.0


def test_every_evaluation_is_a_lag_per_slot_event_every_2_s(lag_per_slot_run) -> None:
    events = lag_per_slot_run.events
    steps = events[events["event"] == "lag_per_slot"]
    gaps = steps["t_s"].diff().dropna()
    params = lag_per_slot_run_params()
    # its 2 s period plus the calibrated slip of a due step (idle to busy machine)
    assert len(steps) > 100
    assert gaps.min() >= 2.0 + params.controller_slip(0, 0) - 1e-3   # one schedule: always late
    assert gaps.max() <= 2.0 + params.controller_slip(16, 16) + 1e-3
    assert {f["reason"] for f in steps["fields"]} >= {"ScaleUp", "CoolingDown", "ScaleDownHalved"}


def lag_per_slot_run_params():
    from pytest_lagscale.twin.run import params_for, plan_of

    return params_for(plan_of(settings(policy="lag-per-slot-ci")))


def test_full_scale_counterpart_of_the_ci_manifest() -> None:
    assert full_counterpart("lag-per-slot-ci", manifest_names()) == "lag-per-slot"
