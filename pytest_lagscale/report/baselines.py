"""Committed baselines for the CI gate: one document per run label, its tolerances from the
spread of repeated runs.

A baseline is a schema-1 benchmark document (:mod:`.benchjson`), so ``lagscale compare`` and
``--lagscale-baseline`` read it like any run, plus a ``baseline`` section saying where it came
from: the samples (commit, time, path), the rule below and each metric's spread.

The rule (:func:`derive_baseline`), per metric over the ``n`` samples of one label, is told in
benchmarks/baselines/README.md, "How the tolerances are set": the value is the median; the
tolerance is ``max(floor, margin x deviation)`` (deviation: the largest relative distance of a
sample from the median) rounded up to 0.05, with a floor of :data:`WIDE_FLOOR` for the start-up
path (:data:`WIDE`) and none for the exact counts (:data:`EXACT`, whose value is their worst
sample when the median is 0); a count also gets an absolute
slack of :data:`COUNT_SLACK` events; :data:`GATED_2X` is capped at :data:`MAX_GATED_TOLERANCE`
(``baseline.capped``); :data:`NOT_GATED`, metrics some sample did not measure, medians of 0 and
a rate whose window (:data:`~.compare.DEPENDS_ON`) differs between samples are shown, not gated.

:func:`render_tolerances` draws the table documented beside the baselines
(``TOLERANCES.md``); ``lagscale baseline update`` (:mod:`.baseline_cli`) writes both.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..contract.errors import ConfigError
from .compare import DEPENDS_ON

#: Metrics whose doubling the gate must catch (reaction time, drain time, replica-seconds).
GATED_2X = ("reaction_time_s", "drain_time_s", "replica_seconds")
#: The largest tolerance of a :data:`GATED_2X` metric: below 1.0, so 2x the value fails.
MAX_GATED_TOLERANCE = 0.9
#: Counts that are exact when the pipeline is right: no floor, equal samples allow no change.
EXACT = ("lost_records", "duplicated_records", "produced_records")
_BIMODAL = ("bimodal per rebalance (a rebalance between two batches costs nothing, one that "
            "stalls a batch most of the rate): shown, not gated")
#: Metrics shown with their spread but never gated, and why (the reason is written into the
#: baseline's spread notes and TOLERANCES.md). The runs behind each reason are in
#: docs/experiments.md, "Baselines: samples and history"; the ratios to the yardsticks (ideal
#: drain, oracle) are gated.
NOT_GATED = {
    "max_dip": _BIMODAL, "mean_dip": _BIMODAL, "max_recovery_s": _BIMODAL,
    "rebalance_cost_records": _BIMODAL,
    "actuation_s": ("milliseconds of thread scheduling: no relative tolerance fits; shown, not "
                    "gated"),
    "join_s": ("bimodal by the assignment protocol: a new member of a cooperative (or KIP-848) "
               "group is assigned its partitions in a second round, after the incumbent gives "
               "them up at its next poll, which a saturated batch delays by seconds (the "
               "cooperative-sticky rebalance run: 1.14-2.71 s in its four samples, 5.18 s in the "
               "CI of 2026-11-26 with nothing changed on that path; 1.1-6.1 s over all labels); "
               "reaction_time_s, which contains it, stays gated: shown, not gated"),
    "rate_window_s": "an analysis setting (follows the batch interval): shown, not gated",
    "drain_monotone": ("a verdict (1 or 0), not a quantity: experiment 2 asserts it where it is "
                       "a criterion; a rebalance run's rolling restart can overlap its drain "
                       "(0 in the range run of the CI of 2026-11-23 13:38, 1 in all 3 "
                       "samples): shown, not gated"),
    "burst_load_average_max": ("the machine's 1-minute load average during the burst: a "
                               "condition of the run, not a result (it carries the previous "
                               "run's tail and whatever else the machine runs; experiment 7's "
                               "arrow run: 1.07-1.36 in its samples, 2.81 in the CI of "
                               "2026-11-25 with nothing wrong): shown, not gated"),
    **{name: "a yardstick from the run's measured capacity, not a result: shown, not gated"
       for name in ("ideal_drain_time_s", "even_spread_ideal_drain_time_s",
                    "oracle_replica_seconds", "even_spread_oracle_replica_seconds",
                    "oracle_capped_s")},
}
#: The start-up path of a replica (JVM start, first fetch) moves with whatever else the
#: machine runs. These metrics get a floor of 100 %: they fail past a doubling, not within it.
WIDE = ("cold_start_s", "cold_start_median_s", "detection_s", "first_fetch_s")
WIDE_FLOOR = 1.0
#: The default rule, chosen out of sample (docs/experiments.md, "How the rule was chosen";
#: benchmarks/baselines/README.md).
DEFAULT_FLOOR = 0.5
DEFAULT_MARGIN = 3.0
#: The absolute slack of a count (unit ``count``), in events: a worsening of up to this many
#: events passes whatever the relative tolerance says (an integer's noise is an event or two).
COUNT_SLACK = 2.0
STEP = 0.05
TOLERANCES_FILE = "TOLERANCES.md"


@dataclass(frozen=True)
class Rule:
    """How tolerances follow from the spread: ``floor`` and ``margin`` (see module doc).

    Raises:
        ValueError: ``floor`` outside [0, 5] or ``margin`` outside [1, 10].
    """

    floor: float = DEFAULT_FLOOR
    margin: float = DEFAULT_MARGIN
    count_slack: float = COUNT_SLACK

    def __post_init__(self) -> None:
        if not 0.0 <= self.floor <= 5.0:
            raise ValueError(f"floor: {self.floor!r} is outside [0, 5] (a fraction of the value)")
        if not 1.0 <= self.margin <= 10.0:
            raise ValueError(f"margin: {self.margin!r} is outside [1, 10] (x the deviation)")
        if not 0.0 <= self.count_slack <= 10.0:
            raise ValueError(f"count_slack: {self.count_slack!r} is outside [0, 10] (events)")

    def slack(self, unit: str) -> float:
        """The absolute slack of a metric in ``unit``: :attr:`count_slack` for counts, else 0."""
        return self.count_slack if unit == "count" else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"value": "median", "floor": self.floor, "margin": self.margin, "step": STEP,
                "exact": list(EXACT), "gated_2x": list(GATED_2X), "not_gated": sorted(NOT_GATED),
                "depends_on": dict(DEPENDS_ON), "wide": list(WIDE),
                "wide_floor": WIDE_FLOOR,
                "max_gated_tolerance": MAX_GATED_TOLERANCE, "count_slack": self.count_slack}


def _round_up(value: float) -> float:
    return round(math.ceil(value / STEP - 1e-9) * STEP, 2)


def metric_baseline(name: str, values: Sequence[float | None], direction: str,
                    rule: Rule = Rule()) -> tuple[float | None, float, dict[str, Any]]:
    """One metric's baseline value, tolerance and spread from its samples' values.

    ``direction`` is the metric's (``lower_is_better``/``higher_is_better``): it picks the
    worst sample of an exact count whose median is 0.

    Returns:
        ``(value, tolerance, spread)``; ``spread`` holds ``n``, ``min``, ``median``, ``max``,
        ``deviation`` (None when not computable), ``note`` (why it is not gated, or None) and
        ``capped`` (the uncapped tolerance when :data:`MAX_GATED_TOLERANCE` applied, else None).

    Raises:
        ValueError: ``values`` is empty.
    """
    if not values:
        raise ValueError(f"{name}: no samples")
    measured = [float(v) for v in values if v is not None]
    spread: dict[str, Any] = {"n": len(values), "measured": len(measured), "min": None,
                              "median": None, "max": None, "deviation": None, "note": None,
                              "capped": None}
    if len(measured) < len(values):
        spread["note"] = f"measured in {len(measured)} of {len(values)} samples"
        return None, 0.0, spread
    median = statistics.median(measured)
    spread.update(min=min(measured), median=median, max=max(measured))
    if name in NOT_GATED:
        spread["deviation"] = (max(abs(x - median) for x in measured) / abs(median)
                               if median else None)
        spread["note"] = NOT_GATED[name]
        return None, 0.0, spread
    if median == 0:
        if name not in EXACT:
            spread["note"] = "median 0: a relative tolerance cannot express noise around 0"
            return None, 0.0, spread
        spread["deviation"] = None if any(measured) else 0.0
        worst = max(measured) if direction == "lower_is_better" else min(measured)
        return worst, 0.0, spread
    deviation = max(abs(x - median) for x in measured) / abs(median)
    spread["deviation"] = deviation
    if name in EXACT and deviation == 0:
        return median, 0.0, spread
    floor = max(rule.floor, WIDE_FLOOR) if name in WIDE else rule.floor
    tolerance = _round_up(max(floor, rule.margin * deviation))
    if name in GATED_2X and tolerance > MAX_GATED_TOLERANCE:
        spread["capped"] = tolerance
        tolerance = MAX_GATED_TOLERANCE
    return median, tolerance, spread


#: Run settings that say where a run was written, not what ran.
_WHERE = ("out_dir",)


def _given(inputs: Mapping[str, Any], by_bytes: bool) -> dict[str, Any]:
    """``inputs`` as a setup: the inputs and run settings left at None dropped (a setting not
    given on a run is the same setup as a run recorded before that option existed: its document
    has no key), the output directory dropped, and a given Deployment by its bytes
    (``deployment_sha256``) when ``by_bytes``, else by its file name (a test writes its
    Deployment into its own temporary directory, a new one per pytest session)."""
    settings = {k: v for k, v in (inputs.get("settings") or {}).items()
                if v is not None and k not in _WHERE}
    given = {k: v for k, v in inputs.items() if v is not None}
    if by_bytes:
        settings.pop("deployment", None)
    else:
        given.pop("deployment_sha256", None)
        if isinstance(settings.get("deployment"), str):
            settings["deployment"] = Path(settings["deployment"]).name
    return {**given, "settings": settings} if "settings" in inputs else given


def _same_inputs(label: str, docs: Sequence[Mapping[str, Any]]) -> None:
    """Raise unless every sample is one setup (:func:`_given`): Deployments compared by their
    bytes when every sample given one records them, else by file name."""
    given = [d["inputs"] for d in docs if (d["inputs"].get("settings") or {}).get("deployment")]
    by_bytes = all(i.get("deployment_sha256") for i in given)
    first = _given(docs[0]["inputs"], by_bytes)
    for doc in docs[1:]:
        other = _given(doc["inputs"], by_bytes)
        diff = sorted(k for k in set(first) | set(other) if first.get(k) != other.get(k))
        if diff:
            raise ConfigError(f"{label}: the samples' inputs differ in {diff!r}; a baseline "
                              "holds runs of one setup (same profile, policy, versions, broker)")


def derive_baseline(label: str, samples: Sequence[tuple[Path, Mapping[str, Any]]],
                    rule: Rule = Rule()) -> dict[str, Any]:
    """The baseline document of one run label from its samples (path, loaded document).

    Metrics are those of the first sample (a metric absent from another sample counts as
    unmeasured there). ``inputs``, ``machine_info`` and ``run`` come from the first sample;
    ``datetime`` and ``commit_info`` from the newest.

    Raises:
        ConfigError: no samples, or the samples' inputs differ.
    """
    if not samples:
        raise ConfigError(f"{label}: no samples")
    docs = [doc for _, doc in samples]
    _same_inputs(label, docs)
    first = docs[0]
    newest = max(docs, key=lambda d: d["datetime"])
    metrics, spread, capped = {}, {}, {}
    for name, entry in first["metrics"].items():
        values = [(doc["metrics"].get(name) or {}).get("value") for doc in docs]
        value, tolerance, metric_spread = metric_baseline(name, values, entry["direction"],
                                                          rule)
        metrics[name] = {"value": value, "unit": entry.get("unit", ""),
                         "direction": entry["direction"], "tolerance": tolerance}
        slack = rule.slack(entry.get("unit", ""))
        if value is not None and slack and name not in EXACT:
            metrics[name]["slack"] = slack
        spread[name] = metric_spread
        if metric_spread["capped"] is not None:
            capped[name] = metric_spread["capped"]
    ungate_dependents(metrics, spread)
    return {
        "schema_version": first["schema_version"],
        "lagscale_version": newest.get("lagscale_version"),
        "datetime": newest["datetime"],
        "machine_info": first["machine_info"],
        "commit_info": newest["commit_info"],
        "inputs": first["inputs"],
        "run": {"label": label, **{k: v for k, v in (first.get("run") or {}).items()
                                   if k in ("topic", "group", "lag_threshold", "min_replicas",
                                            "max_replicas", "graceful_drain", "policy_kind")}},
        "metrics": metrics,
        "assertions": [],
        "artifacts": {},
        "baseline": {
            "label": label,
            "samples": [{"path": str(path), "commit": doc["commit_info"].get("id"),
                         "dirty": bool(doc["commit_info"].get("dirty")),
                         "datetime": doc["datetime"]} for path, doc in samples],
            "rule": rule.to_dict(),
            "spread": spread,
            "capped": capped,
        },
    }


def ungate_dependents(metrics: dict[str, dict[str, Any]],
                      spread: dict[str, dict[str, Any]]) -> list[str]:
    """Ungate, in place, each gated :data:`DEPENDS_ON` metric whose window-closing metric was
    measured in some samples but not all (its spread's ``measured`` between 1 and ``n - 1``):
    value None, tolerance 0, no slack, and a note in its spread. Returns the names ungated."""
    ungated = []
    for name, closer in DEPENDS_ON.items():
        entry, closing = metrics.get(name), spread.get(closer) or {}
        if entry is None or entry.get("value") is None:
            continue
        if not 0 < closing.get("measured", closing.get("n", 0)) < closing.get("n", 0):
            continue
        entry.update(value=None, tolerance=0.0)
        entry.pop("slack", None)
        spread.setdefault(name, {})["note"] = (
            f"its window ends at the event of {closer}, which was measured in "
            f"{closing['measured']} of {closing['n']} samples (the runs reach the spike on "
            "different paths): shown, not gated")
        ungated.append(name)
    return ungated


def regate(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A committed baseline with today's :data:`NOT_GATED` applied, without its samples:
    each metric of :data:`NOT_GATED` it still gates gets value None, tolerance 0, no slack and
    the reason as its spread's note (what :func:`derive_baseline` gives from the samples), and
    its ``rule`` is today's with its own floor, margin and count slack. Returns ``(new
    document, names ungated)``; the other metrics and the spread's figures are unchanged.

    Raises:
        ConfigError: the document has no ``baseline`` section (not a baseline).
    """
    import copy

    if "baseline" not in doc:
        raise ConfigError("regate: the document has no 'baseline' section; give a baseline "
                          "written by lagscale baseline update")
    new = copy.deepcopy(dict(doc))
    info = new["baseline"]
    old_rule = info.get("rule") or {}
    rule = Rule(float(old_rule.get("floor", DEFAULT_FLOOR)),
                float(old_rule.get("margin", DEFAULT_MARGIN)),
                float(old_rule.get("count_slack", COUNT_SLACK)))
    ungated = []
    for name, entry in new["metrics"].items():
        if name in NOT_GATED and entry.get("value") is not None:
            entry.update(value=None, tolerance=0.0)
            entry.pop("slack", None)
            info.setdefault("spread", {}).setdefault(name, {})["note"] = NOT_GATED[name]
            info.get("capped", {}).pop(name, None)
            ungated.append(name)
    info["rule"] = rule.to_dict()
    return new, ungated


def group_by_label(runs: Iterable[Any]) -> dict[str, list[tuple[Path, Mapping[str, Any]]]]:
    """Runs (objects with ``label``, ``path``, ``doc``, as ``findings.RunDoc``) grouped by
    label, in first-seen order, each group oldest first."""
    groups: dict[str, list[tuple[Path, Mapping[str, Any]]]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append((run.path, run.doc))
    return {label: sorted(group, key=lambda s: s[1]["datetime"])
            for label, group in groups.items()}


def catches_doubling(entry: Mapping[str, Any]) -> bool:
    """Whether a metric entry's check fails a run 2x worse than its value: twice the value
    when lower is better, half when higher is (worse by |value| or |value| / 2, which must
    exceed both the relative tolerance and the entry's slack)."""
    if entry.get("value") is None:
        return False
    value = abs(float(entry["value"]))
    worse = value if entry["direction"] == "lower_is_better" else value / 2
    allowed = max(float(entry["tolerance"]) * value, float(entry.get("slack", 0.0)))
    return worse > allowed


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def render_tolerances(baselines: Mapping[str, Mapping[str, Any]]) -> str:
    """``TOLERANCES.md``: per label, the samples and one row per metric (unit, better, min,
    median, max, deviation, tolerance, note), with what 2x of the gated metrics would do."""
    lines = ["# Baseline tolerances", "",
             "Generated by `lagscale baseline update`; do not edit by hand. Each baseline's value "
             "is the median of its samples; its tolerance is `max(floor, margin x deviation)` "
             "rounded up to 0.05, where deviation is the largest relative distance of a sample "
             "from the median; a count also passes within its slack (`or N count`: that many "
             "events worse; see `pytest_lagscale/report/baselines.py`).", ""]
    for label in sorted(baselines):
        doc = baselines[label]
        info = doc.get("baseline") or {}
        rule = info.get("rule") or {}
        samples = info.get("samples") or []
        versions = (doc.get("inputs") or {}).get("versions") or {}
        machine = doc.get("machine_info") or {}
        lines += [f"## {label}", "",
                  f"{len(samples)} sample(s): "
                  + ", ".join(f"`{s.get('commit')}` {s.get('datetime')}" for s in samples)
                  + f". Floor {rule.get('floor')}, margin {rule.get('margin')}. Machine: "
                  f"{machine.get('cpu_count')} CPUs, {machine.get('system')} "
                  f"{machine.get('release')}. Versions: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".", "",
                  "| metric | unit | better | min | median | max | deviation | tolerance | "
                  "2x worse fails | note |",
                  "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
        spreads = info.get("spread") or {}
        unmeasured = []
        for name, entry in doc["metrics"].items():
            sp = spreads.get(name) or {}
            if sp.get("min") is None and sp.get("note"):
                unmeasured.append(name)
                continue
            note = sp.get("note") or ""
            if sp.get("capped") is not None:
                note = (f"capped from {sp['capped']:g}: the spread alone may fail the gate"
                        + (f"; {note}" if note else ""))
            better = "lower" if entry["direction"] == "lower_is_better" else "higher"
            gated = entry.get("value") is not None
            caught = ("-" if not gated else "yes" if catches_doubling(entry) else "no")
            tolerance = f"{entry['tolerance']:.0%}" if gated else "not gated"
            if gated and entry.get("slack"):
                tolerance += f" or {entry['slack']:g} {entry.get('unit', '')}".rstrip()
            dev = sp.get("deviation")
            lines.append(f"| {name}{' **(2x)**' if name in GATED_2X else ''} | "
                         f"{entry.get('unit', '')} | {better} | {_fmt(sp.get('min'))} | "
                         f"{_fmt(sp.get('median'))} | {_fmt(sp.get('max'))} | "
                         f"{'-' if dev is None else f'{dev:.1%}'} | {tolerance} | {caught} | "
                         f"{note} |")
        if unmeasured:
            lines += ["", "Not gated, not measured in every sample: "
                      + ", ".join(f"`{name}`" for name in unmeasured) + "."]
        lines.append("")
    return "\n".join(lines)
