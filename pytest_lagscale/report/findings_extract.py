"""Per-experiment extractors of the findings report: what each experiment's section shows.

An extractor takes the runs of one experiment (``list[RunDoc]``, see :mod:`.findings`) and
returns an :class:`~.findings.Extract`: headline :class:`~.findings.Figure` s with verdicts, a
one-sentence conclusion computed from those numbers, and optionally the
:class:`~.findings.Recommendation` the experiment gives. Register one with
``@extractor(n)``; adding an experiment is one function. Every extractor tolerates absent keys
(a figure it cannot read is printed ``n/a``, never raises). The benchmark JSON keys each one
reads are listed in docs/findings.md, "Adding or changing an experiment"; experiment 10's is
:mod:`.findings_extract_sources`, experiment 11's :mod:`.findings_extract_share`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Callable, Mapping

from .findings import Extract, Figure, Recommendation, RunDoc, Table

Extractor = Callable[[list[RunDoc]], Extract]
EXTRACTORS: dict[int, Extractor] = {}

# The recommendations section, in order: (setting, experiment it comes from).
RECOMMENDATION_ORDER = (("maxReplicaCount", 4), ("rebalance protocol", 3),
                        ("lagThreshold", 8), ("scale-down windows", 5), ("scaling signal", 1),
                        ("share group past P", 11))
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
    # The profile's own run (label == profile), not a variant of it.
    run = next((r for r in runs if r.label == _get(r.doc, "inputs", "profile")), runs[0])
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
    """Experiment 3: dip, recovery and records lost to rebalances per protocol, and the lab's
    claim (range dips more than cooperative-sticky) with the replicas' librdkafka and with the
    lab's own franz-go consumer."""
    variants = _get(_with_record(runs, "rebalance_dip"), "variants") or {}
    franz = _get(_with_record(runs, "rebalance_dip_franz_go"), "variants") or {}
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
    claims = [_claim_figure(client, table) for client, table in
              (("librdkafka replicas", variants), ("franz-go consumer", franz)) if table]
    figures.extend(claims)
    tables = [_client_table(variants, franz)] if franz else []
    if not variants and not franz:
        return Extract(figures, "The protocol comparison was not recorded "
                                "(experiment.rebalance_dip).")
    said = " ".join(f"Does the lab's claim (range dips more than cooperative-sticky) hold with "
                    f"the {f.name.split(': ', 1)[0]}? {_ANSWER[f.verdict]} (range vs "
                    f"cooperative-sticky mean dip {f.value})." for f in claims)
    if not costs:
        return Extract(figures, f"No protocol met the dip < {DIP_SLO:.0%} and recovery < "
                                f"{RECOVERY_SLO_S:g} s SLO. {said}".strip(), tables=tables)
    best = min(costs, key=costs.__getitem__)
    evidence = (f"{best} met the dip < {DIP_SLO:.0%} / recovery < {RECOVERY_SLO_S:g} s SLO and "
                f"lost the fewest records to rebalances ({num(costs[best], 'records')}) of "
                f"{len(costs)} protocol(s) that met it")
    return Extract(figures, f"Of the protocols measured, {evidence}. {said}".strip(),
                   Recommendation("rebalance protocol", best, 3, evidence), tables=tables)


_ANSWER = {"pass": "Yes", "fail": "No", None: "Not measured"}


def _claim_figure(client: str, table: Mapping[str, Any]) -> Figure:
    """The lab's claim with one client: range mean dip vs cooperative-sticky mean dip."""
    eager = _get(table, "range", "mean_dip")
    coop = _get(table, "cooperative-sticky", "mean_dip")
    known = isinstance(eager, (int, float)) and isinstance(coop, (int, float))
    return Figure(f"{client}: range mean dip > cooperative-sticky mean dip (the lab's claim)",
                  f"{pct(eager)} vs {pct(coop)}", verdict(eager > coop if known else None))


def _client_table(librdkafka: Mapping[str, Any], franz: Mapping[str, Any]) -> Table:
    """range and cooperative-sticky, librdkafka replicas beside the franz-go consumer."""
    rows = []
    for client, table in (("librdkafka (spark_consumer)", librdkafka), ("franz-go", franz)):
        for name in ("range", "cooperative-sticky"):
            v = table.get(name) or {}
            rows.append([client, name, f"{v.get('up_steps_measured', '-')}/{v.get('up_steps', '-')}",
                         pct(v.get("mean_dip")), pct(v.get("max_dip")),
                         num(v.get("max_recovery_s"), "s"),
                         num(v.get("rebalance_duration_max_s"), "s", 2),
                         num(v.get("partitions_stopped")), num(v.get("drain_time_s"), "s"),
                         f"{num(v.get('lost_records'))} / {num(v.get('duplicated_records'))}"])
    return Table("Rebalance dip by client and protocol (scale-out steps under saturation)",
                 ["client", "protocol", "steps measured", "mean dip", "max dip", "max recovery",
                  "max rebalance", "partitions stopped", "drain", "lost / duplicated"], rows)


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
    """Experiment 5: flips, drain and replica-seconds of the short window and of hysteresis."""
    rec = _with_record(runs, "flapping")
    short, hyst = rec.get("short_window") or {}, rec.get("hysteresis") or {}
    figures = []
    for name, fig, want_flips in (("short window", short, True), ("hysteresis", hyst, False)):
        flips = fig.get("flips")
        figures.append(Figure(f"{name}: flips while bursting ({'> 0' if want_flips else '== 0'})",
                              num(flips), verdict(None if flips is None
                                                  else (flips > 0) == want_flips)))
        figures += [Figure(f"{name}: direction reversals / rebalances",
                           f"{num(fig.get('direction_reversals'))} / "
                           f"{num(fig.get('rebalances'))}"),
                    Figure(f"{name}: replica-seconds (x oracle)",
                           f"{num(fig.get('replica_seconds'))} "
                           f"({num(fig.get('replica_seconds_ratio'), 'x', 2)})")]
    drain, bound = hyst.get("drain_after_last_burst_s"), hyst.get("drain_bound_s")
    figures.append(Figure(f"hysteresis: drain after the last burst (<= {num(bound, 's')})",
                          num(drain, "s"), verdict(None if bound is None else
                                                   drain is not None and drain <= bound)))
    recommendation = _recorded_recommendation(rec, "scale-down windows", 5, None)
    if not hyst:
        flips = short.get("flips")
        return Extract(figures, f"The short window flipped {num(flips)} time(s) while bursting; "
                                "the hysteresis variant was not recorded.", recommendation)
    cost = rec.get("hysteresis_replica_seconds_over_short_window")
    return Extract(figures, f"Hysteresis flipped {num(hyst.get('flips'))} time(s) against "
                            f"{num(short.get('flips'))} with the short window, drained "
                            f"{num(drain, 's')} after the last burst, at {num(cost, 'x', 2)} "
                            "the replica-seconds.", recommendation)


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
    """Experiment 7: the forced rebalance, the new ceiling and the dip of a partition change."""
    rec = _with_record(runs, "partitions")
    change, rb = rec.get("change") or {}, rec.get("forced_rebalance") or {}
    rep = rec.get("replicas") or {}
    before, after = change.get("before"), change.get("after")
    lost, dup = rec.get("lost_records"), rec.get("duplicated_records")
    figures = [
        Figure("partitions before -> after", f"{num(before)} -> {num(after)}"),
        Figure("forced rebalance: delay after the change / duration",
               f"{num(rb.get('delay_s'), 's')} / {num(rb.get('duration_s'), 's')}"),
        Figure("transient dip / recovery", f"{pct(rb.get('dip'))} / "
                                          f"{num(rb.get('recovery_s'), 's')}"),
        Figure("max desired / current replicas after the change (new ceiling)",
               f"{num(rep.get('max_desired'))} / {num(rep.get('max_current'))}",
               verdict(None if rep.get("max_current") is None or before is None
                       else rep["max_current"] > before)),
        Figure("lost / duplicated records", f"{num(lost)} / {num(dup)}",
               verdict(None if lost is None or dup is None else lost == dup == 0)),
        Figure("drain time", num(rec.get("drain_time_s"), "s")),
    ]
    if before is None:
        return Extract(figures, "The partition change was not recorded (experiment.partitions).")
    return Extract(figures, f"Growing P from {before} to {after} forced a rebalance "
                            f"{num(rb.get('delay_s'), 's')} later with a {pct(rb.get('dip'))} dip, "
                            f"and the group scaled to {num(rep.get('max_current'))} replicas.")


@extractor(8)
def sweep(runs: list[RunDoc]) -> Extract:
    """Experiment 8: each swept value's line and SLO verdict, and the recommended value."""
    rec = _with_record(runs, "sweep")
    met = {str(v.get("lag_threshold")): v.get("slo_met") for v in rec.get("values") or ()
           if isinstance(v, Mapping)}
    figures = [Figure(f"lagThreshold {value}", str(line),
                      verdict(met.get(value) if isinstance(met.get(value), bool) else None))
               for value, line in (rec.get("by_threshold") or {}).items()]
    chosen = _get(rec, "recommendation", "lag_threshold")
    rule = _get(rec, "recommendation", "rule_of_thumb") or {}
    slo = _get(rec, "recommendation", "drain_slo_s") or rec.get("drain_slo_s")
    figures += [Figure("rule of thumb: rate x SLO x 0.75", num(rule.get("lag_threshold"),
                                                                "records")),
                Figure("HPA tolerance dead zone", str(_get(rec, "recommendation", "dead_zone",
                                                           "why") or NA))]
    if not isinstance(rec.get("recommendation"), Mapping):
        return Extract(figures, "The sweep recorded no recommendation (experiment.sweep).")
    evidence = str(_get(rec, "recommendation", "evidence") or "as recorded")
    value = num(chosen) if chosen is not None else "none met the SLO"
    sentence = (f"lagThreshold {num(chosen)} is the largest swept value draining within "
                f"{num(slo, 's')}; the rule of thumb gives {num(rule.get('lag_threshold'))}."
                if chosen is not None else f"No swept lagThreshold drained within "
                                           f"{num(slo, 's')}.")
    return Extract(figures, sentence, Recommendation("lagThreshold", value, 8, evidence))


def _shootout_rows(runs: list[RunDoc]) -> dict[str, dict[str, Mapping[str, Any]]]:
    """profile -> policy -> row, from every run's ``experiment.policies`` (a recorded
    ``table`` first, then each run's own ``row``)."""
    tables: dict[str, dict[str, Mapping[str, Any]]] = {}
    records = [r.record.get("policies") for r in runs]
    records = [rec for rec in records if isinstance(rec, Mapping) and rec.get("profile")]
    for rec in records:
        for name, row in (rec.get("table") or {}).items():
            tables.setdefault(str(rec["profile"]), {}).setdefault(name, row)
    for rec in records:
        if isinstance(rec.get("row"), Mapping) and rec.get("policy"):
            tables.setdefault(str(rec["profile"]), {}).setdefault(str(rec["policy"]), rec["row"])
    return tables


def _best(rows: Mapping[str, Mapping[str, Any]], figure: str) -> tuple[str | None, Any]:
    """The policy with the lowest ``figure`` (ignoring unmeasured ones) and that value."""
    measured = {name: row.get(figure) for name, row in rows.items()
                if isinstance(row.get(figure), (int, float))}
    if not measured:
        return None, None
    name = min(measured, key=lambda n: measured[n])
    return name, measured[name]


@extractor(9)
def policies(runs: list[RunDoc]) -> Extract:
    """Experiment 9: one table per profile, processed == produced per profile, and the verdict
    on each seed claim with its measured reduction."""
    from ..analyze.shootout import COLUMNS, seed_claims

    tables_by_profile = _shootout_rows(runs)
    header = ["policy", *(f"{name} ({unit})" for name, unit in COLUMNS.items()),
              "reaction SLO", "drain SLO"]
    tables, figures, parts = [], [], []
    for profile in sorted(tables_by_profile, key=lambda p: (p != "spike", p)):
        rows = tables_by_profile[profile]
        tables.append(Table(profile, header, [
            [name + (" (handed over to keda at the spike's end)" if row.get("handed_over")
                     else ""),
             *(num(row.get(col), "", 2 if col == "replica_seconds_ratio" else 1)
               for col in COLUMNS),
             verdict(row.get("reaction_slo_met")) or NA,
             verdict(row.get("drain_slo_met")) or NA] for name, row in rows.items()]))
        clean = [row.get("lost_records") == 0 and row.get("duplicated_records") == 0
                 for row in rows.values()]
        figures.append(Figure(f"{profile}: policies with processed == produced",
                              f"{sum(clean)} of {len(clean)}", verdict(all(clean))))
        best = [(_best(rows, figure), phrase) for figure, phrase in (
            ("replica_seconds", "used the fewest replica-seconds ({})"),
            ("drain_time_s", "drained fastest ({} s)"), ("scale_steps", "scaled least ({} events)"))]
        said = [f"{name} {phrase.format(num(value))}" for (name, value), phrase in best
                if name is not None]
        parts.append(f"on {profile} " + (", ".join(said) if said else "nothing was measured"))
    claims = seed_claims(tables_by_profile)
    for claim in claims:
        figures.append(Figure(f"claim: {claim.statement} ({claim.policy} vs {claim.reference}, "
                              f"{claim.profile})",
                              pct(claim.measured_reduction) + " reduction",
                              {"holds": "pass", "does not hold": "fail"}.get(claim.verdict)))
    if not tables:
        return Extract(figures, "The shoot-out recorded no table (experiment.policies).")
    verdicts = "; ".join(f"{c.statement!r} {c.verdict}" + (
        "" if c.measured_reduction is None else f" ({pct(c.measured_reduction)} measured)")
        for c in claims)
    return Extract(figures, "Measured: " + "; ".join(parts) + f". Seed claims: {verdicts}.",
                   tables=tables)


# Experiment 10's extractor lives in its own module (this one is full); importing it registers it.
import_module(".findings_extract_sources", __package__)
import_module(".findings_extract_share", __package__)
