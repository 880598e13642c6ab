"""``lagscale twin calibrate``: the twin's calibration, extracted from real runs' event logs and
stores.

:func:`calibrate` turns the :class:`~.facts.RunFacts` of real runs of one engine into a
calibration document (``schema_version: 1``, the keys of :mod:`pytest_lagscale.twin.params`);
:func:`render` writes it as YAML with each number's derivation as a comment. Every number comes
from an event-level fact (a replica's lifecycle events, its micro-batches in the store, the
broker's settings), never from a reaction time, peak lag, drain time or replica-seconds.
docs/twin.md ("Calibration: `lagscale twin calibrate`") gives the derivation of each key.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..contract.errors import ConfigError
from ..twin.params import SCHEMA_VERSION
from .controller import fit_controller
from .facts import RunFacts, run_settings

#: Grid of the cold-start fit: cores and member_load.
CORES_GRID = np.round(np.arange(0.5, 4.0001, 0.02), 3)
MEMBER_LOAD_GRID = np.round(np.arange(0.0, 1.5001, 0.01), 3)
#: Fewest batch samples for the contention regression (else constant engine time).
MIN_BATCHES = 20
#: Seconds after a batch's last write beyond which the next start is not engine time.
MAX_GAP_S = 3.0
#: Fewest runs with a factor for ``run_to_run`` (else the section is left out: one machine
#: speed in every draw), and fewest starts / batches that give one run its factor.
MIN_RUNS, MIN_RUN_STARTS, MIN_RUN_BATCHES = 3, 2, 10


def _median(values: Sequence[float], what: str) -> float:
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        raise ConfigError(f"{what}: no samples in the runs given; give runs that record it")
    return float(statistics.median(values))


def _processing(facts: RunFacts) -> tuple[float, int, int, float]:
    """``(process_ms, inflight, max_batch, trigger_interval_s)`` of a run's Deployment."""
    from ..contract.flags import FLAG_BY_OPTION
    from ..experiment.plan import plan_run

    plan = plan_run(run_settings(facts.benchmark))
    replica = plan.deployment.replica
    if replica is None:
        raise ConfigError(f"{plan.deployment.source}: calibration reads the replica program's "
                          "flags; this Deployment runs a command consumer")
    raw = replica.flags.get("--max-batch")
    max_batch = FLAG_BY_OPTION["--max-batch"].parse(raw) if raw else \
        FLAG_BY_OPTION["--max-batch"].default
    return (float(replica.process_ms), max(1, int(replica.inflight)), int(max_batch),
            float(plan.trigger_interval_s))


def engine_samples(facts: RunFacts, starting_delay_s: float = 0.0,
                   warming_s: float = 0.0) -> np.ndarray:
    """Rows ``(overhead_s, members - 1, starting, batch, warming)`` of a run's back-to-back
    batches; ``batch`` is the batch's number among its replica's batches in the store
    (1 = first); ``starting`` counts the replicas started ``starting_delay_s`` or more before
    the batch (:meth:`~.facts.RunFacts.counts_at`); ``warming`` the other members whose engine
    was ready less than ``warming_s`` before it (:meth:`~.facts.RunFacts.warming_at`; 0 when
    ``warming_s`` is 0)."""
    if facts.batches.empty:
        return np.empty((0, 5))
    process_ms, inflight, max_batch, trigger_s = _processing(facts)
    b = facts.batches.sort_values(["replica_id", "start_s"])
    b = b.assign(batch=b.groupby("replica_id").cumcount() + 1)
    cycle = b["next_start_s"] - b["start_s"]
    keep = ((cycle > trigger_s + 0.05) & (b["records"] >= max_batch / 2)
            & (b["next_start_s"] - b["write_end_s"] <= MAX_GAP_S))
    rows = []
    for rec, c in zip(b[keep].itertuples(), cycle[keep]):
        members, starting = facts.counts_at(rec.start_s, starting_delay_s=starting_delay_s)
        overhead = c - math.ceil(rec.records / inflight) * process_ms / 1000.0
        warming = facts.warming_at(rec.start_s, warming_s, exclude=rec.replica_id)
        rows.append((overhead, max(0, members - 1), starting, rec.batch, warming))
    return np.array(rows, dtype=float).reshape(-1, 5)


def warmup_factors(samples: np.ndarray, extra: float, batches: float) -> np.ndarray:
    """Each sample's warm-up factor ``1 + extra x exp(-(batch - 1) / batches)`` (1 for
    samples without a batch column), as ``TwinParams.warmup_factor``."""
    if samples.shape[1] < 4 or not extra:
        return np.ones(len(samples))
    return 1.0 + extra * np.exp(-(np.maximum(samples[:, 3], 1.0) - 1.0) / batches)


def fit_engine(samples: np.ndarray, scale: np.ndarray | None = None
               ) -> tuple[float, float, float, float]:
    """``(base_s, per_member_s, per_starting_s, per_warming_s)``: least squares of overhead on
    ``scale x [1, members - 1, starting, warming]`` (``warming``: the fifth column when there
    is one, else 0; ``scale``: each sample's warm-up factor, default 1; the conditional MEAN: a
    replica's throughput is records over the mean cycle, and the overhead is heavy-tailed: its
    median under-states it), slopes clipped at 0 (refitted without a clipped term); the
    (scaled) mean and zero slopes when there are fewer than :data:`MIN_BATCHES` samples or the
    load never varied.

    Raises:
        ConfigError: no samples at all.
    """
    if len(samples) == 0:
        raise ConfigError("processing.per_batch_engine_s: no back-to-back micro-batches in the "
                          "runs' stores; give runs with a backlog and their store/")
    y = samples[:, 0]
    w = np.ones(len(y)) if scale is None else scale
    terms = [t for t in (1, 2, 4) if t < samples.shape[1] and np.ptp(samples[:, t]) > 0]
    if len(samples) < MIN_BATCHES or not terms:
        return float(np.sum(w * y) / np.sum(w * w)), 0.0, 0.0, 0.0
    while True:
        x = w[:, None] * np.c_[np.ones(len(y)), samples[:, terms]]
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        negative = [t for t, b in zip(terms, beta[1:]) if b < 0]
        if not negative:
            break
        terms = [t for t in terms if t not in negative]
    slopes = dict(zip(terms, beta[1:]))
    return (max(0.0, float(beta[0])), float(slopes.get(1, 0.0)), float(slopes.get(2, 0.0)),
            float(slopes.get(4, 0.0)))


#: Grid of the warm-up fit: the first batch's extra fraction and the decay in batches.
WARMUP_EXTRA_GRID = np.round(np.arange(0.0, 3.0001, 0.05), 2)
WARMUP_BATCHES_GRID = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0)


def _predicted_s(samples: np.ndarray, w: np.ndarray, fit: tuple[float, ...]) -> np.ndarray:
    """Each sample's engine time under ``fit`` (:func:`fit_engine`'s) and its warm-up factor
    ``w``."""
    warming = fit[3] * samples[:, 4] if len(fit) > 3 and samples.shape[1] > 4 else 0.0
    return w * (fit[0] + fit[1] * samples[:, 1] + fit[2] * samples[:, 2] + warming)


def _squared_error(samples: np.ndarray, w: np.ndarray, fit: tuple[float, ...]) -> float:
    return float(np.sum((samples[:, 0] - _predicted_s(samples, w, fit)) ** 2))


def fit_warmup(samples: np.ndarray) -> tuple[float, float, tuple[float, ...]]:
    """``(extra, batches, fit_engine result)``: the replica's warm-up
    (its k-th batch's engine time x ``1 + extra x exp(-(k - 1) / batches)``: a fresh JVM's
    first batches run interpreted and compile as they go) and the warm engine terms, by least
    squares over :data:`WARMUP_EXTRA_GRID` x :data:`WARMUP_BATCHES_GRID` with
    :func:`fit_engine` at each point; no warm-up (extra 0) without a batch column or with fewer
    than :data:`MIN_BATCHES` samples.

    Raises:
        ConfigError: no samples at all.
    """
    plain = fit_engine(samples)
    if samples.shape[1] < 4 or len(samples) < MIN_BATCHES:
        return 0.0, 1.0, plain
    best = (_squared_error(samples, np.ones(len(samples)), plain), 0.0, 1.0, plain)
    for batches in WARMUP_BATCHES_GRID:
        for extra in WARMUP_EXTRA_GRID[1:]:
            w = warmup_factors(samples, float(extra), batches)
            fit = fit_engine(samples, w)
            err = _squared_error(samples, w, fit)
            if err < best[0] - 1e-12:
                best = (err, float(extra), float(batches), fit)
    return best[1], best[2], best[3]


#: Grid of the starting-delay fit, seconds after ``replica_started``.
STARTING_DELAY_GRID = np.round(np.arange(0.0, 8.0001, 0.5), 2)
#: Grid of the warming fit, seconds after a member's ``engine_ready`` (0: no warming term).
WARMING_GRID_S = (0.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0)

_Fitted = tuple[float, list[np.ndarray], tuple[float, float, tuple[float, ...]]]


def _best_on_grid(runs: Sequence[RunFacts], grid: Sequence[float],
                  samples_at: Any) -> _Fitted:
    """``(value, per_run_samples, fit_warmup result)`` of the ``grid`` value whose
    :func:`fit_warmup` over ``samples_at(run, value)`` of every run leaves the least squared
    error (the first of equal ones; the first value with fewer than :data:`MIN_BATCHES`
    samples)."""
    best: tuple[float, float, list[np.ndarray], Any] | None = None
    for value in grid:
        per_run = [samples_at(f, float(value)) for f in runs]
        samples = np.concatenate(per_run)
        extra, batches, fit = fit_warmup(samples)
        err = _squared_error(samples, warmup_factors(samples, extra, batches), fit)
        if best is None or err < best[0] - 1e-9:
            best = (err, float(value), per_run, (extra, batches, fit))
        if len(samples) < MIN_BATCHES:
            break
    assert best is not None
    return best[1], best[2], best[3]


def fit_starting_delay(runs: Sequence[RunFacts]) -> _Fitted:
    """``(delay_s, per_run_samples, fit_warmup result)``: from how long after its
    ``replica_started`` a starting replica slows the members' batches, the delay on
    :data:`STARTING_DELAY_GRID` whose :func:`fit_warmup` leaves the least squared error
    over the runs' :func:`engine_samples` (the smallest of equal ones; 0 with fewer than
    :data:`MIN_BATCHES` samples). A replica's first seconds (the interpreter and the JVM
    launching) load the machine less than its engine's start-up: docs/twin.md.

    Raises:
        ConfigError: no samples at all (:func:`fit_engine`).
    """
    return _best_on_grid(runs, STARTING_DELAY_GRID, engine_samples)


def fit_warming(runs: Sequence[RunFacts], starting_delay_s: float = 0.0) -> _Fitted:
    """``(warming_s, per_run_samples, fit_warmup result)``: how long after its
    ``engine_ready`` a member slows the other members' batches more than a settled one, the
    value on :data:`WARMING_GRID_S` whose
    :func:`fit_warmup` over the runs' :func:`engine_samples` (at ``starting_delay_s``, from
    :func:`fit_starting_delay`) leaves the least squared error; the smallest of equal ones,
    so 0 (no warming term) when the split does not lower it: docs/twin.md.

    Raises:
        ConfigError: no samples at all (:func:`fit_engine`).
    """
    return _best_on_grid(runs, WARMING_GRID_S,
                         lambda f, w: engine_samples(f, starting_delay_s, w))


def start_segments(facts: RunFacts, since_s: float | None = None
                   ) -> list[tuple[float, np.ndarray]]:
    """Per start (at or after ``since_s`` when given): ``(duration_s, segments)``, segments
    rows ``(dt_s, starting incl. itself, members)`` over its ``replica_started ->
    engine_ready``."""
    changes = facts.change_times()
    out = []
    for rid, life in facts.lifecycles.items():
        t0, t1 = life.get("replica_started"), life.get("engine_ready")
        if t0 is None or t1 is None or t1 <= t0 or (since_s is not None and t0 < since_s):
            continue
        cuts = np.concatenate(([t0], changes[(changes > t0) & (changes < t1)], [t1]))
        rows = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            members, starting = facts.counts_at(a, exclude=rid)
            rows.append((b - a, starting + 1, members))
        out.append((t1 - t0, np.array(rows, dtype=float)))
    return out


def start_logs(starts: Sequence[tuple[float, np.ndarray]], alone_s: float, cores: float,
               member_load: float) -> np.ndarray:
    """log(work / alone_s) of each start at the fitted contention (its start-up speed factor)."""
    work = [float((s[:, 0] * np.minimum(1.0, cores / (s[:, 1] + member_load * s[:, 2]))).sum())
            for _, s in starts]
    return np.log(np.array(work, dtype=float) / alone_s)


def fit_cold_start(starts: Sequence[tuple[float, np.ndarray]],
                   run_index: Sequence[int] | None = None) -> dict[str, float]:
    """``alone_s``, ``cores``, ``member_load``, ``jitter`` (see the module docstring).

    ``alone_s`` is the median duration of the starts with no other replica alive; ``cores``
    and ``member_load`` the grid pair minimising sum |log(work / alone_s) - m_r| over every start,
    m_r the median of its run's log factors: each run has its own machine speed
    (``run_to_run``), so the contention is read from the starts of one run against each other
    (the alone start before the load against the burst after it), not from one run's machine
    against another's.

    Args:
        starts: ``(duration_s, segments)`` per start (:func:`start_segments`).
        run_index: the run of each start (same length); None: all of one run.

    Raises:
        ConfigError: no replica started alone.
    """
    alone = [d for d, seg in starts if seg[:, 1].max() == 1 and seg[:, 2].max() == 0]
    if not alone:
        raise ConfigError("cold_start.alone_s: no replica started alone (no other replica "
                          "alive) in the runs given; give a run whose first replica starts "
                          "on an idle machine")
    alone_s = float(statistics.median(alone))
    index = np.concatenate([np.full(len(seg), i) for i, (_, seg) in enumerate(starts)])
    seg = np.concatenate([s for _, s in starts])
    runs = np.zeros(len(starts), dtype=int) if run_index is None else np.asarray(run_index)
    members_of = [runs == r for r in np.unique(runs)]
    best = (math.inf, 0.0, 0.0)
    for cores in CORES_GRID:
        demand = seg[:, 1][None, :] + MEMBER_LOAD_GRID[:, None] * seg[:, 2][None, :]
        work = seg[:, 0][None, :] * np.minimum(1.0, cores / demand)
        logs = np.log(np.stack([np.bincount(index, row, len(starts)) for row in work])
                      / alone_s)
        for mask in members_of:
            logs[:, mask] -= np.median(logs[:, mask], axis=1, keepdims=True)
        cost = np.abs(logs).sum(axis=1)
        k = int(np.argmin(cost))
        if cost[k] < best[0] - 1e-9:
            best = (float(cost[k]), float(cores), float(MEMBER_LOAD_GRID[k]))
    _, cores, load = best
    logs = start_logs(starts, alone_s, cores, load)
    jitter = float((np.quantile(logs, 0.75) - np.quantile(logs, 0.25)) / 1.349)
    return {"alone_s": alone_s, "cores": cores, "member_load": load,
            "jitter": min(1.0, jitter), "starts": float(len(starts)),
            "alone": float(len(alone))}


def run_to_run(cold_logs: Sequence[np.ndarray], engine: Sequence[np.ndarray],
               fit: tuple[float, ...], warmup: tuple[float, float] = (0.0, 1.0)
               ) -> dict[str, float] | None:
    """The machine's speed from run to run: ``cold_start_sd``, ``engine_sd``,
    ``engine_on_cold_start`` and the within-run ``jitter``, or None with fewer than
    :data:`MIN_RUNS` runs that give both factors.

    A run's start-up factor c is the median of its starts' log(work / alone_s) (at least
    :data:`MIN_RUN_STARTS` starts), its engine factor e the log of its batches' mean overhead
    over the pooled fit's mean prediction at the same members and starters (at least
    :data:`MIN_RUN_BATCHES` batches). Over the runs with both: the sample standard deviations of
    c and e, the least-squares slope of e on c (clipped at 0), and ``jitter`` = IQR / 1.349 of
    every start's log factor minus its run's c (the per-start spread within a run).

    Args:
        cold_logs: per run, its starts' log factors (:func:`start_logs`).
        engine: per run, its :func:`engine_samples` rows.
        fit: the pooled :func:`fit_engine` result.
        warmup: the pooled :func:`fit_warmup` ``(extra, batches)``.
    """
    pairs, within = [], []
    for logs, rows in zip(cold_logs, engine):
        if len(logs) < MIN_RUN_STARTS or len(rows) < MIN_RUN_BATCHES:
            continue
        predicted = float(np.mean(_predicted_s(rows, warmup_factors(rows, *warmup), fit)))
        observed = float(np.mean(rows[:, 0]))
        if predicted <= 0 or observed <= 0:
            continue
        c = float(np.median(logs))
        pairs.append((c, math.log(observed / predicted)))
        within.extend(np.asarray(logs) - c)
    if len(pairs) < MIN_RUNS:
        return None
    c, e = np.array(pairs).T
    var_c = float(np.var(c, ddof=1))
    slope = max(0.0, float(np.cov(c, e, ddof=1)[0, 1]) / var_c) if var_c > 0 else 0.0
    jitter = float((np.quantile(within, 0.75) - np.quantile(within, 0.25)) / 1.349)
    return {"cold_start_sd": math.sqrt(var_c), "engine_sd": float(np.std(e, ddof=1)),
            "engine_on_cold_start": slope, "jitter": jitter, "runs": float(len(pairs))}


def probe_alone_s(spans_s: Sequence[float], started: int, cores: float) -> float:
    """The machine probe: the alone-equivalent of ``started`` replicas started together (no
    member yet) whose ``replica_started -> engine_ready`` took ``spans_s``: their median x
    ``min(1, cores / started)`` (the twin's contention model, ``twin/world.py``)."""
    return statistics.median(spans_s) * min(1.0, cores / started)


def probe_error(facts: RunFacts, alone_s: float, cores: float, member_load: float
                ) -> float | None:
    """A run's machine probe (:func:`~.fidelity.machine_probe_s`: the replicas started before
    ``load_start``, alone-equivalent) as a log factor, minus the median log factor of its
    starts after ``load_start`` at the fitted contention; None without a probe or with fewer
    than :data:`MIN_RUN_STARTS` later starts."""
    load = facts.load_start_s
    if not math.isfinite(load):
        return None
    started = [life for life in facts.lifecycles.values()
               if life.get("replica_started", math.inf) < load]
    spans_s = [life["engine_ready"] - life["replica_started"] for life in started
               if "engine_ready" in life]
    later = start_logs(start_segments(facts, since_s=load), alone_s, cores, member_load)
    if not spans_s or len(later) < MIN_RUN_STARTS:
        return None
    probe = probe_alone_s(spans_s, len(started), cores)
    return math.log(probe / alone_s) - float(np.median(later))


def probe_sd(errors: Sequence[float | None]) -> float | None:
    """The sample standard deviation of the runs' :func:`probe_error`, or None with fewer than
    :data:`MIN_RUNS` of them: ``run_to_run.probe_sd``, a one-start probe's measurement error."""
    known = [e for e in errors if e is not None]
    return float(np.std(known, ddof=1)) if len(known) >= MIN_RUNS else None


def _span(facts: RunFacts, a: str, b: str, after_load: bool = False) -> list[float]:
    out = []
    for life in facts.lifecycles.values():
        if a in life and b in life and life[b] >= life[a]:
            if after_load and not life[a] >= facts.load_start_s:
                continue
            out.append(life[b] - life[a])
    return out


def group_values(runs: Sequence[RunFacts]) -> dict[str, float]:
    """``subscribe_s``, ``first_fetch_s``, ``drain_s``, ``exit_s``, ``round_s`` and
    ``heartbeat_s`` (see the module docstring).

    Raises:
        ConfigError: a value with no samples.
    """
    graceful = [f for f in runs if (f.benchmark.get("run") or {}).get("graceful_drain", True)]
    classic = [f for f in runs if not (f.benchmark.get("inputs") or {}).get("static_membership")]
    coop = [f for f in classic if f.balancer == "cooperative-sticky"] or \
        [f for f in classic if f.balancer in ("range", "roundrobin")]
    rounds = [v for f in coop for v in f.handovers_s]
    beats = [float(f.broker["group.consumer.heartbeat.interval.ms"]) / 1000.0 for f in runs
             if "group.consumer.heartbeat.interval.ms" in f.broker]
    return {
        "subscribe_s": _median([v for f in runs for v in _span(f, "engine_ready", "subscribed")],
                               "group.subscribe_s"),
        "first_fetch_s": _median([v for f in runs for v in
                                  _span(f, "assigned", "first_record", after_load=True)],
                                 "group.first_fetch_s"),
        "drain_s": _median([statistics.median(v) for f in graceful
                            if (v := _span(f, "replica_terminating", "closed"))],
                           "group.drain_s"),
        "exit_s": _median([statistics.median(v) for f in graceful
                           if (v := _span(f, "replica_terminating", "replica_stopped"))],
                          "group.exit_s"),
        "round_s": _median(rounds, "group.round_s"),
        "heartbeat_s": statistics.median(beats) if beats else 5.0}


def idle_poll_s(runs: Sequence[RunFacts]) -> float | None:
    """``group.idle_poll_s``: the span over which an idle replica's first batch starts after
    records arrive, seconds; None with fewer than :data:`MIN_RUNS` runs.

    Each run's sample is its first batch's start after ``load_start`` (the replicas found an
    empty topic before it, and the load's first record is produced at ``load_start``). The
    replica polls in slices (``spark_consumer/trigger.py``) whose phase is uniform against the
    load's start, so the samples are uniform on [0, W]; W is estimated by the largest sample
    x (n + 1) / n (the unbiased estimator of a uniform's upper end).
    """
    phases = []
    for f in runs:
        if f.batches.empty or not math.isfinite(f.load_start_s):
            continue
        after = f.batches["start_s"][f.batches["start_s"] >= f.load_start_s]
        if len(after) and not (f.batches["start_s"] < f.load_start_s).any():
            phases.append(float(after.min() - f.load_start_s))
    if len(phases) < MIN_RUNS:
        return None
    return max(phases) * (len(phases) + 1) / len(phases)


def machine_of(runs: Sequence[RunFacts]) -> dict[str, Any]:
    """``{cores, description}`` from the runs' ``machine_info``, and ``release`` (the kernel
    release, which names the machine image: ``twin.params.calibration_path`` picks a run's
    calibration by it) when every run recorded one.

    Raises:
        ConfigError: the runs were measured on machines with different core counts, or on
            two machine images (kernel releases).
    """
    infos = [f.benchmark.get("machine_info") or {} for f in runs]
    cores = {info.get("cpu_count") for info in infos}
    if len(cores) != 1 or None in cores:
        raise ConfigError(f"machine_info.cpu_count: got {sorted(map(str, cores))}, expected one "
                          "core count over all runs; calibrate from runs of one machine")
    releases = {info.get("release") for info in infos}
    if len(releases - {None}) > 1:
        raise ConfigError(f"machine_info.release: got {sorted(releases - {None})}, expected one "
                          "kernel release over all runs; calibrate from runs of one machine "
                          "image")
    node = {info.get("node", "?") for info in infos}
    machine = {"cores": int(cores.pop()),
               "description": f"host {', '.join(sorted(map(str, node)))}: broker, Prometheus "
                              "and replicas on one machine"}
    if None not in releases and releases:
        machine["release"] = str(releases.pop())
    return machine


def calibrate(runs: Sequence[RunFacts], engine: str) -> dict[str, Any]:
    """The calibration document of ``engine`` from ``runs`` (those of other engines are left
    out), with ``notes``: per key, how many samples it came from.

    Raises:
        ConfigError: no run of the engine, mixed machines, or a value without samples.
    """
    mine = [f for f in runs if f.engine == engine]
    if not mine:
        raise ConfigError(f"--engine: got {engine!r}, but none of the {len(runs)} runs given "
                          f"ran it (engines: {sorted({f.engine for f in runs})}); give runs of "
                          "that engine")
    delay_s = fit_starting_delay(mine)[0]
    warming_s, per_run, (extra, warm_batches, engine_fit) = fit_warming(mine, delay_s)
    base, per_member, per_starting, per_warming = engine_fit
    samples = np.concatenate(per_run)
    starts = [start_segments(f) for f in mine]
    cold = fit_cold_start([s for run in starts for s in run],
                          [i for i, run in enumerate(starts) for _ in run])
    runs = run_to_run([start_logs(run, cold["alone_s"], cold["cores"], cold["member_load"])
                       for run in starts], per_run, engine_fit,
                      (extra, warm_batches))
    if runs is not None:
        cold["jitter"] = min(1.0, runs["jitter"])
        runs["probe_sd"] = probe_sd([probe_error(f, cold["alone_s"], cold["cores"],
                                                 cold["member_load"]) for f in mine])
    group = group_values(mine)
    idle_poll = idle_poll_s(mine)
    r = lambda v, n=3: round(float(v), n)  # noqa: E731
    doc = {
        "schema_version": SCHEMA_VERSION, "engine": engine, "machine": machine_of(mine),
        "source_runs": sorted(f.name for f in mine),
        "processing": {"per_batch_engine_s": r(base), "engine_s_per_member": r(per_member),
                       "engine_s_per_starting": r(per_starting),
                       **({"starting_delay_s": r(delay_s, 1)} if delay_s else {}),
                       **({"warming_s": r(warming_s, 1),
                           "engine_s_per_warming": r(per_warming)} if per_warming else {}),
                       **({"warmup_extra": r(extra, 2), "warmup_batches": r(warm_batches, 1)}
                          if extra else {})},
        "cold_start": {"alone_s": r(cold["alone_s"], 2), "cores": r(cold["cores"], 2),
                       "jitter": r(cold["jitter"], 2), "member_load": r(cold["member_load"], 2)},
        "group": {"subscribe_s": r(group["subscribe_s"], 2),
                  "first_fetch_s": r(group["first_fetch_s"], 2),
                  "drain_s": r(group["drain_s"], 2), "exit_s": r(group["exit_s"], 2),
                  "round_s": {"cooperative": r(group["round_s"], 2),
                              "eager": r(group["round_s"], 2)},
                  "heartbeat_s": r(group["heartbeat_s"], 2),
                  **({"idle_poll_s": r(idle_poll, 2)} if idle_poll is not None else {})},
        "notes": {"batches": len(samples), "starts": int(cold["starts"]),
                  "alone_starts": int(cold["alone"]),
                  "runs_with_factors": 0 if runs is None else int(runs["runs"])}}
    if runs is not None:
        doc["run_to_run"] = {"cold_start_sd": r(runs["cold_start_sd"], 2),
                             "engine_sd": r(runs["engine_sd"], 2),
                             "engine_on_cold_start": r(runs["engine_on_cold_start"], 2)}
        if runs["probe_sd"] is not None:
            doc["run_to_run"]["probe_sd"] = r(runs["probe_sd"], 2)
    timing = fit_controller(mine)
    if timing is not None:
        doc["controller"] = {"lead_extra_min_s": r(timing["lead_extra_min_s"], 2),
                             "lead_extra_max_s": r(timing["lead_extra_max_s"], 2),
                             "slip_s": r(timing["slip_s"]),
                             "slip_s_per_starting": r(timing["slip_s_per_starting"]),
                             "slip_s_per_member": r(timing["slip_s_per_member"])}
        doc["notes"]["controller_steps"] = int(timing["steps"])
    return doc


def render(doc: dict[str, Any]) -> str:
    """The calibration as YAML text: a header naming its derivation, then the keys."""
    import yaml

    notes = doc.get("notes", {})
    body = {k: v for k, v in doc.items() if k != "notes"}
    header = [
        f"# Calibration of the twin (pytest_lagscale/twin) for replicas on the {doc['engine']} "
        "engine,",
        "# written by `lagscale twin calibrate` (pytest_lagscale/twin/calibrate.py gives each "
        "key's",
        "# derivation) from the event logs, stores and benchmark JSON of source_runs; none was "
        "fitted",
        "# to a reaction time, peak lag, drain time or replica-seconds. Samples: "
        f"{notes.get('batches', '?')} back-to-back",
        f"# micro-batches (engine time), {notes.get('starts', '?')} cold starts "
        f"({notes.get('alone_starts', '?')} alone), "
        f"{notes.get('runs_with_factors', 0)} runs with a machine factor (run_to_run)"
        + (f", {notes['controller_steps']} controller steps (controller)."
           if notes.get("controller_steps") else "."),
    ]
    return "\n".join(header) + "\n" + yaml.safe_dump(body, sort_keys=False)


def run_dirs(paths: Sequence[str | Path]) -> list[Path]:
    """Run directories: each path that holds a ``benchmark.json``, or its subdirectories that
    do (a ``lagscale-runs`` parent), in name order.

    Raises:
        ConfigError: a path that is neither (one line per path).
    """
    from ..report.benchjson import RUN_DOCUMENT, find_run_documents

    out, problems = [], []
    for raw in paths:
        found = find_run_documents(raw) if Path(raw).is_dir() else []
        if found:
            out.extend(document.parent for document in found)
        else:
            problems.append(f"RUN_DIR: got {str(raw)!r}, expected a run directory of lagscale "
                            f"run (with {RUN_DOCUMENT}) or a directory of them; check the path")
    if problems:
        raise ConfigError(problems)
    return out


__all__ = ["calibrate", "engine_samples", "fit_cold_start", "fit_engine", "fit_starting_delay",
           "fit_warming", "group_values", "machine_of", "render", "run_dirs", "start_segments"]
