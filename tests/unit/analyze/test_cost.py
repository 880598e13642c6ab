from __future__ import annotations

import pytest

from pytest_lagscale.analyze import (Baseline, baseline_at_min, ideal_drain_time_s,
                                     oracle_replica_seconds, oracle_replicas, replica_seconds)
from pytest_lagscale.analyze.cost import ratio

from . import synth


@pytest.mark.parametrize("ready, expected", [
    pytest.param({0: 1, 10: 3, 20: 2}, 10 * 1 + 10 * 3 + 10 * 2, id="step-function"),
    pytest.param(0, 0, id="no-replicas"),
    pytest.param(4, 120, id="constant"),
])
def test_replica_seconds_of_step_function(ready: object, expected: float) -> None:
    assert replica_seconds(synth.timeline(30, ready_replicas=ready)) == expected


def test_replica_seconds_uses_row_spacing() -> None:
    table = synth.timeline(3, ready_replicas=[2, 4, 6])
    table["t_s"] = [0.0, 2.0, 5.0]  # 2 s, 3 s and the last row's 1 s
    assert replica_seconds(table) == 2 * 2 + 4 * 3 + 6 * 1


@pytest.mark.parametrize("rate_per_s, expected", [
    pytest.param(0.0, 1, id="clipped-to-min"),
    pytest.param(250.0, 3, id="ceil"),
    pytest.param(300.0, 3, id="exact"),
    pytest.param(5000.0, 8, id="clipped-to-max"),
])
def test_oracle_replicas(rate_per_s: float, expected: int) -> None:
    assert oracle_replicas(rate_per_s, 100.0, min_replicas=1, max_replicas=8) == expected


def test_oracle_replicas_rejects_zero_capacity() -> None:
    with pytest.raises(ValueError) as info:
        oracle_replicas(1.0, 0.0, 1, 2)
    assert str(info.value) == ("capacity_per_s: 0.0 must be > 0 records/s; "
                               "measure one replica's throughput first")


def test_oracle_replica_seconds() -> None:
    table = synth.timeline(30, produce_rate_per_s={0: 100.0, 10: 250.0, 20: 0.0})
    assert oracle_replica_seconds(table, 100.0, 1, 8) == 10 * 1 + 10 * 3 + 10 * 1


@pytest.mark.parametrize("backlog, max_replicas, capacity, rate, expected", [
    pytest.param(6000.0, 4, 100.0, 100.0, 20.0, id="spare-300-per-s"),
    pytest.param(0.0, 4, 100.0, 100.0, 0.0, id="no-backlog"),
    pytest.param(6000.0, 1, 100.0, 100.0, None, id="no-spare-capacity"),
])
def test_ideal_drain_time(backlog: float, max_replicas: int, capacity: float, rate: float,
                          expected: float | None) -> None:
    assert ideal_drain_time_s(backlog, max_replicas, capacity, rate) == expected


@pytest.mark.parametrize("current, start_s, expected", [
    pytest.param(1, 0.0, Baseline(at_min=True, fraction=1.0), id="at-min"),
    pytest.param({0: 2, 5: 1}, 0.0, Baseline(at_min=False, fraction=0.75), id="warm-up-counted"),
    pytest.param({0: 2, 5: 1}, 5.0, Baseline(at_min=True, fraction=1.0), id="warm-up-skipped"),
    pytest.param(1, 20.0, Baseline(at_min=False, fraction=None), id="no-baseline-steps"),
])
def test_baseline_at_min(current: object, start_s: float, expected: Baseline) -> None:
    table = synth.timeline(40, current_replicas=current)
    assert baseline_at_min(table, 1, spike_start_s=20.0, start_s=start_s) == expected


@pytest.mark.parametrize("value, reference, expected", [
    pytest.param(30.0, 20.0, 1.5, id="ratio"),
    pytest.param(30.0, 0.0, None, id="zero-reference"),
    pytest.param(None, 20.0, None, id="missing-value"),
])
def test_ratio(value: float | None, reference: float | None, expected: float | None) -> None:
    assert ratio(value, reference) == expected
