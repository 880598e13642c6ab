"""Per-experiment extractors of the findings report: what each experiment's section shows.

An extractor takes the runs of one experiment (``list[RunDoc]``, see :mod:`.findings`) and
returns an :class:`~.findings.Extract`: headline :class:`~.findings.Figure` s with verdicts, a
one-sentence conclusion computed from those numbers, and optionally the
:class:`~.findings.Recommendation` the experiment gives. Register one with
``@extractor(n)``; adding an experiment is one function. Every extractor tolerates absent keys
(a figure it cannot read is printed ``n/a``, never raises).

What each reads (benchmark JSON keys):

1. ``experiment.signal`` (``lag_policy``, ``cpu_policy``, ``lag_multiple``,
   ``peak_ratio_cpu_over_lag``) -> the scaling signal.
2. ``metrics`` of the spike run (``reaction_time_s`` and its five parts, ``drain_time_s``,
   ``drain_monotone``, ``peak_lag_records``).
3. ``experiment.rebalance_dip.variants.<protocol>`` (``max_dip``, ``max_recovery_s``,
   ``rebalance_cost_records``, ``restart_cost_records``, ``drain_time_s``) -> the protocol.
4. ``experiment.ceiling`` (``partitions``, ``max_desired``, ``surplus_records``,
   ``surplus_max_partitions``, ``throughput_change``) and ``experiment.cap``
   (``max_desired``) -> maxReplicaCount.
5. ``experiment.flapping`` (any scalars; ``recommendation`` = {setting: value} if present)
   -> the scale-down windows.
6. ``run.reconciliation`` (``lost_total``, ``duplicated_total``) of the graceful and the
   ``--no-graceful`` runs.
7. ``experiment.partitions`` (any scalars).
8. ``experiment.sweep`` (any scalars; ``recommendation`` = {``lag_threshold``,
   ``drain_slo_s``, ``evidence``, ...}) -> lagThreshold.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from .findings import Extract, Figure, Recommendation, RunDoc

Extractor = Callable[[list[RunDoc]], Extract]
EXTRACTORS: dict[int, Extractor] = {}

# The recommendations section, in order: (setting, experiment it comes from).
RECOMMENDATION_ORDER = (("maxReplicaCount", 4), ("rebalance protocol", 3),
                        ("lagThreshold", 8), ("scale-down windows", 5), ("scaling signal", 1))
DIP_SLO, RECOVERY_SLO_S, REACTION_SLO_S, SURPLUS_TOLERANCE = 0.20, 5.0, 90.0, 0.05
NA = "n/a"


def extractor(number: int) -> Callable[[Extractor], Extractor]:
    """Register ``fn`` as experiment ``number``'s extractor."""
    def register(fn: Extractor) -> Extractor:
        EXTRACTORS[number] = fn
        return fn
    return register


def not_determined(setting: str, number: int) -> Recommendation:
    """The placeholder recommendation of an experiment that did not run or gave none."""
    return Recommendation(setting, "not determined", number,
                          f"experiment {number} has no run or recorded no recommendation")


# -- formatting -------------------------------------------------------------------------------
def num(value: Any, unit: str = "", digits: int = 1) -> str:
    """``value`` printed with ``unit`` (``27.9 s``, ``56,526 records``), ``n/a`` if absent."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return NA if value is None else str(value)
    text = f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 1000 \
        else f"{value:,.{digits}f}"
    return f"{text} {unit}".rstrip()


def pct(value: Any) -> str:
    """A fraction printed as a percentage (``0.24`` -> ``24.3 %``), ``n/a`` if absent."""
    return f"{value * 100:.1f} %" if isinstance(value, (int, float)) else NA


def verdict(ok: bool | None) -> str | None:
    """``pass`` / ``fail``, None when the value needed was absent."""
    return None if ok is None else ("pass" if ok else "fail")


def _get(mapping: Any, *keys: str) -> Any:
    for key in keys:
        mapping = mapping.get(key) if isinstance(mapping, Mapping) else None
    return mapping


def _metric(run: RunDoc, name: str) -> Any:
    return _get(run.doc, "metrics", name, "value")


def _with_record(runs: list[RunDoc], key: str) -> Mapping[str, Any]:
    return next((r.record[key] for r in runs if isinstance(r.record.get(key), Mapping)), {})


def _lt(value: Any, limit: float) -> bool | None:
    return value < limit if isinstance(value, (int, float)) else None


def scalar_figures(record: Mapping[str, Any], limit: int = 12) -> list[Figure]:
    """Figures for every scalar of a record, one level of nesting flattened (``a.b``)."""
    figures: list[Figure] = []
    for key, value in record.items():
        if key == "recommendation":
            continue
        items = value.items() if isinstance(value, Mapping) else [("", value)]
        for sub, item in items:
            if isinstance(item, (int, float, str, bool)) and len(figures) < limit:
                figures.append(Figure(f"{key}.{sub}" if sub else key, num(item)))
    return figures


# -- the experiments --------------------------------------------------------------------------
@extractor(1)
def signal(runs: list[RunDoc]) -> Extract:
    """Experiment 1: the replicas each policy asked for while lag passed N x lagThreshold."""
    rec = _with_record(runs, "signal")
    lag, cpu = _get(rec, "lag_policy") or {}, _get(rec, "cpu_policy") or {}
    lag_max, cpu_max = lag.get("max_desired_while_lag_over"), cpu.get("max_desired_while_lag_over")
    ratio, multiple = rec.get("peak_ratio_cpu_over_lag"), rec.get("lag_multiple", 10)
    both = isinstance(lag_max, int) and isinstance(cpu_max, int)
    figures = [
        Figure(f"lag policy: max desired replicas while lag > {multiple}x lagThreshold",
               num(lag_max), verdict(lag_max > 1 if both else None)),
        Figure(f"CPU policy: max desired replicas while lag > {multiple}x lagThreshold",
               num(cpu_max), verdict(cpu_max <= 1 if both else None)),
        Figure("lag policy: reaction time", num(lag.get("reaction_time_s"), "s")),
        Figure("peak lag: CPU policy / lag policy", num(ratio, "x", 2)),
        Figure("CPU policy: peak lag before the switch",
               num(cpu.get("peak_lag_before_switch_records"), "records")),
    ]
    if not both:
        return Extract(figures, "The signal comparison was not recorded (experiment.signal).")
    best = "lag" if lag_max > cpu_max else "CPU" if cpu_max > lag_max else "either"
    sentence = (f"While lag passed {multiple}x lagThreshold the lag trigger asked for {lag_max} "
                f"replicas and the CPU HPA for {cpu_max}"
                + (f", and lag under CPU peaked {ratio:.1f}x higher" if ratio else "")
                + f": scale on {best}.")
    evidence = f"lag policy {lag_max} replicas vs CPU policy {cpu_max} while lag ran away"
    return Extract(figures, sentence, Recommendation("scaling signal", best, 1, evidence))


@extractor(2)
def spike(runs: list[RunDoc]) -> Extract:
    """Experiment 2: reaction time (five parts) and drain of the spike run."""
    run = next((r for r in runs if "signal" not in r.record), runs[0])
    m = {name: _metric(run, name) for name in (
        "reaction_time_s", "detection_s", "actuation_s", "cold_start_s", "join_s",
        "first_fetch_s", "drain_time_s", "drain_monotone", "peak_lag_records")}
    reaction, drain = m["reaction_time_s"], m["drain_time_s"]
    parts = " + ".join(num(m[k], "s") for k in ("detection_s", "actuation_s", "cold_start_s",
                                                 "join_s", "first_fetch_s"))
    figures = [
        Figure(f"reaction time (< {REACTION_SLO_S:g} s)", num(reaction, "s"),
               verdict(_lt(reaction, REACTION_SLO_S))),
        Figure("= detection + actuation + cold start + join + first fetch", parts),
        Figure("drain time to <= 1x lagThreshold", num(drain, "s"),
               verdict(None if run.doc.get("metrics") is None else drain is not None)),
        Figure("drain monotone at full parallelism", num(m["drain_monotone"]),
               verdict(None if m["drain_monotone"] is None else m["drain_monotone"] == 1.0)),
        Figure("peak lag", num(m["peak_lag_records"], "records")),
    ]
    if reaction is None:
        return Extract(figures, "The run measured no reaction time (see its benchmark.json).")
    within = "within" if reaction < REACTION_SLO_S else "over"
    drained = (f"drained the backlog in {num(drain, 's')}" if drain is not None
               else "did not drain the backlog to lagThreshold")
    return Extract(figures, f"The group reacted to the spike in {num(reaction, 's')} ({within} "
                            f"the {REACTION_SLO_S:g} s SLO) and {drained}.")


@extractor(3)
def rebalance(runs: list[RunDoc]) -> Extract:
    """Experiment 3: dip, recovery and records lost to rebalances per protocol."""
    variants = _get(_with_record(runs, "rebalance_dip"), "variants") or {}
    figures, costs = [], {}
    for name, v in sorted(variants.items()):
        slo = None
        if isinstance(v.get("max_dip"), (int, float)) and isinstance(
                v.get("max_recovery_s"), (int, float)):
            slo = v["max_dip"] < DIP_SLO and v["max_recovery_s"] < RECOVERY_SLO_S
        cost = sum(v.get(k) or 0 for k in ("rebalance_cost_records", "restart_cost_records"))
        figures.append(Figure(
            f"{name}: max dip / recovery / records lost to rebalances / drain",
            f"{pct(v.get('max_dip'))} / {num(v.get('max_recovery_s'), 's')} / "
            f"{num(cost, 'records')} / {num(v.get('drain_time_s'), 's')}",
            verdict(slo) if name.startswith("cooperative") else None))
        if slo:
            costs[name] = cost
    if not variants:
        return Extract(figures, "The protocol comparison was not recorded "
                                "(experiment.rebalance_dip).")
    if not costs:
        return Extract(figures, f"No protocol met the dip < {DIP_SLO:.0%} and recovery < "
                                f"{RECOVERY_SLO_S:g} s SLO.")
    best = min(costs, key=costs.__getitem__)
    evidence = (f"{best} met the dip < {DIP_SLO:.0%} / recovery < {RECOVERY_SLO_S:g} s SLO and "
                f"lost the fewest records to rebalances ({num(costs[best], 'records')}) of "
                f"{len(costs)} protocol(s) that met it")
    return Extract(figures, f"Of the protocols measured, {evidence}.",
                   Recommendation("rebalance protocol", best, 3, evidence))


@extractor(4)
def ceiling(runs: list[RunDoc]) -> Extract:
    """Experiment 4: what replicas beyond P own and add, and whether KEDA caps at P."""
    rec, cap = _with_record(runs, "ceiling"), _with_record(runs, "cap")
    p, change = rec.get("partitions") or cap.get("partitions"), rec.get("throughput_change")
    surplus_records = rec.get("surplus_records")
    figures = [
        Figure("partitions P", num(p)),
        Figure("max desired replicas (allowIdleConsumers)", num(rec.get("max_desired"))),
        Figure("partitions owned by replicas beyond P", num(rec.get("surplus_max_partitions")),
               verdict(None if rec.get("surplus_max_partitions") is None
                       else rec["surplus_max_partitions"] == 0)),
        Figure("records processed by replicas beyond P", num(surplus_records, "records"),
               verdict(None if surplus_records is None else surplus_records == 0)),
        Figure(f"throughput change P -> 2P (within {SURPLUS_TOLERANCE:.0%})", pct(change),
               verdict(None if change is None else abs(change) <= SURPLUS_TOLERANCE)),
        Figure("max desired replicas without allowIdleConsumers (<= P)",
               num(cap.get("max_desired")),
               verdict(None if cap.get("max_desired") is None or p is None
                       else cap["max_desired"] <= p)),
    ]
    if p is None or change is None:
        return Extract(figures, "The partition ceiling was not recorded (experiment.ceiling).")
    useless = abs(change) <= SURPLUS_TOLERANCE
    value = f"{p} (= P)" if useless else f"above P ({p}): the surplus added {pct(change)}"
    evidence = (f"replicas beyond P = {p} processed {num(surplus_records, 'records')} and "
                f"changed throughput by {pct(change)}")
    sentence = (f"Replicas beyond P = {p} processed {num(surplus_records, 'records')} and changed"
                f" the group's throughput by {pct(change)}: "
                + ("cap maxReplicaCount at P." if useless else "they did add throughput."))
    return Extract(figures, sentence, Recommendation("maxReplicaCount", value, 4, evidence))


def _recorded_recommendation(rec: Mapping[str, Any], setting: str, number: int,
                             key: str | None) -> Recommendation | None:
    """The recommendation an experiment recorded under ``recommendation``: its ``key`` value
    (or every scalar when ``key`` is None), with its ``evidence``."""
    recommendation = rec.get("recommendation")
    if not isinstance(recommendation, Mapping):
        return None
    if key is not None:
        value = num(recommendation.get(key))
    else:
        value = ", ".join(f"{k} {num(v)}" for k, v in recommendation.items()
                          if k != "evidence" and isinstance(v, (int, float, str)))
    evidence = recommendation.get("evidence")
    if not isinstance(evidence, str):
        evidence = ", ".join(f"{k} {num(v)}" for k, v in recommendation.items()
                             if k not in ("evidence", key) and isinstance(v, (int, float, str)))
    return Recommendation(setting, value or NA, number, evidence or "as recorded")


@extractor(5)
def flapping(runs: list[RunDoc]) -> Extract:
    """Experiment 5: ``experiment.flapping`` as recorded (scalars; ``recommendation``)."""
    rec = _with_record(runs, "flapping")
    reversals = {r.label: _metric(r, "direction_reversals") for r in runs}
    figures = scalar_figures(rec) + [Figure(f"{label}: direction reversals", num(value))
                                     for label, value in reversals.items()]
    recommendation = _recorded_recommendation(rec, "scale-down windows", 5, None)
    counts = ", ".join(f"{label} {num(v)}" for label, v in reversals.items())
    sentence = (f"Direction reversals per run: {counts}." if counts else
                "No direction reversals were measured.")
    return Extract(figures, sentence, recommendation)


@extractor(6)
def scale_down(runs: list[RunDoc]) -> Extract:
    """Experiment 6: lost and duplicated records of the graceful and the SIGKILL runs."""
    figures, parts = [], []
    for run in runs:
        rec = _get(run.doc, "run", "reconciliation") or {}
        graceful = _get(run.doc, "run", "graceful_drain") is not False
        lost, dup = rec.get("lost_total"), rec.get("duplicated_total")
        how = "graceful drain" if graceful else "SIGKILL on scale-down"
        figures.append(Figure(f"{run.label} ({how}): lost records", num(lost),
                              verdict(None if lost is None else lost == 0)))
        figures.append(Figure(f"{run.label} ({how}): duplicated records", num(dup),
                              verdict(None if dup is None else dup == 0) if graceful else None))
        parts.append(f"{how} lost {num(lost)} and duplicated {num(dup)} of "
                     f"{num(rec.get('produced_total'))} records")
    return Extract(figures, "Scale-down with " + "; with ".join(parts) + ".")


@extractor(7)
def partitions(runs: list[RunDoc]) -> Extract:
    """Experiment 7: ``experiment.partitions`` as recorded (scalars)."""
    figures = scalar_figures(_with_record(runs, "partitions"))
    if not figures:
        return Extract(figures, "The partition change was not recorded (experiment.partitions).")
    shown = "; ".join(f"{f.name} {f.value}" for f in figures[:3])
    return Extract(figures, f"The partition change measured {shown}.")


@extractor(8)
def sweep(runs: list[RunDoc]) -> Extract:
    """Experiment 8: ``experiment.sweep`` and its ``recommendation.lag_threshold``."""
    rec = _with_record(runs, "sweep")
    figures = scalar_figures(rec)
    recommendation = _recorded_recommendation(rec, "lagThreshold", 8, "lag_threshold")
    if recommendation is None:
        return Extract(figures, "The sweep recorded no recommendation (experiment.sweep).")
    slo = _get(rec, "recommendation", "drain_slo_s")
    return Extract(figures, f"The largest lagThreshold meeting the drain SLO"
                            f"{' of ' + num(slo, 's') if slo is not None else ''} is "
                            f"{recommendation.value} records.", recommendation)
