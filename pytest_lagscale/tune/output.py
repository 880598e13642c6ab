"""What ``lagscale tune`` leaves: the tuned ScaledObject, the JSON of every point, and the
``--confirm`` run (the best policy run once for real, predicted vs measured).

Files, under ``<out>/<UTC stamp>-tune-<policy>/``:

* ``<policy>-tuned.yaml``: the input manifest with the best point's fields changed and every
  other key kept (re-serialised by PyYAML in the input's key order: its comments are not
  carried over; a header comment names the source and the changes). Absent when no point
  meets every SLO.
* ``tune.json``: ``schema_version`` 1, ``inputs`` (profile, policy, partitions, engine,
  draws, seed, reference lagThreshold, space, SLOs), ``best`` (grid index or null),
  ``fronts``, ``elapsed_s`` and ``points`` (one :meth:`.tune.Point.to_dict` each), plus
  ``confirm`` after a ``--confirm`` run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from .. import __version__
from .space import apply_point, describe
from .search import Point, TuneResult

SCHEMA_VERSION = 1
#: Metrics compared by ``--confirm`` besides the SLOs'.
CONFIRM_METRICS = ("reaction_time_s", "peak_lag_records", "drain_time_s", "replica_seconds",
                   "scale_steps")


@dataclass(frozen=True)
class TuneFiles:
    """Where the outputs went: ``root`` directory, ``manifest`` (None: no feasible point) and
    ``points_json``."""

    root: Path
    manifest: Path | None
    points_json: Path


def tuned_manifest_text(result: TuneResult, point: Point) -> str:
    """The input manifest with ``point``'s fields changed, as YAML with a header comment."""
    doc = apply_point(result.request.doc, point.values)
    source = result.request.plan.policy_config.source
    header = (f"# Tuned by lagscale tune from {source}: {describe(point.values)}\n"
              f"# (median replica-seconds {point.median('replica_seconds'):,.0f} over "
              f"{len(point.per_draw)} twin draws; SLOs {', '.join(point.slos)} held at the "
              "95th percentile).\n# Every other key is the input's.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def tune_document(result: TuneResult) -> dict[str, Any]:
    """The JSON document of a search (see the module docstring)."""
    request, plan = result.request, result.request.plan
    return {
        "schema_version": SCHEMA_VERSION, "lagscale_version": __version__,
        "datetime": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": {"profile": plan.profile.name, "policy": plan.policy_config.source,
                   "partitions": plan.profile.partitions, "engine": plan.engine,
                   "draws": request.draws, "seed": request.seed,
                   "reference_lag_threshold": plan.reference_lag_threshold,
                   "calibration": request.params.source,
                   "space": {a.key: list(a.values) for a in request.axes},
                   "slos": [s.text() for s in request.slos], "slo_quantile": 0.95,
                   "objective": "median replica_seconds"},
        "best": None if result.best is None else result.best.index,
        "fronts": {k: list(v) for k, v in result.fronts.items()},
        "elapsed_s": result.elapsed_s,
        "points": [p.to_dict() for p in result.points],
    }


def write_outputs(result: TuneResult, out_dir: str | Path) -> TuneFiles:
    """Write the tuned manifest (when a point is feasible) and ``tune.json`` into a new
    directory under ``out_dir`` (created when absent).

    Raises:
        OSError: the directory cannot be created or written.
    """
    stem = Path(result.request.plan.policy_config.source).stem
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    root = Path(out_dir) / f"{stamp}-tune-{stem}"
    root.mkdir(parents=True, exist_ok=False)
    manifest = None
    if result.best is not None:
        manifest = root / f"{stem}-tuned.yaml"
        manifest.write_text(tuned_manifest_text(result, result.best), encoding="utf-8")
    points_json = root / "tune.json"
    points_json.write_text(json.dumps(tune_document(result), indent=1) + "\n",
                           encoding="utf-8")
    return TuneFiles(root, manifest, points_json)


@dataclass(frozen=True)
class Confirmation:
    """The best policy's real run against the twin's prediction.

    Attributes:
        run: the real run's :class:`~pytest_lagscale.experiment.result.RunResult` (or what the
            injected runner returned: anything with ``metrics`` and ``check``).
        rows: ``(metric, twin median, twin p95, measured)`` per compared metric.
        slos: ``(slo text, measured, met)`` per SLO (also recorded as assertions in the run's
            benchmark JSON).
    """

    run: Any
    rows: tuple[tuple[str, float | None, float | None, float | None], ...]
    slos: tuple[tuple[str, float | None, bool], ...]

    @property
    def met(self) -> bool:
        """Every SLO met by the real run."""
        return all(ok for _, _, ok in self.slos)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the run directory, the rows, the SLO verdicts)."""
        return {"run_dir": str(getattr(self.run, "run_dir", "")),
                "metrics": [{"metric": m, "twin_median": med, "twin_p95": p95,
                             "measured": v} for m, med, p95, v in self.rows],
                "slos": [{"slo": s, "measured": v, "met": ok} for s, v, ok in self.slos]}


def confirm_plan(result: TuneResult, manifest: Path, out_dir: Path) -> Any:
    """The real run of the tuned manifest: ``plan_run`` of the input's settings with
    ``policy`` = ``manifest`` and runs under ``out_dir``, its reference lagThreshold set to the
    twin's (the input manifest's), so drain is measured as the twin measured it.

    Raises:
        ConfigError: the tuned manifest or the settings fail the run's checks.
    """
    from ..experiment.plan import plan_run

    base = result.request.plan
    settings = base.settings.with_overrides(policy=str(manifest), scaled_object=None,
                                            lag_threshold=None, out_dir=Path(out_dir))
    return replace(plan_run(settings), reference_lag_threshold=base.reference_lag_threshold)


def confirm(result: TuneResult, manifest: Path, out_dir: Path,
            runner: Callable[[Any], Any]) -> Confirmation:
    """Run the best policy once for real (``lagscale run``'s path: ``plan_run`` then
    ``run_plan`` with its progress line and summary) and compare with the twin.

    Args:
        result: a search with a best point.
        manifest: the tuned manifest written by :func:`write_outputs`.
        out_dir: parent of the real run's directory.
        runner: ``runner(plan) -> RunResult``: ``lagscale tune --confirm`` passes ``lagscale
            run``'s own (live progress line, summary table; :mod:`.cli`); tests inject a fake
            (the real one starts a broker and replicas).

    Raises:
        ConfigError: as :func:`confirm_plan`. LagscaleError: the real run failed.
    """
    assert result.best is not None, "confirm needs a feasible point"
    plan = confirm_plan(result, manifest, out_dir)
    run = runner(plan)
    measured = run.metrics
    best = result.best
    names = tuple(dict.fromkeys([*CONFIRM_METRICS, *(s.metric for s in result.request.slos)]))
    rows = tuple((m, best.median(m), best.p95(m), measured.get(m)) for m in names)
    slos = []
    for slo in result.request.slos:
        value = measured.get(slo.metric)
        met = run.check(slo.text(), value, slo.threshold, slo.met(value))
        slos.append((slo.text(), value, bool(met)))
    return Confirmation(run, rows, tuple(slos))


def add_confirmation(files: TuneFiles, confirmation: Confirmation) -> None:
    """Add ``confirm`` to ``tune.json``."""
    doc = json.loads(files.points_json.read_text(encoding="utf-8"))
    doc["confirm"] = confirmation.to_dict()
    files.points_json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


__all__ = ["CONFIRM_METRICS", "Confirmation", "SCHEMA_VERSION", "TuneFiles", "add_confirmation",
           "confirm", "confirm_plan", "tune_document", "tuned_manifest_text", "write_outputs"]
