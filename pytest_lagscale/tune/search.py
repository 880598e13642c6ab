"""``lagscale tune``'s search: every point of a policy grid simulated in the twin, the cheapest
one that meets every SLO, and the Pareto fronts.

A point is the input ScaledObject with some fields changed (:mod:`.space`); its manifest is
parsed by the project's own parser and its policy built by the plan (the REAL control code),
then :func:`~pytest_lagscale.twin.run.simulate_draws` runs it ``draws`` times with the same
seed for every point (common random numbers: two points differ by their policy, not by their
luck). The objective is the median replica-seconds over the draws; a point is *feasible* when
every SLO holds at the draws' 95th percentile (:mod:`.slo`). Drain time (and the twin's settle)
is held to the INPUT manifest's lagThreshold at every point, so a point with a large
lagThreshold does not count as drained sooner by definition.

The search is an exhaustive grid (log-spaced for lagThreshold): the spaces a user tunes here
have tens to a few hundred points, which a grid covers in minutes and reproduces exactly;
``budget`` caps the grid's size.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from ..contract.errors import ConfigError
from ..twin.run import HEADLINE
from .slo import Slo
from .space import Axis, apply_point, grid

#: Most points evaluated without ``--budget``.
DEFAULT_BUDGET = 200
#: Most draws per point.
MAX_DRAWS = 1000
#: The objective (minimised) and the two axes of the Pareto fronts.
OBJECTIVE = "replica_seconds"
FRONT_METRICS = ("peak_lag_records", "drain_time_s")


@dataclass(frozen=True)
class TuneRequest:
    """A checked search.

    Attributes:
        plan: the input run's :class:`~pytest_lagscale.experiment.plan.RunPlan` (checked by
            :func:`~pytest_lagscale.twin.run.plan_of`).
        doc: the input policy manifest as loaded (a ScaledObject mapping); never modified.
        axes: the space (:func:`.space.parse_space`).
        slos: the objectives every chosen point must meet (:func:`.slo.parse_slos`).
        params: the twin's parameters.
        draws: draws per point (1..:data:`MAX_DRAWS`).
        seed: the draws' seed (the same for every point).
    """

    plan: Any
    doc: Mapping[str, Any]
    axes: tuple[Axis, ...]
    slos: tuple[Slo, ...]
    params: Any
    draws: int = 30
    seed: int = 0

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics kept per draw: the twin's headline ones and every SLO's."""
        return tuple(dict.fromkeys([*HEADLINE, *(s.metric for s in self.slos)]))


@dataclass(frozen=True)
class Point:
    """One evaluated point.

    Attributes:
        index: its place in the grid (0-based, last axis fastest).
        values: ``{key: value}`` of the tuned fields.
        problems: the manifest parser's lines when the combination is invalid (e.g.
            minReplicaCount > maxReplicaCount); such a point is not simulated.
        per_draw: per draw, ``{metric: value or None}`` of :attr:`TuneRequest.metrics`.
        slos: ``{slo text: (bound at the 95th percentile or None, holds)}``.
    """

    index: int
    values: Mapping[str, int]
    problems: tuple[str, ...] = ()
    per_draw: tuple[Mapping[str, float | None], ...] = ()
    slos: Mapping[str, tuple[float | None, bool]] = field(default_factory=dict)

    @property
    def simulated(self) -> bool:
        """The combination was valid and simulated."""
        return not self.problems and bool(self.per_draw)

    @property
    def feasible(self) -> bool:
        """Simulated and every SLO holds."""
        return self.simulated and all(ok for _, ok in self.slos.values())

    def values_of(self, metric: str) -> list[float | None]:
        """The metric's value in each draw (None: not measured in that draw)."""
        return [draw.get(metric) for draw in self.per_draw]

    def median(self, metric: str) -> float | None:
        """Median over the draws that measured it (None when none did)."""
        values = [v for v in self.values_of(metric) if v is not None]
        return statistics.median(values) if values else None

    def p95(self, metric: str) -> float | None:
        """The 95th-percentile draw (as an SLO ``metric<=...`` is held; None: unmeasured)."""
        return Slo(metric, "<=", 0.0).bound(self.values_of(metric))

    def to_dict(self) -> dict[str, Any]:
        """JSON form: values, validity, SLO verdicts, per-metric median/p95 and every draw."""
        return {"index": self.index, "values": dict(self.values),
                "problems": list(self.problems), "simulated": self.simulated,
                "feasible": self.feasible,
                "slos": {k: {"p95_bound": b, "holds": ok} for k, (b, ok) in self.slos.items()},
                "stats": {m: {"median": self.median(m), "p95": self.p95(m),
                              "measured": sum(v is not None for v in self.values_of(m))}
                          for m in (self.per_draw[0] if self.per_draw else {})},
                "per_draw": [dict(d) for d in self.per_draw]}


@dataclass(frozen=True)
class TuneResult:
    """A finished search.

    Attributes:
        request: what was searched.
        points: every grid point, in grid order.
        best: the feasible point of least median replica-seconds (ties: lower p95 drain, then
            lower p95 peak lag, then grid order), or None when no point meets every SLO.
        fronts: ``{metric: indices}``: the points not dominated on (median replica-seconds,
            p95 ``metric``) for each of :data:`FRONT_METRICS`, by ascending replica-seconds.
        elapsed_s: wall time of the search, seconds (None when not timed).
    """

    request: TuneRequest
    points: tuple[Point, ...]
    best: Point | None
    fronts: Mapping[str, tuple[int, ...]]
    elapsed_s: float | None = None

    def nearest_miss(self) -> Point | None:
        """When no point is feasible: the simulated point whose SLO bounds miss least (sum of
        relative excesses), for the report; None when nothing was simulated."""
        simulated = [p for p in self.points if p.simulated]
        if not simulated:
            return None

        def miss(point: Point) -> tuple[float, float, int]:
            excess = sum(s.excess(point.values_of(s.metric)) for s in self.request.slos)
            return excess, point.median(OBJECTIVE) or 0.0, point.index
        return min(simulated, key=miss)


def plan_with_policy(base: Any, config: Any) -> Any:
    """``base`` (a RunPlan) running ``config`` (a validated ScaledObject) instead of its policy:
    lagThreshold, replica range and policy kind derived as ``plan_run`` derives them; the
    reference lagThreshold (drain, settle) stays ``base``'s."""
    from ..control.policy.build import build_policy

    policy = build_policy(config)
    return replace(base, policy_config=config, lag_threshold=policy.lag_threshold_records,
                   policy_kind=policy.name,
                   replica_range=(policy.min_replicas, policy.max_replicas))


def evaluate(request: TuneRequest, index: int, values: Mapping[str, int]) -> Point:
    """Simulate one point (its manifest parsed first; an invalid one is returned unsimulated).

    Raises:
        ConfigError: the twin refuses the point's run (as :func:`.run.plan_of`).
    """
    from ..config.policy import parse_policy_manifest
    from ..twin.run import simulate_draws

    source = request.plan.policy_config.source
    try:
        config = parse_policy_manifest(apply_point(request.doc, values), source=source)
    except ConfigError as exc:
        return Point(index, dict(values), problems=tuple(exc.problems))
    plan = plan_with_policy(request.plan, config)
    draws = simulate_draws(plan, request.params, request.seed, request.draws)
    per_draw = tuple({m: run.measurements.flat().get(m) for m in request.metrics}
                     for run in draws.runs)
    point = Point(index, dict(values), per_draw=per_draw)
    verdicts = {}
    for slo in request.slos:
        values_ = point.values_of(slo.metric)
        verdicts[slo.text()] = (slo.bound(values_), slo.holds(values_))
    return replace(point, slos=verdicts)


def _sort_key(point: Point) -> tuple[float, float, float, int]:
    inf = float("inf")

    def value(v: float | None) -> float:
        return inf if v is None else v
    return (value(point.median(OBJECTIVE)), value(point.p95("drain_time_s")),
            value(point.p95("peak_lag_records")), point.index)


def best_point(points: Sequence[Point]) -> Point | None:
    """The feasible point of least median replica-seconds (see :attr:`TuneResult.best`)."""
    feasible = [p for p in points if p.feasible]
    return min(feasible, key=_sort_key) if feasible else None


def pareto_front(points: Sequence[Point], metric: str) -> tuple[int, ...]:
    """Indices of the simulated points not dominated on (median replica-seconds, p95
    ``metric``), both lower-is-better, by ascending replica-seconds (a point dominates another
    when it is no worse on both and better on one; points with either unmeasured are left
    out; equal points are all kept)."""
    rows = [(p.median(OBJECTIVE), p.p95(metric), p.index) for p in points if p.simulated]
    rows = sorted((x, y, i) for x, y, i in rows if x is not None and y is not None)
    front = []
    for x, y, i in rows:
        if not any((fx <= x and fy <= y) and (fx < x or fy < y) for fx, fy, _ in rows):
            front.append(i)
    return tuple(front)


def tune(request: TuneRequest, *, on_point: Callable[[Point, int], None] | None = None,
         clock: Callable[[], float] | None = None) -> TuneResult:
    """Evaluate every grid point and pick the best.

    Args:
        request: the checked search (:func:`.tune_setup.prepare` builds one).
        on_point: called after each point with it and the grid's size (progress).
        clock: monotonic seconds for :attr:`TuneResult.elapsed_s` (None: not timed).

    Raises:
        ConfigError: the twin refuses a point's run.
    """
    started = clock() if clock else None
    combos = grid(request.axes)
    points = []
    for index, values in enumerate(combos):
        point = evaluate(request, index, values)
        points.append(point)
        if on_point is not None:
            on_point(point, len(combos))
    fronts = {metric: pareto_front(points, metric) for metric in FRONT_METRICS}
    elapsed = (clock() - started) if clock and started is not None else None
    return TuneResult(request, tuple(points), best_point(points), fronts, elapsed)


__all__ = ["DEFAULT_BUDGET", "FRONT_METRICS", "MAX_DRAWS", "OBJECTIVE", "Point", "TuneRequest",
           "TuneResult", "best_point", "evaluate", "pareto_front", "plan_with_policy", "tune"]
