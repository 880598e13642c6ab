"""Experiment 11's section of the findings report: a share group past the partition ceiling.

Reads ``experiment.share_groups`` (``share`` and ``consumer``: each group type's throughput at P
and 2P, ``throughput_change``, ``max_desired``, ``max_dip``, ``store`` with its redeliveries and
duplicates, ``lost_records``; ``no_dips_claim``) and ``experiment.share_spike`` (the share group's
spike run under its scaler: reaction and its parts, lost and duplicated) -> one table by group
type, figures with verdicts, and the recommendation line "share group past P". Registered by
importing this module from :mod:`.findings_extract`.
"""

from __future__ import annotations

from typing import Any, Mapping

from .findings import Extract, Figure, Recommendation, RunDoc, Table
from .findings_extract import SURPLUS_TOLERANCE, extractor, num, pct, verdict

#: The throughput a share group must add beyond P to count as lifting the ceiling.
LIFT_MIN = 0.10
HEADER = ["group", "max desired replicas", "records/s at P", "records/s at 2P", "change P -> 2P",
          "redelivered rows", "duplicated records", "largest scale-step dip", "lost"]


def _record(runs: list[RunDoc], key: str) -> Mapping[str, Any]:
    return next((r.record[key] for r in runs if isinstance(r.record.get(key), Mapping)), {})


def _row(name: str, fig: Mapping[str, Any]) -> list[str]:
    store = fig.get("store") or {}
    return [name, num(fig.get("max_desired")), num(fig.get("throughput_at_p_per_s")),
            num(fig.get("throughput_at_2p_per_s")), pct(fig.get("throughput_change")),
            num(store.get("redelivered_rows")), num(store.get("duplicated_pairs")), pct(fig.get("max_dip")),
            num(fig.get("lost_records"))]


@extractor(11)
def share_groups(runs: list[RunDoc]) -> Extract:
    """Experiment 11: each group type's gain beyond P, the share group's duplicate cost and
    dips, the "no dips" verdict, and when a share group lifts the ceiling."""
    rec, spike = _record(runs, "share_groups"), _record(runs, "share_spike")
    share, consumer = rec.get("share") or {}, rec.get("consumer") or {}
    if not share:
        return Extract([], "The share-group runs recorded nothing (experiment.share_groups).")
    gain, c_gain = share.get("throughput_change"), consumer.get("throughput_change")
    store = share.get("store") or {}
    figures = [
        Figure(f"consumer group: change P -> 2P (within {SURPLUS_TOLERANCE:.0%})", pct(c_gain),
               verdict(None if c_gain is None else abs(c_gain) <= SURPLUS_TOLERANCE)),
        Figure("share group: change P -> 2P", pct(gain)),
        Figure("share group: lost records (== 0)", num(share.get("lost_records")),
               verdict(None if share.get("lost_records") is None else share["lost_records"] == 0)),
        Figure("share group: duplicates not explained by a redelivery (== 0)",
               num(store.get("duplicates_unattributed")),
               verdict(None if store.get("duplicates_unattributed") is None
                       else store["duplicates_unattributed"] == 0)),
        Figure("share group: redelivered rows (delivery count > 1)", num(store.get("redelivered_rows"))),
        Figure("vendor's claim \"no dips\"", str(rec.get("no_dips_claim") or "n/a")),
    ]
    if spike:
        figures.append(Figure("share group spike run: reaction (detection + actuation + cold start)",
                              f"{num(spike.get('reaction_time_s'), 's')} ({num(spike.get('detection_s'), 's')} + "
                              f"{num(spike.get('actuation_s'), 's')} + {num(spike.get('cold_start_s'), 's')})"))
    table = Table("by group type (same replicas, same profile)", HEADER,
                  [_row("consumer group", consumer), _row("share group", share)])
    lifts = gain is not None and gain >= LIFT_MIN
    cost = (f"{num(store.get('redelivered_rows'))} redelivered rows and {num(store.get('duplicated_pairs'))} "
            f"duplicated records of {num(store.get('rows'))} stored")
    value = (f"yes: +{pct(gain)} at 2P, at {cost}" if lifts else
             f"no: {pct(gain)} at 2P (at {cost})" if gain is not None else "not determined")
    evidence = (f"share group {num(share.get('throughput_at_p_per_s'))} -> {num(share.get('throughput_at_2p_per_s'))}"
                f" records/s at P -> 2P, consumer group {num(consumer.get('throughput_at_p_per_s'))} -> "
                f"{num(consumer.get('throughput_at_2p_per_s'))} ({pct(c_gain)})")
    sentence = (f"Past P, the consumer group changed throughput by {pct(c_gain)} and the share group by "
                f"{pct(gain)}, at {cost}; the vendor's \"no dips\" {rec.get('no_dips_claim') or 'was not judged'}.")
    return Extract(figures, sentence, Recommendation("share group past P", value, 11, evidence), [table])
