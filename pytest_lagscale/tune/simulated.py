"""The findings report's simulated part: the twin's full-scale predictions next to the ci-scale
measurements, and experiment 8's recommendation cross-checked by ``lagscale tune`` (``lagscale
report --full-scale-draws``; rendered by :mod:`pytest_lagscale.report.findings_render`).

:func:`simulate_findings` takes the runs of a report
(:class:`~pytest_lagscale.report.findings.RunDoc`) and:

* **full scale**: for every distinct ci run the twin models
  (:func:`~pytest_lagscale.calibration.fidelity.plan_for`: no CPU policy, no scheduled action, no
  static membership, no SIGKILL scale-down), the same run at ``--scale full`` (the lab's sizes: P =
  24, 3k/s with a 10x spike for 15 minutes) with the bundled full-scale counterparts of its profile
  and policy (``spike-ci`` -> ``spike``, ``scaledobject-flap-ci`` -> ``scaledobject-flap``). A
  lagThreshold override keeps its ratio to the committed threshold (experiment 8's 0.1x/10x at ci
  become 0.1x/10x of the full ScaledObject's). Draws: ``draws``; the row holds the ci run's measured
  headline figures and the full-scale median, 5 % and 95 % per figure. A run without a full-scale
  counterpart or with an unmodelled input is listed with the reason.
* **tune cross-check** (experiment 8): when a run recorded the sweep (``experiment.sweep``),
  ``lagscale tune``'s search (:func:`.search.tune`) over the swept lagThresholds and over a
  9-value log grid between them, with the sweep's drain SLO held at the draws' 95th percentile,
  on the sweep's profile and ScaledObject: the largest swept value the twin says meets the SLO
  and tune's best (least replica-seconds meeting it), next to the measured recommendation.

Everything is labelled a prediction with the twin's validated error band
(:data:`~pytest_lagscale.calibration.fidelity.STATED_BAND`); the figures are the twin's, never
measurements. Cost: a full-scale spike draw takes 5-12 s on the 2-core machine, a ci draw
about 0.1 s.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from ..contract.errors import ConfigError

#: The headline figures predicted, in the order the report prints them.
FIGURES = ("reaction_time_s", "peak_lag_records", "drain_time_s", "replica_seconds",
           "scale_steps")
#: Draws per point of the tune cross-check (ci scale: ~0.1 s a draw).
TUNE_DRAWS = 10
#: Values of the cross-check's log grid between the smallest and largest swept lagThreshold.
TUNE_GRID = 9


@dataclass(frozen=True)
class FullScaleRow:
    """One ci run and its full-scale prediction.

    Attributes:
        label: the ci run's label.
        inputs: the full-scale run's profile, policy and lagThreshold, one line.
        measured_ci: ``{figure: value or None}`` the ci run measured.
        predicted: ``{figure: {"median", "p5", "p95"}}`` over the full-scale draws (None
            where no draw measured it, e.g. a drain that never completes).
        seconds: wall time of the draws.
    """

    label: str
    inputs: str
    measured_ci: Mapping[str, float | None]
    predicted: Mapping[str, Mapping[str, float | None]]
    seconds: float


@dataclass(frozen=True)
class TuneCheck:
    """Experiment 8's measured recommendation against the twin's search.

    Attributes:
        drain_slo_s: the sweep's drain SLO, seconds.
        measured: the sweep's recommended lagThreshold (None: none met the SLO).
        swept: ``{lagThreshold: (p95 drain s or None, holds)}`` in the twin.
        twin_largest_swept: the largest swept value meeting the SLO in the twin, or None.
        tune_best: tune's best on the fine grid (least median replica-seconds meeting the SLO),
            or None when no grid value met it.
        tune_best_replica_seconds: its median replica-seconds.
        grid: the fine grid's values.
        inputs: the profile and policy searched, one line.
        seconds: wall time of both searches.
    """

    drain_slo_s: float
    measured: int | None
    swept: Mapping[int, tuple[float | None, bool]]
    twin_largest_swept: int | None
    tune_best: int | None
    tune_best_replica_seconds: float | None
    grid: tuple[int, ...]
    inputs: str
    seconds: float

    @property
    def agrees(self) -> bool:
        """The twin picks the same swept value the measurement recommended."""
        return self.twin_largest_swept == self.measured


@dataclass(frozen=True)
class Simulated:
    """The report's simulated section (see the module docstring)."""

    draws: int
    calibration: str
    band: Mapping[str, float]
    rows: list[FullScaleRow] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    tune: TuneCheck | None = None
    tune_problem: str = ""


def full_counterpart(name: str, names: Iterable[str]) -> str | None:
    """The full-scale bundled name of a ci one (``spike-ci`` -> ``spike``), if bundled."""
    if not name.endswith("-ci"):
        return name if name in set(names) else None
    base = name[:-len("-ci")]
    return base if base in set(names) else None


def _distribution(values: Sequence[float | None]) -> dict[str, float | None]:
    import numpy as np

    got = [float(v) for v in values if v is not None]
    if not got:
        return {"median": None, "p5": None, "p95": None}
    return {"median": float(statistics.median(got)), "p5": float(np.quantile(got, 0.05)),
            "p95": float(np.quantile(got, 0.95))}


def _full_settings(doc: Mapping[str, Any]) -> Any:
    """The full-scale RunSettings of a ci run's benchmark document.

    Raises:
        Unsupported: an input the twin does not model.
        ConfigError: no full-scale counterpart of its profile or policy.
    """
    from ..calibration.facts import run_settings
    from ..calibration.fidelity import plan_for
    from ..config.bundled import manifest_names, profile_names
    from ..config.policy import load_policy_manifest
    from ..control.policy.build import build_policy

    plan_for(dict(doc))  # raises Unsupported for the inputs the twin does not model
    ci = run_settings(dict(doc))
    profile = full_counterpart(str(ci.profile), profile_names())
    policy = full_counterpart(str(ci.policy), manifest_names()) if ci.policy else None
    missing = [f"{what} {value!r} has no bundled full-scale counterpart"
               for what, value, full in (("profile", ci.profile, profile),
                                         ("policy", ci.policy, policy or not ci.policy))
               if not full]
    if missing:
        raise ConfigError(missing)
    lag_threshold = None
    if ci.lag_threshold is not None:
        files_ci = replace(ci, lag_threshold=None).manifest_files()
        full = replace(ci, scale="full", profile=profile, policy=policy, lag_threshold=None,
                       partitions=None)
        ratio = ci.lag_threshold / build_policy(
            load_policy_manifest(files_ci["policy"])).lag_threshold_records
        lag_threshold = max(1, round(ratio * build_policy(load_policy_manifest(
            full.manifest_files()["policy"])).lag_threshold_records))
    return replace(ci, scale="full", profile=profile, policy=policy, partitions=None,
                   lag_threshold=lag_threshold)


def full_scale_row(run: Any, draws: int, seed: int = 0) -> FullScaleRow:
    """Predict ``run`` (a :class:`~pytest_lagscale.report.findings.RunDoc` of a ci run) at full scale.

    Raises:
        Unsupported: an input the twin does not model.
        ConfigError: no full-scale counterpart, or the full-scale inputs do not plan.
    """
    from ..twin.run import params_for, plan_of, simulate_draws

    settings = _full_settings(run.doc)
    started = time.perf_counter()
    plan = plan_of(settings)
    result = simulate_draws(plan, params_for(plan), seed, draws)
    predicted = {name: _distribution([r.measurements.flat().get(name) for r in result.runs])
                 for name in FIGURES}
    metrics = run.doc.get("metrics") or {}
    measured = {name: (metrics.get(name) or {}).get("value") for name in FIGURES}
    inputs = (f"{settings.profile} + {plan.policy_name}"
              + (f", lagThreshold {plan.lag_threshold}" if settings.lag_threshold else ""))
    return FullScaleRow(run.label, inputs, measured, predicted,
                        time.perf_counter() - started)


def tune_check(runs: Sequence[Any], seed: int = 0, draws: int = TUNE_DRAWS) -> TuneCheck | None:
    """Experiment 8's cross-check (module docstring), or None when no run recorded a sweep
    (or it swept fewer than two values). ``draws`` per point (ci scale: ~0.1 s a draw).

    Raises:
        ConfigError: the sweep's inputs do not plan in the twin.
    """
    from ..calibration.facts import run_settings
    from .prepare import TuneOptions, prepare
    from .search import tune

    sweep = next((r for r in runs if isinstance((r.doc.get("experiment") or {}).get("sweep"),
                                                Mapping)), None)
    if sweep is None:
        return None
    record = sweep.doc["experiment"]["sweep"]
    values = sorted({int(v["lag_threshold"]) for v in record.get("values") or ()
                     if isinstance(v, Mapping) and v.get("lag_threshold")})
    rec = record.get("recommendation") or {}
    slo_s = float(rec.get("drain_slo_s") or record.get("drain_slo_s") or 0)
    if len(values) < 2 or slo_s <= 0:
        return None
    settings = run_settings(dict(sweep.doc))
    started = time.perf_counter()

    def search(space: str) -> Any:
        return tune(prepare(TuneOptions(profile=str(settings.profile),
                                        policy=str(settings.policy), space=[space],
                                        slos=[f"drain_time_s<={slo_s:g}"],
                                        engine=settings.engine, draws=draws, seed=seed)))
    swept = search("lagThreshold=" + "|".join(str(v) for v in values))
    fine = search(f"lagThreshold={values[0]}..{values[-1]}:{TUNE_GRID}")
    slo = f"drain_time_s<={slo_s:g}"
    by_value = {int(p.values["lagThreshold"]): p.slos.get(slo, (None, False))
                for p in swept.points}
    held = [v for v, (_, ok) in by_value.items() if ok]
    best = fine.best
    measured = rec.get("lag_threshold")
    return TuneCheck(slo_s, None if measured is None else int(measured), by_value,
                     max(held) if held else None,
                     None if best is None else int(best.values["lagThreshold"]),
                     None if best is None else best.median("replica_seconds"),
                     tuple(int(p.values["lagThreshold"]) for p in fine.points),
                     f"{settings.profile} + {settings.policy}", time.perf_counter() - started)


def simulate_findings(runs: Sequence[Any], draws: int = 3, seed: int = 0) -> Simulated:
    """The report's simulated section over ``runs`` (module docstring).

    Args:
        runs: :class:`~pytest_lagscale.report.findings.RunDoc` of the report; only ci-scale runs are predicted.
        draws: full-scale draws per run (1..100).
        seed: the draws' seed.

    Raises:
        ConfigError: ``draws`` out of range.
    """
    from ..calibration.fidelity import STATED_BAND, Unsupported
    from ..twin.params import calibration_path

    if not 1 <= draws <= 100:
        raise ConfigError(f"--full-scale-draws: got {draws!r}, expected an integer in "
                          "[1, 100] (0 leaves the section out)")
    from ..twin.params import load_calibration

    calibration = calibration_path("spark")
    machine = load_calibration(calibration).get("machine") or {}
    out = Simulated(draws, f"{calibration.name}, measured on {machine.get('cores', '?')} cores: "
                    f"{machine.get('description', '')}", dict(STATED_BAND))
    seen: set[tuple[Any, ...]] = set()
    for run in runs:
        inputs = run.doc.get("inputs") or {}
        if inputs.get("scale", "ci") != "ci" or (run.doc.get("run") or {}).get(
                "platform") == "twin":
            continue
        try:
            key = tuple(sorted(vars(_full_settings(run.doc)).items(), key=lambda kv: kv[0]))
            key = tuple((k, str(v)) for k, v in key)
            if key in seen:
                continue
            seen.add(key)
            out.rows.append(full_scale_row(run, draws, seed))
        except (Unsupported, ConfigError) as exc:
            out.skipped[run.label] = "; ".join(p.removeprefix(f"{run.label}: ")
                                               for p in exc.problems)
    try:
        check = tune_check(runs, seed)
    except ConfigError as exc:
        return replace(out, tune_problem="; ".join(exc.problems))
    return replace(out, tune=check)


__all__ = ["FIGURES", "FullScaleRow", "Simulated", "TuneCheck", "full_counterpart",
           "full_scale_row", "simulate_findings", "tune_check"]
