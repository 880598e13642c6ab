from __future__ import annotations

import pandas as pd
import pytest

from pytest_lagscale.analyze.sweep import (
    SweepPoint,
    dead_zone,
    dead_zone_check,
    measured_rate_per_replica,
    recommend,
    rule_of_thumb,
)

# A ci-like sweep: 50 over-scales, 500 is experiment 2's run, 5000 under-reacts.
POINTS = [SweepPoint(5000, 95.0, 8, True, 1.2), SweepPoint(50, 20.0, 8, True, 3.0),
          SweepPoint(500, 42.0, 8, True, 1.9)]


def test_the_largest_threshold_meeting_the_slo_is_recommended() -> None:
    rec = recommend(POINTS, drain_slo_s=60.0, rate_per_replica_per_s=300.0, partitions=8,
                    max_replicas=8)
    assert rec.lag_threshold == 500
    assert rec.drain_slo_s == 60.0
    assert "500: drained in 42 s" in rec.evidence and "5000: drained in 95 s" in rec.evidence


def test_a_looser_slo_moves_the_recommendation_up_and_none_meets_a_tight_one() -> None:
    assert recommend(POINTS, 100.0, 300.0, 8, 8).lag_threshold == 5000
    tight = recommend(POINTS, 10.0, 300.0, 8, 8)
    assert tight.lag_threshold is None and "no swept value drained within 10 s" in tight.evidence


def test_a_run_that_never_drained_does_not_meet_the_slo() -> None:
    points = [SweepPoint(50, 20.0, 8), SweepPoint(500, None, 8)]
    assert recommend(points, 60.0, 300.0, 8, 8).lag_threshold == 50


def test_rule_of_thumb_is_rate_times_slo_times_three_quarters() -> None:
    assert rule_of_thumb(400.0, 60.0) == 18_000
    rec = recommend(POINTS, 60.0, 10.0, 8, 8)  # 10/s x 60 s x 0.75 = 450
    assert rec.rule_of_thumb == {"rate_per_replica_per_s": 10.0, "factor": 0.75,
                                 "lag_threshold": 450, "largest_swept_within": 50,
                                 "agrees": False}
    assert recommend(POINTS, 60.0, 12.0, 8, 8).rule_of_thumb["agrees"] is True  # 540 -> 500


@pytest.mark.parametrize("rate, slo", [(0.0, 60.0), (300.0, 0.0), (-1.0, 60.0)])
def test_rule_of_thumb_rejects_non_positive_inputs(rate: float, slo: float) -> None:
    with pytest.raises(ValueError, match="expected"):
        rule_of_thumb(rate, slo)


def test_dead_zone_is_22_and_23_of_24_and_empty_at_8() -> None:
    assert dead_zone(24) == (22, 23)
    assert dead_zone(8) == ()
    assert dead_zone(8, tolerance=0.2) == (7,)


def test_dead_zone_check_says_why_it_cannot_happen_at_p_8() -> None:
    zone = dead_zone_check(POINTS, partitions=8, max_replicas=8)
    assert zone["possible"] is False and zone["hit_by"] == []
    assert zone["ratio_p_over_p_minus_1"] == pytest.approx(8 / 7)
    assert "P/(P-1) = 1.143 > 1 + 0.1" in zone["why"]


def test_dead_zone_check_finds_a_run_stuck_at_22_of_24() -> None:
    points = [SweepPoint(1000, 50.0, 24, True), SweepPoint(10_000, 80.0, 22, True),
              SweepPoint(100_000, None, 12, False)]
    zone = dead_zone_check(points, partitions=24, max_replicas=48)
    assert zone["hit_by"] == [10_000] and zone["stuck_counts"] == [22, 23]
    assert zone["why"].startswith("hit: lagThreshold 10000")


def test_recommend_needs_points() -> None:
    with pytest.raises(ValueError, match="points: got none"):
        recommend([], 60.0, 300.0, 8, 8)


def test_measured_rate_is_the_median_per_ready_replica_while_saturated() -> None:
    timeline = pd.DataFrame({"t_s": [0.0, 1.0, 2.0, 3.0, 4.0],
                             "total_lag": [100, 5000, 6000, 7000, 50],
                             "ready_replicas": [1, 2, 4, 4, 4],
                             "consume_rate_per_s": [200.0, 600.0, 1200.0, 1000.0, 50.0]})
    assert measured_rate_per_replica(timeline, min_lag_records=1000) == pytest.approx(300.0)
    assert measured_rate_per_replica(timeline, min_lag_records=10_000) is None
