"""``lagscale tune``'s search: points simulated through the project's own parser, plan and
policy; the best point and the Pareto fronts. Simulations are tiny (2 points, 1-2 draws)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pytest_lagscale.config.policy import parse_policy_manifest
from pytest_lagscale.tune.prepare import TuneOptions, prepare
from pytest_lagscale.tune.search import (Point, TuneResult, best_point, evaluate, pareto_front,
                                         plan_with_policy, tune)
from pytest_lagscale.tune.slo import Slo

from .conftest import settings


def _point(index: int, rs: float, lag: float, drain: float | None, feasible: bool = True,
           **values: int) -> Point:
    """A simulated point with one draw and the SLO verdict given."""
    draw = {"replica_seconds": rs, "peak_lag_records": lag, "drain_time_s": drain}
    return Point(index, values or {"lagThreshold": index}, per_draw=(draw,),
                 slos={"drain_time_s<=60": (drain, feasible)})


@pytest.fixture(scope="module")
def request_2x1():
    """A checked search of two lagThresholds on spike-ci, 1 draw, seed 3."""
    return prepare(TuneOptions(profile="spike-ci", policy="scaledobject-ci",
                               space=("lagThreshold=500|5000",), slos=("drain_time_s<=120",),
                               draws=1, seed=3))


def test_front_keeps_only_undominated_points_by_replica_seconds() -> None:
    points = [_point(0, 1000, 50_000, 40), _point(1, 800, 60_000, 50),
              _point(2, 900, 70_000, 45), _point(3, 800, 60_000, 55),
              _point(4, 700, 90_000, None), Point(5, {"lagThreshold": 5}, problems=("bad",))]
    assert pareto_front(points, "peak_lag_records") == (4, 1, 3, 0)
    # drain: 4 is unmeasured (left out); 3 is dominated by 1; 2 is not (45 < 50)
    assert pareto_front(points, "drain_time_s") == (1, 2, 0)


def test_best_is_the_cheapest_feasible_point_ties_by_drain_then_lag_then_index() -> None:
    points = [_point(0, 900, 50_000, 40), _point(1, 700, 40_000, 30, feasible=False),
              _point(2, 800, 60_000, 50), _point(3, 800, 55_000, 44),
              _point(4, 800, 50_000, 44), _point(5, 800, 50_000, 44),
              _point(6, 800, 40_000, 46)]
    assert best_point(points).index == 4
    assert best_point([points[1]]) is None


def test_plan_with_policy_derives_the_policy_fields_and_keeps_the_reference(spike_plan,
                                                                             request_2x1) -> None:
    from pytest_lagscale.tune.space import apply_point

    doc = apply_point(request_2x1.doc, {"lagThreshold": 5000, "minReplicaCount": 2,
                                        "maxReplicaCount": 6})
    plan = plan_with_policy(spike_plan, parse_policy_manifest(doc, source="tuned"))
    assert plan.lag_threshold == 5000 and plan.build_policy().lag_threshold_records == 5000
    assert plan.replica_range == (2, 6) and plan.min_replicas == 2
    assert plan.reference_lag_threshold == spike_plan.reference_lag_threshold == 500
    assert plan.policy_kind == spike_plan.policy_kind and plan.profile is spike_plan.profile


def test_a_point_simulates_as_the_run_planned_with_that_override(request_2x1) -> None:
    from pytest_lagscale.experiment.plan import plan_run
    from pytest_lagscale.twin.run import simulate

    point = evaluate(request_2x1, 1, {"lagThreshold": 5000})
    planned = replace(plan_run(settings(lag_threshold=5000)), reference_lag_threshold=500)
    expected = simulate(planned, request_2x1.params, seed=3, draw=0).measurements.flat()
    assert point.per_draw == ({m: expected[m] for m in request_2x1.metrics},)
    assert point.slos == {"drain_time_s<=120": (expected["drain_time_s"],
                                                expected["drain_time_s"] <= 120)}


def test_an_invalid_combination_is_recorded_and_not_simulated(request_2x1) -> None:
    point = evaluate(request_2x1, 0, {"minReplicaCount": 9})
    assert point.problems and "'spec.minReplicaCount': got 9" in point.problems[0]
    assert not point.simulated and not point.feasible and point.per_draw == ()


def test_tune_evaluates_the_grid_and_picks_the_best(request_2x1) -> None:
    ticks = iter([10.0, 12.5])
    seen = []
    result = tune(request_2x1, on_point=lambda p, n: seen.append((p.index, n)),
                  clock=lambda: next(ticks))
    assert seen == [(0, 2), (1, 2)] and result.elapsed_s == 2.5
    assert [p.values for p in result.points] == [{"lagThreshold": 500}, {"lagThreshold": 5000}]
    assert all(p.simulated for p in result.points)
    feasible = [p for p in result.points if p.feasible]
    assert result.best == min(feasible, key=lambda p: p.median("replica_seconds"))
    assert set(result.fronts) == {"peak_lag_records", "drain_time_s"}
    assert result.fronts["drain_time_s"]


def test_nearest_miss_is_the_point_missing_least() -> None:
    from pytest_lagscale.tune.search import TuneRequest

    request = TuneRequest(plan=None, doc={}, axes=(), slos=(Slo("drain_time_s", "<=", 60.0),),
                          params=None, draws=1)
    points = (_point(0, 500, 1, 90, feasible=False), _point(1, 900, 1, 70, feasible=False),
              _point(2, 400, 1, None, feasible=False))
    result = TuneResult(request, points, None, {})
    assert result.nearest_miss().index == 1
