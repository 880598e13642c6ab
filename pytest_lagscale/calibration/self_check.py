"""The twin against itself: how often a twin that is exactly right meets the fidelity targets.

The fidelity benchmark holds one CI gate's runs against the targets (:func:`.fidelity.assess`:
each run's median error, each figure's 5-95 % band over the runs). A real run is one draw of a
noisy machine, so even a perfect model misses them in some gates. :func:`self_check` measures
that base rate with the twin as its own truth: for each of ``pairs`` "real" runs it simulates
one draw of every given run's plan (its own machine, controller phase and jitter, on a seed the
prediction does not use), predicts that draw as the benchmark predicts a real run (``draws``
draws, with its machine probe: the alone-equivalent start of the draw's replicas started before
its load, :func:`.fidelity.machine_probe_s`) and applies :func:`.fidelity.assess` to the set.
The share of sets that pass is what one gate's verdict can be expected to be when the twin is
right; a per-figure share says which target is the lottery.

    from pytest_lagscale.calibration.self_check import self_check
    result = self_check(["lagscale-runs/...-spike-ci", "lagscale-runs/...-hysteresis-ci"])
    result.all_targets_met     # share of the pairs whose assess() passed every assertion

``lagscale twin self-check RUN_DIR...`` prints it (:mod:`.self_check_cli`). Cost: pairs x runs
x (draws + 1) twin runs, about 0.1 s each, on ``workers`` processes: 40 pairs of the gate's 2
runs at 30 draws take about 5 minutes on one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..contract.errors import ConfigError
from ..report.benchjson import read_run_document, run_document_path

#: The assertion names of :func:`.fidelity.assess` that are band targets (the rest are figure
#: targets).
BAND_MARK = "measured in the 5-95 % band"


@dataclass(frozen=True)
class SelfCheck:
    """The base rate of the fidelity targets when the twin is its own truth.

    Attributes:
        runs: the run directories whose plans were simulated (names).
        pairs: how many sets of "real" draws were held against a prediction.
        draws: draws per prediction.
        machine_probe: whether each prediction used its real draw's machine probe.
        runs_per_set: "real" runs of each given run assessed together per set.
        figure_targets_met: share of the sets meeting every figure target (each run's
            |median error| within ``fidelity.TARGETS``), in [0, 1].
        band_targets_met: share meeting every band target (``fidelity.BAND_TARGET``).
        all_targets_met: share meeting both: the fidelity benchmark's pass, in [0, 1].
        per_assertion: assertion name (``"<label>: <figure> |error| <= <target> ..."`` or
            ``"<figure> measured in the 5-95 % band ..."``) -> share of the sets passing it.
    """

    runs: tuple[str, ...]
    pairs: int
    draws: int
    machine_probe: bool
    runs_per_set: int
    figure_targets_met: float
    band_targets_met: float
    all_targets_met: float
    per_assertion: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, every field by name."""
        return {"runs": list(self.runs), "pairs": self.pairs, "draws": self.draws,
                "machine_probe": self.machine_probe, "runs_per_set": self.runs_per_set,
                "figure_targets_met": self.figure_targets_met,
                "band_targets_met": self.band_targets_met,
                "all_targets_met": self.all_targets_met,
                "per_assertion": dict(self.per_assertion)}


def option_problems(*, pairs: int, draws: int, seed: int, truth_seed: int,
                    runs_per_set: int = 1, workers: int = 1) -> list[str]:
    """The problems of :func:`self_check`'s options, one line each naming the option, the
    value and the allowed range (empty when they are good)."""
    problems = []
    if not 1 <= pairs <= 1000:
        problems.append(f"pairs: got {pairs!r}, expected an integer in [1, 1000]")
    if not 1 <= draws <= 1000:
        problems.append(f"draws: got {draws!r}, expected an integer in [1, 1000]")
    if not 1 <= runs_per_set <= 100:
        problems.append(f"runs_per_set: got {runs_per_set!r}, expected an integer in [1, 100]")
    if not 1 <= workers <= 64:
        problems.append(f"workers: got {workers!r}, expected an integer in [1, 64]")
    if seed == truth_seed:
        problems.append(f"truth_seed: got {truth_seed!r}, the predictions' seed; the real draws "
                        "must not be among the predicted ones: give another seed")
    return problems


def self_check(runs: Sequence[str | Path], *, pairs: int = 40, draws: int = 30, seed: int = 0,
               truth_seed: int = 7, machine_probe: bool = True,
               calibration: str | Path | None = None, runs_per_set: int = 1,
               workers: int = 1) -> SelfCheck:
    """Hold ``pairs`` twin draws of ``runs``' plans against the twin's predictions of them.

    Args:
        runs: run directories (or their ``benchmark.json``) of runs the twin models: their
            plans are read from the runs' inputs (:func:`.fidelity.plan_for`); their measured
            figures are not used.
        pairs: sets of "real" draws, in [1, 1000]; set j is draws j k .. j k + k - 1 of
            every run on ``truth_seed`` (k = ``runs_per_set``).
        draws: draws per prediction, in [1, 1000], on ``seed`` (the benchmark's 30 and 0).
        seed: the predictions' seed; must differ from ``truth_seed``.
        truth_seed: the "real" draws' seed.
        machine_probe: predict each real draw given its machine probe, as the benchmark does
            (:func:`.fidelity.predict_run` ``machine_probe=True``); False: from the
            calibration's prior alone.
        calibration: a calibration file; default: the committed one of each run's engine.
        runs_per_set: k, in [1, 100]: "real" runs of each given run per set, assessed together
            (the median error over k runs of a label, the band over all): 1 is one CI gate,
            the gate's pair plus the committed held-out pairs is their count plus 1.
        workers: processes the sets run on, in [1, 64] (:func:`.processes.fork_map`); every
            "real" draw and prediction is seeded on its own, so the shares are the same on any
            number of them.

    Raises:
        ConfigError: a bad run directory, ``pairs``, ``draws``, ``runs_per_set`` or ``workers``
            out of range, equal seeds.
        Unsupported: a run the twin does not model (named).
    """
    from .fidelity import assess
    from .processes import fork_map

    problems = option_problems(pairs=pairs, draws=draws, seed=seed, truth_seed=truth_seed,
                               runs_per_set=runs_per_set, workers=workers)
    if not runs:
        problems.append("runs: none given; give at least one run directory")
    if problems:
        raise ConfigError(problems)
    calibration_key = None if calibration is None else str(calibration)
    keys = [str(run) for run in runs]
    names = [_plan(key, calibration_key)[0] for key in keys]  # read (and refused) here, once
    jobs = [(key, calibration_key, j * runs_per_set + i, seed, truth_seed, draws, machine_probe)
            for j in range(pairs) for key in keys for i in range(runs_per_set)]
    results = fork_map(_one_set_member, jobs, workers)
    per_set = len(keys) * runs_per_set
    passed: dict[str, int] = {}
    figure_ok = band_ok = all_ok = 0
    for j in range(pairs):
        assertions, _ = assess(results[j * per_set:(j + 1) * per_set])
        for a in assertions:
            passed[a["name"]] = passed.get(a["name"], 0) + (a["verdict"] == "pass")
        figures_pass = all(a["verdict"] == "pass" for a in assertions
                           if BAND_MARK not in a["name"])
        bands_pass = all(a["verdict"] == "pass" for a in assertions if BAND_MARK in a["name"])
        figure_ok += figures_pass
        band_ok += bands_pass
        all_ok += figures_pass and bands_pass
    return SelfCheck(runs=tuple(names), pairs=pairs, draws=draws,
                     machine_probe=machine_probe, runs_per_set=runs_per_set,
                     figure_targets_met=figure_ok / pairs,
                     band_targets_met=band_ok / pairs, all_targets_met=all_ok / pairs,
                     per_assertion={k: v / pairs for k, v in sorted(passed.items())})


#: Most runs whose plan and prediction a process keeps (:func:`_plan`, :func:`_prior`): more
#: than one self-check holds (the fixtures and a gate: 32 runs), so a long-lived process that
#: checks many sets of runs stays bounded.
_RUNS_KEPT = 64


@functools.lru_cache(maxsize=_RUNS_KEPT)
def _plan(run: str, calibration: str | None) -> tuple[str, str, Any, Any, Any]:
    """``(name, label, plan, params, production)`` of one run, read once per process (a forked
    worker inherits what the parent read)."""
    from ..twin.run import TICK_S, params_for, production
    from .fidelity import plan_for

    bench = read_run_document(run)
    plan = plan_for(bench)
    params = params_for(plan, calibration=calibration)
    name = run_document_path(run).parent.name
    label = str((bench.get("run") or {}).get("label", name))
    return name, label, plan, params, production(plan.profile, TICK_S)


@functools.lru_cache(maxsize=_RUNS_KEPT)
def _prior(run: str, calibration: str | None, seed: int, draws: int) -> dict[str, list[float]]:
    """The prediction from the calibration's prior alone: the same for every set."""
    from ..twin.run import simulate_draws

    _, _, plan, params, prod = _plan(run, calibration)
    return simulate_draws(plan, params, seed, draws, prod=prod).distribution


def _one_set_member(job: tuple[str, str | None, int, int, int, int, bool]) -> Any:
    """The :class:`~.fidelity.Fidelity` of "real" draw ``index`` of one run (on the truth
    seed) against its prediction, as the benchmark predicts a real run."""
    from ..twin.run import HEADLINE, simulate, simulate_draws
    from .fidelity import Fidelity, figure_check, machine_probe_s, twin_records, \
        with_machine_probe

    run, calibration, index, seed, truth_seed, draws, machine_probe = job
    name, label, plan, params, prod = _plan(run, calibration)
    truth = simulate(plan, params, truth_seed, draw=index, prod=prod)
    probe = machine_probe_s(twin_records(truth), params.cold_start_cores) \
        if machine_probe else None
    known = with_machine_probe(params, probe)
    if known is params:  # the prior's prediction does not depend on the set
        predicted = _prior(run, calibration, seed, draws)
    else:
        predicted = simulate_draws(plan, known, seed, draws, prod=prod).distribution
    measured = truth.headline()
    figures = tuple(figure_check(f, measured[f], predicted[f]) for f in HEADLINE)
    return Fidelity(run=f"{name}#{index}", label=label, draws=draws, seconds=0.0,
                    figures=figures, spans=(), probe_alone_s=probe)


__all__ = ["BAND_MARK", "SelfCheck", "option_problems", "self_check"]
