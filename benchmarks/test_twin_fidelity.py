"""The twin against the real runs of this session (docs/twin.md, "Fidelity").

Runs after the experiments (pytest runs ``benchmarks/`` files in name order; ``test_twin_*``
sorts after ``test_exp*``). Every ci-scale run of the session that the twin models, and every
committed held-out run (``tests/fixtures/heldout/*``: fifteen pairs of CI-gate runs, twelve on
the default calibration's machine image and three on a later one, that no calibration saw, with
their event logs), is predicted
again with :data:`DRAWS` draws of the committed calibration of its machine image
(``pytest_lagscale/data/twin/machines/<kernel release>/spark.yaml`` when the project has one,
else ``data/twin/spark.yaml``; :func:`~pytest_lagscale.calibration.fidelity.predict_runs` on
:data:`WORKERS` processes) and
compared: per headline figure the error of the draws' median and whether the measured value lies
in the draws' 5-95 % band; per event-level span (cold start, started -> assigned, revoked ->
assigned) the medians and the two-sample KS statistic. Runs with an input the twin does not
model (``fidelity.UNSUPPORTED``: CPU policies, scheduled actions, static membership, SIGKILL
scale-down, an engine without calibration) are listed, not predicted. This file alone (no
session runs) judges the held-out fixtures alone.

Calibrate and validate are split by run: the committed calibrations were read from their
``source_runs`` (``calibrated_on`` in the JSON), the targets are held against the other runs
(``validated_on``: the held-out fixtures and the session's runs, which are never among them); a
run of the calibration's own is recorded (``in_sample``) and not counted. The prediction uses
the run's machine probe (``predict_run(..., machine_probe=True)``: the start-up speed of the
replicas the run started before its load, what it knew of its machine before the spike; the
held-out fixtures carry their event logs, so they have their probe too).

Two tests judge the same predictions (computed once, :func:`verdicts`). The figure targets
(``fidelity.TARGETS``, ``fidelity.assess``; the first test): per label, the median over its
held-out runs of |error of the draws' median| <= 15 % for reaction time, peak lag and drain
time, <= 10 % for replica-seconds, scale steps within +-2 (each run's own signed error in
``per_run``). The band targets (the second test): the measured value inside the 5-95 % band in
>= 80 % of the runs (per figure, over all). A CI gate's
spike-ci and bursty-ci runs are judged with the fifteen committed pairs: 16 runs per label, so one
gate's run moves a median by at most one rank (docs/twin.md "Fidelity": one run's error carries
its own draw of the machine: the twin taken as its own truth meets every figure target of a
ten-run median in all of 20 sets, every band target in 20 %). Every figure and
verdict goes to the benchmark JSON (``extra_info``) before anything is asserted. A target the
model misses on the measured runs is reported as xfail with the numbers, never a loosened
target; :data:`KNOWN_MISSES` lists the ones seen in the validation runs, and a miss not in it
FAILS. The figure test also FAILS when the twin crashes, a run cannot be predicted for a
reason other than a documented unsupported input, or an error of the prediction given the run's
own cold starts (``predict_run(..., condition_on_cold_start=True)``: the calibration's start-up
time scaled to the run's median ``replica_started -> replica_ready``, an event-level span, never
a headline figure) falls outside the twin's stated band (``fidelity.STATED_BAND``: 30 % reaction
and peak lag, 40 % drain, 15 % replica-seconds, 6 steps) both against this run and against the
nearest real run of its label (``fidelity.beyond_band``: the spread of the committed baseline's
samples, ``benchmarks/baselines/<label>.json``): the real runs move by 5-13 % between two CI
runs, so one run's error past the 10-15 % targets must not fail CI (the targets hold the
median over the runs), but an error past the band the validation measured does. A run at the
edge of its label's spread is not the twin off:
spike-ci-lt50 peaked at 12,036 records in the clean-clone CI of 2026-11-26 (12,500-14,899 in its
three samples), +30.6 % to the twin's 15,720, +5.5 % to the nearest sample; such errors are
recorded (``beyond_band_within_real_spread``) and pass. Nor is a run that some draw reproduced:
a reaction time moves by whole controller periods (which new replica reads first decides it), so
its draws are multi-modal and the median can sit in another mode than the run (docs/twin.md
"Fidelity": spike-ci-lt5000). Such errors are recorded (``beyond_band_reproduced_by_a_draw``)
and xfail with the numbers; only an error that no draw and no real run of the label came near
fails. The committed calibration alone cannot know a machine whose Spark replicas start in 32 s
instead of 17 s (it happened in 2 of 5 spike-ci runs: CI of 2026-11-23, reaction 41.6 s against
the twin's 27.5 s, and set 3 on this machine, 40.1 s; given its cold starts the twin predicts
that one at 40.6 s): its errors past the band are recorded and xfail.

Cost: 100 draws of a ci run take 5-8 s (the twin runs ~4,000x real time); the 30 held-out
runs, 100 draws and 30 given their cold starts, about 4 minutes on two processes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.plugin import _SESSION_KEY
from pytest_lagscale.calibration.fidelity import (TARGETS, Unsupported, assess, beyond_band,
                                                  predict_runs)
from pytest_lagscale.calibration.processes import default_workers
from pytest_lagscale.twin.params import (ENGINES, calibration_path, load_calibration,
                                         machine_calibrations)

pytestmark = [pytest.mark.benchmark(group="twin")]

#: Draws of the prediction held to the targets. The 5-95 % band is the draws' interpolated 5th
#: and 95th percentiles: from 30 draws it holds about 85 % of a fresh draw of the same
#: distribution, from 100 about 88 % (the nominal 90 % needs many more), so an exact twin's runs
#: fall outside a 30-draw band more often than the target allows (docs/twin.md "Fidelity": the
#: base rate at 30 and at 100 draws).
DRAWS = 100
#: Draws of the prediction given each run's own cold starts, held only to the stated band and
#: the "reproduced by a draw" range (the range of more draws would excuse more runs).
DRAWS_GIVEN = 30
SEED = 0
#: Processes the predictions run on: the machine's cores (2 here), at most 4.
WORKERS = default_workers()
HELD_OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "heldout"
BASELINES = Path(__file__).resolve().parent / "baselines"
#: Targets missed on held-out runs, reported as xfail with the numbers (docs/twin.md "Fidelity"
#: gives every number). Over the committed held-out pairs (30 runs, 100 draws, each with its
#: machine image's calibration) the committed calibrations meet every figure target by the
#: median (spike-ci reaction 10.5 %, peak 6.0 %, drain 3.3 %, replica-seconds 1.8 %; bursty-ci
#: hysteresis peak 2.7 %, replica-seconds 1.7 %) and every band target (reaction 13 of 15, peak
#: lag 27 of 30, drain 12 of 15, replica-seconds 24 of 30, steps 30 of 30), with no run beyond
#: the stated band. Drain and replica-seconds hold at 80 % exactly, so one gate run outside its
#: band misses them: they stay listed; reaction and peak lag cannot be missed by a gate's own
#: two runs and are asserted.
#: The per-label entries of the other labels are the
#: misses of the first calibration (2026-11-23) on an acceptance session's runs; those labels
#: are in the committed calibration's own set, so no held-out run has tested them since.
#: Remove an entry when the target is met.
KNOWN_MISSES = frozenset({
    "ceiling-ci-scaledobject-ceiling-idle-ci: drain_time_s median |error| <= 0.15 (relative)",
    "ceiling-ci-scaledobject-ceiling-ci: drain_time_s median |error| <= 0.15 (relative)",
    "bursty-ci-scaledobject-flap-ci: scale_steps median |error| <= 2 (steps)",
    "spike-ci-lt50: peak_lag_records median |error| <= 0.15 (relative)",
    "spike-ci-lt50: scale_steps median |error| <= 2 (steps)",
    "spike-ci-lt5000: peak_lag_records median |error| <= 0.15 (relative)",
    "spike-ci-lt5000: drain_time_s median |error| <= 0.15 (relative)",
    "drain_time_s measured in the 5-95 % band in >= 80% of runs",
    "replica_seconds measured in the 5-95 % band in >= 80% of runs",
})


def _session_runs(config: pytest.Config) -> list[Path]:
    """benchmark.json of each ci-scale run of this session, in run order."""
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        return []
    return [Path(run.result.benchmark_path) for run in session.runs
            if getattr(run.settings, "scale", "ci") == "ci"]


def baseline_spreads(folder: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """label -> figure -> (min, max) of the committed baseline's samples (real ci runs of the
    label on this machine type): the run-to-run spread the stated band is also held against."""
    import json

    spreads: dict[str, dict[str, tuple[float, float]]] = {}
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text())
        for name, sp in ((doc.get("baseline") or {}).get("spread") or {}).items():
            if sp.get("min") is not None and sp.get("max") is not None:
                spreads.setdefault(path.stem, {})[name] = (float(sp["min"]), float(sp["max"]))
    return spreads


def _predict(paths: list[Path], *, conditioned: bool) -> tuple[list[Any], dict[str, list[str]]]:
    """Fidelity of each predictable run and the reasons of the unsupported ones, on
    :data:`WORKERS` processes (the session's runs are over: the cores are free). Any other
    error propagates (the test fails). Unconditioned, the machine probe gives the run's start-up
    speed (what the run knew before its load)."""
    results, unsupported = [], {}
    draws = DRAWS_GIVEN if conditioned else DRAWS
    outcomes = predict_runs(paths, workers=WORKERS, draws=draws, seed=SEED,
                            condition_on_cold_start=conditioned, machine_probe=not conditioned)
    for path, outcome in zip(paths, outcomes):
        if isinstance(outcome, Unsupported):
            unsupported[path.parent.name] = list(outcome.problems)
        else:
            results.append(outcome)
    return results, unsupported


@dataclass(frozen=True)
class _Verdicts:
    """The module's predictions, computed once for its two tests: ``record`` is the benchmark
    JSON's ``extra_info`` (every run, figure, span and verdict); the rest what they assert."""

    record: dict[str, Any]
    results: list[Any]
    unsupported: dict[str, list[str]]
    figures: list[dict[str, Any]]
    bands: list[dict[str, Any]]
    insane: list[str]
    beyond_committed: list[str]
    reproduced: list[str]


@pytest.fixture(scope="module")
def verdicts(request) -> _Verdicts:
    """Predict the held-out fixtures and this session's ci runs (:func:`_predict`, with the
    machine probe and given the runs' cold starts) and judge them (:func:`assess`,
    :func:`beyond_band`)."""
    session = _session_runs(request.config)
    paths = sorted(HELD_OUT.glob("*/benchmark.json")) + session
    source = "held-out fixtures" + (f" and {len(session)} session runs" if session else "")
    started = time.perf_counter()
    results, unsupported = _predict(paths, conditioned=False)
    given, _ = _predict(paths, conditioned=True)
    assertions, beyond_committed = assess(results)
    insane, within_spread, reproduced = beyond_band(given, baseline_spreads(BASELINES))
    record = {
        "source": source, "draws": DRAWS, "draws_given_cold_starts": DRAWS_GIVEN, "seed": SEED,
        "calibrated_on": {engine: {name: list(load_calibration(path)["source_runs"])
                                   for name, path in _calibrations(engine).items()}
                          for engine in ENGINES},
        "validated_on": [r.run for r in results if r.held_out],
        "in_sample": [r.run for r in results if not r.held_out],
        "seconds": round(time.perf_counter() - started, 2),
        "runs": {r.run: r.as_dict() for r in results},
        "runs_given_their_cold_starts": {r.run: r.as_dict() for r in given},
        "unsupported": unsupported, "assertions": assertions,
        "beyond_band_committed_calibration": beyond_committed,
        "beyond_band_given_cold_starts": insane,
        "beyond_band_within_real_spread": within_spread,
        "beyond_band_reproduced_by_a_draw": reproduced, "known_misses": sorted(KNOWN_MISSES)}
    return _Verdicts(record=record, results=results, unsupported=unsupported,
                     figures=[a for a in assertions if "per_run" in a],
                     bands=[a for a in assertions if "per_run" not in a], insane=insane,
                     beyond_committed=beyond_committed, reproduced=reproduced)


def _calibrations(engine: str) -> dict[str, Path]:
    """The committed calibrations of ``engine``: the default and one per machine image."""
    return {"default": calibration_path(engine), **machine_calibrations(engine)}


def _named(assertions: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(a["name"], a["value"]) for a in assertions]


@pytest.mark.gate
def test_twin_meets_the_figure_targets_on_held_out_runs(benchmark, verdicts) -> None:
    """Per label, the median over its held-out runs of |error of the draws' median| within
    :data:`~pytest_lagscale.calibration.fidelity.TARGETS` (15 % reaction, peak lag and drain,
    10 % replica-seconds, 2 scale steps), and no error given a run's own cold starts beyond the
    stated band. A miss FAILS, except the other labels' misses listed in :data:`KNOWN_MISSES`
    (xfail with the numbers); a run beyond the stated band with the committed calibration (its
    machine unlike the calibration's) or reproduced by another mode's draw xfails with the
    numbers. The benchmark JSON holds every run, figure, span and verdict of the module."""
    benchmark.extra_info.update(verdicts.record)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert verdicts.results, (f"no {verdicts.record['source']} run could be predicted: "
                              f"unsupported {verdicts.unsupported}")
    assert not verdicts.insane, ("twin errors beyond its stated band (given the runs' cold "
                                 f"starts): {verdicts.insane}")
    failed = [a for a in verdicts.figures if a["verdict"] == "fail"]
    new = [a for a in failed if a["name"] not in KNOWN_MISSES]
    assert not new, f"the twin missed its figure targets on held-out runs: {_named(new)}"
    if failed or verdicts.beyond_committed or verdicts.reproduced:
        pytest.xfail(f"known figure misses of other labels: {_named(failed)}; beyond the "
                     f"stated band with the committed calibration (this machine's cold starts "
                     f"differ from the calibration's): {verdicts.beyond_committed}; beyond the "
                     f"stated band given the run's cold starts, the measured value reproduced "
                     f"by a draw (multi-modal draws, the median in another mode): "
                     f"{verdicts.reproduced}")


@pytest.mark.gate
def test_twin_bands_hold_the_held_out_runs(benchmark, verdicts) -> None:
    """Per figure, the measured value inside the draws' 5-95 % band in >= 80 % of the
    held-out runs (:data:`~pytest_lagscale.calibration.fidelity.BAND_TARGET`). A miss listed
    in :data:`KNOWN_MISSES` xfails with the numbers; any other FAILS. The twin taken as its own
    truth meets every band target in 20 % of such gates (docs/twin.md "Fidelity": the base
    rate), so a known miss is reported, not asserted away. The benchmark JSON holds each
    figure's verdict and, per run, the measured value and the band."""
    per_run = {fig: {r.run: [f.measured, f.p5, f.p95, f.in_band] for r in verdicts.results
                     if r.held_out for f in r.figures if f.name == fig and f.in_band is not None}
               for fig in TARGETS}
    benchmark.extra_info.update({"source": verdicts.record["source"], "draws": DRAWS,
                                 "seed": SEED, "assertions": verdicts.bands,
                                 "measured_p5_p95_in_band": per_run,
                                 "known_misses": sorted(KNOWN_MISSES)})
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    failed = [a for a in verdicts.bands if a["verdict"] == "fail"]
    new = [a for a in failed if a["name"] not in KNOWN_MISSES]
    assert not new, f"the twin's bands missed held-out runs: {_named(new)}"
    if failed:
        pytest.xfail(f"known band misses, recorded in the benchmark JSON: {_named(failed)}")
