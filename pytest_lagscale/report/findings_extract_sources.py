"""Experiment 10's section of the findings report: the cost of a late lag signal.

Reads ``experiment.lag_sources`` of each of the experiment's runs: ``source``, ``row`` (the
:data:`~pytest_lagscale.analyze.lag_delay.COLUMNS` figures, ``lost_records``,
``duplicated_records``) and, from the test, ``table`` (source -> row), ``tolerance_s`` and
``broker_first`` (the broker against each other source, :class:`~pytest_lagscale.analyze.
lag_delay.Verdict` fields) -> one table and a figure per verdict. Registered by importing this
module from :mod:`.findings_extract`.
"""

from __future__ import annotations

from typing import Any, Mapping

from .findings import Extract, Figure, RunDoc, Table
from .findings_extract import extractor, num, verdict


def _source_rows(runs: list[RunDoc]) -> tuple[dict[str, Mapping[str, Any]], list[Mapping[str, Any]]]:
    """source -> row (a recorded ``table`` first, then each run's own ``row``), and the
    ``broker_first`` verdicts of the first record that has them."""
    records = [r.record.get("lag_sources") for r in runs]
    records = [rec for rec in records if isinstance(rec, Mapping)]
    rows: dict[str, Mapping[str, Any]] = {}
    for rec in records:
        for name, row in (rec.get("table") or {}).items():
            rows.setdefault(str(name), row)
    for rec in records:
        if isinstance(rec.get("row"), Mapping) and rec.get("source"):
            rows.setdefault(str(rec["source"]), rec["row"])
    verdicts = next((list(rec["broker_first"]) for rec in records if rec.get("broker_first")), [])
    return rows, verdicts


@extractor(10)
def lag_sources(runs: list[RunDoc]) -> Extract:
    """Experiment 10: one table of the sources, processed == produced, and whether the broker
    detected the spike no later than each other source (within the recorded tolerance)."""
    from ..analyze.lag_delay import COLUMNS

    rows, verdicts = _source_rows(runs)
    if not rows:
        return Extract([], "The lag-source runs recorded no table (experiment.lag_sources).")
    header = ["source", *(f"{name} ({unit})" for name, unit in COLUMNS.items())]
    table = Table("spike", header, [[name, *(num(row.get(col)) for col in COLUMNS)] for name, row in rows.items()])
    clean = [row.get("lost_records") == 0 and row.get("duplicated_records") == 0 for row in rows.values()]
    figures = [Figure("sources with processed == produced", f"{sum(clean)} of {len(clean)}", verdict(all(clean)))]
    for v in verdicts:
        figures.append(Figure(f"broker detects no later than {v.get('source')} (+{num(v.get('tolerance_s'), 's')})",
                              f"{num(v.get('broker_s'), 's')} vs {num(v.get('other_s'), 's')}",
                              verdict(v.get("passed"))))
    said = [f"{name} detected the spike in {num(row.get('detection_s'), 's')} on a signal "
            f"{num(row.get('staleness_at_decision_s'), 's')} old (peak lag {num(row.get('peak_lag_records'))})"
            for name, row in rows.items()]
    return Extract(figures, "Measured: " + "; ".join(said) + ".", tables=[table])
