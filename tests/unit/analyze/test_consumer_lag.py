"""The two lag signals of a run side by side (analyze.consumer_lag)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pytest_lagscale.analyze.consumer_lag import compare_lag_views

NAN = math.nan


def test_gap_peaks_and_share_over_the_reported_seconds() -> None:
    timeline = pd.DataFrame({"t_s": [0.0, 1.0, 2.0, 3.0, 4.0],
                             "total_lag": [50, 1000, 4000, 2000, 80],
                             "consumer_lag": [NAN, 600.0, 3000.0, 2100.0, 0.0]})
    assert compare_lag_views(timeline) == {
        "reported_s": 4, "unreported_s": 1, "peak_total_lag": 4000, "peak_total_lag_t_s": 2.0,
        "peak_consumer_lag": 3000.0, "peak_consumer_lag_t_s": 2.0,
        "mean_gap_records": round((400 + 1000 - 100 + 80) / 4, 1), "max_gap_records": 1000.0,
        "consumer_share_median": 0.75, "consumer_above_s": 1}


@pytest.mark.parametrize("timeline", [
    pytest.param(None, id="no-timeline"),
    pytest.param(pd.DataFrame({"t_s": [0.0], "total_lag": [5]}), id="no-column"),
    pytest.param(pd.DataFrame({"t_s": [0.0], "total_lag": [5], "consumer_lag": [NAN]}), id="never-reported"),
])
def test_nothing_to_compare(timeline) -> None:
    assert compare_lag_views(timeline) is None
