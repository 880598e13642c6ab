"""The consumers' own view of their lag beside the broker's committed-offset lag, on one run.

Reads two timeline columns (one row per 1 s bucket): ``total_lag`` (log-end minus committed
offset, summed over partitions: what KEDA's kafka trigger reads) and ``consumer_lag`` (the sum of
the replicas' ``consumer_records_lag``: high watermark minus each consumer's position over the
partitions it owns; NaN where no replica reported). The gap ``total_lag - consumer_lag`` is what
the consumers have fetched but not committed (their micro-batch in progress and the records
buffered for the next one), plus partitions nobody reported (unowned, or nothing consumed from
them yet), minus the staleness of a high watermark cached from the last fetch response
(docs/policies.md, "Consumer-reported lag").
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def compare_lag_views(timeline: pd.DataFrame | None) -> dict[str, Any] | None:
    """The two lag signals of one run, side by side.

    Args:
        timeline: the run's timeline (``t_s``, ``total_lag`` and ``consumer_lag`` columns).

    Returns:
        None without a ``consumer_lag`` column or any reported second; else (records unless
        named): ``reported_s`` / ``unreported_s`` (buckets with / without a consumer value),
        ``peak_total_lag`` and its ``peak_total_lag_t_s``, ``peak_consumer_lag`` and its
        ``peak_consumer_lag_t_s``, ``mean_gap_records`` and ``max_gap_records`` (total minus
        consumer over the reported buckets), ``consumer_share_median`` (consumer / total over
        reported buckets with total >= 100 records; None without any) and ``consumer_above_s``
        (buckets where the consumers reported more than the broker's committed-offset lag).
    """
    if timeline is None or "consumer_lag" not in timeline or not timeline["consumer_lag"].notna().any():
        return None
    both = timeline[timeline["consumer_lag"].notna()]
    gap = both["total_lag"].astype("float64") - both["consumer_lag"]
    busy = both[both["total_lag"] >= 100]
    share = (busy["consumer_lag"] / busy["total_lag"]).median() if len(busy) else None
    total_peak = timeline["total_lag"].idxmax()
    own_peak = timeline["consumer_lag"].idxmax()
    return {
        "reported_s": int(len(both)), "unreported_s": int(len(timeline) - len(both)),
        "peak_total_lag": int(timeline.loc[total_peak, "total_lag"]),
        "peak_total_lag_t_s": float(timeline.loc[total_peak, "t_s"]),
        "peak_consumer_lag": float(timeline.loc[own_peak, "consumer_lag"]),
        "peak_consumer_lag_t_s": float(timeline.loc[own_peak, "t_s"]),
        "mean_gap_records": round(float(gap.mean()), 1), "max_gap_records": float(gap.max()),
        "consumer_share_median": None if share is None else round(float(share), 3),
        "consumer_above_s": int((gap < 0).sum()),
    }
