"""The persistent-lag scaler's window: the README's example, sustain, eviction, stabilization."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_lagscale.control.keda.base import MetricTarget, external_metric_proposal
from pytest_lagscale.control.observation import Observation
from pytest_lagscale.scalers.persistent_lag import PersistentLagSettings, PersistentLagWindow


def settings(**overrides: object) -> PersistentLagSettings:
    base = dict(bootstrap_servers="kafka:9092", consumer_group="enrich", topic="events", lag_threshold=1000,
                sustain_s=20.0, sampling_interval_s=10.0, window_size=30)
    return PersistentLagSettings(**{**base, **overrides})  # type: ignore[arg-type]


def feed(window: PersistentLagWindow, *points: tuple[float, int]) -> list:
    """Add ``(at_s, total_lag)`` samples (one partition) and return each assessment."""
    return [window.add(at_s, {0: lag}) for at_s, lag in points]


def hpa_proposal(value: float, threshold: int, replicas: int) -> int | None:
    """What an HPA with KEDA's AverageValue target does with the value (tolerance 0.1)."""
    return external_metric_proposal(MetricTarget("AverageValue", float(threshold)), value,
                                    Observation(current_replicas=replicas), 0.1)


@dataclass(frozen=True)
class Row:
    clock: str
    throughput_per_s: int
    lag: int
    plain_replicas: int
    state: str
    value: float


# The README's "Example Scenario" (one replica, samples a minute apart). lagThreshold 5000: the
# plain (static) scaler scales up at 15k, 12k and 8k and not at 2k, as the README's column says;
# sustainSeconds 180: the persistent scaler's lag never stays above 5000 for 3 minutes, so it
# asks for the one replica it has at every row ("wait", "lag decreasing", "no action").
README_ROWS = (
    Row("12:00", 10_000, 15_000, plain_replicas=3, state="pending", value=5000.0),
    Row("12:01", 10_000, 12_000, plain_replicas=3, state="pending", value=5000.0),
    Row("12:02", 10_000, 8_000, plain_replicas=2, state="pending", value=5000.0),
    Row("12:03", 5_000, 2_000, plain_replicas=1, state="below", value=2000.0),
)


def test_readme_example_plain_scaler_scales_up_and_persistent_takes_no_action() -> None:
    window = PersistentLagWindow(settings(lag_threshold=5000, sustain_s=180.0, sampling_interval_s=60.0,
                                          window_size=5))
    for minute, row in enumerate(README_ROWS):
        got = window.add(60.0 * minute, {p: row.lag // 8 + (row.lag % 8 if p == 0 else 0) for p in range(8)})
        assert got.total_lag == row.lag, row.clock
        assert (got.state, got.metric_value) == (row.state, row.value), row.clock
        assert hpa_proposal(row.lag, 5000, replicas=1) == row.plain_replicas, row.clock
        assert hpa_proposal(got.metric_value, 5000, replicas=1) == 1, f"{row.clock}: the persistent scaler acted"


def test_readme_example_with_sustain_120_scales_up_at_1202() -> None:
    """The same table with the README quick start's sustainSeconds 120: 15k, 12k, 8k stayed above
    5000 for 120 s at 12:02, so the scaler reports the persistent 8000 (2 replicas)."""
    window = PersistentLagWindow(settings(lag_threshold=5000, sustain_s=120.0, sampling_interval_s=60.0,
                                          window_size=5))
    got = feed(window, (0, 15_000), (60, 12_000), (120, 8_000), (180, 2_000))
    assert [(a.state, a.metric_value) for a in got] == [
        ("pending", 5000.0), ("pending", 5000.0), ("sustained", 8000.0), ("below", 2000.0)]
    assert hpa_proposal(got[2].metric_value, 5000, replicas=1) == 2


def test_empty_window_reports_zero_and_inactive() -> None:
    a = PersistentLagWindow(settings()).assessment
    assert (a.state, a.metric_value, a.active, a.reason, a.samples) == ("empty", 0.0, False, "NoSamples", 0)


def test_sustained_after_exactly_sustain_seconds_reports_the_lowest_lag_of_the_span() -> None:
    window = PersistentLagWindow(settings(sustain_s=20.0))
    got = feed(window, (0, 6000), (10, 9000), (20, 7000), (30, 12000))
    assert [a.state for a in got] == ["pending", "pending", "sustained", "sustained"]
    assert [a.above_for_s for a in got] == [0.0, 10.0, 20.0, 30.0]
    assert got[2].metric_value == 6000.0  # span [0, 20]: min(6000, 9000, 7000)
    assert got[3].metric_value == 7000.0  # span [10, 30]: 6000 left the span
    assert got[3].persistent_lag == 7000 and got[3].reason == "Sustained"


def test_one_sample_at_or_below_the_threshold_restarts_the_wait() -> None:
    window = PersistentLagWindow(settings(sustain_s=20.0))
    got = feed(window, (0, 6000), (10, 6000), (20, 1000), (30, 6000), (40, 6000), (50, 6000))
    assert [a.state for a in got] == ["pending", "pending", "below", "pending", "pending", "sustained"]
    assert got[2].metric_value == 1000.0 and got[2].reason == "BelowThreshold"
    assert (got[3].metric_value, got[3].above_for_s) == (1000.0, 0.0)


def test_pending_holds_the_value_at_the_threshold() -> None:
    got = feed(PersistentLagWindow(settings(sustain_s=20.0)), (0, 50_000))
    assert (got[0].state, got[0].metric_value, got[0].reason) == ("pending", 1000.0, "NotSustained")


def test_sustain_zero_acts_on_the_first_sample_like_a_plain_lag_scaler() -> None:
    got = feed(PersistentLagWindow(settings(sustain_s=0.0)), (0, 4500))
    assert (got[0].state, got[0].metric_value) == ("sustained", 4500.0)


def test_window_evicts_the_oldest_sample() -> None:
    window = PersistentLagWindow(settings(window_size=3, sustain_s=20.0))
    feed(window, (0, 9000), (10, 9000), (20, 9000), (30, 7000))
    assert [s.at_s for s in window.samples] == [10, 20, 30]
    assert window.assessment.samples == 3
    assert (window.assessment.state, window.assessment.metric_value) == ("sustained", 7000.0)


def test_a_full_window_still_spans_sustain_seconds_so_eviction_never_ends_a_run() -> None:
    """windowSize 3 at 10 s spans exactly sustainSeconds 20 (the metadata refuses less): a long
    run stays sustained while its first samples leave the window."""
    window = PersistentLagWindow(settings(window_size=3, sustain_s=20.0))
    got = feed(window, *((10.0 * i, 5000 + i) for i in range(10)))
    assert [a.state for a in got] == ["pending", "pending"] + ["sustained"] * 8
    assert [s.at_s for s in window.samples] == [70.0, 80.0, 90.0]
    assert got[-1].metric_value == 5007.0  # min of the last 20 s: 5007, 5008, 5009


def test_per_partition_lag_is_kept_and_its_persistent_minimum_reported() -> None:
    window = PersistentLagWindow(settings(sustain_s=10.0))
    window.add(0, {0: 800, 1: 700})
    a = window.add(10, {0: 400, 1: 900})
    assert a.total_lag == 1300 and dict(a.partition_lag) == {0: 400, 1: 900}
    assert dict(a.partition_persistent_lag) == {0: 400, 1: 700}
    assert a.metric_value == 1300.0  # the total's minimum (1500, 1300), not the partitions' sum


def test_negative_partition_lag_counts_zero() -> None:
    assert PersistentLagWindow(settings()).add(0, {0: -5, 1: 10}).total_lag == 10


def test_activation_needs_the_value_above_activation_lag_threshold() -> None:
    window = PersistentLagWindow(settings(activation_lag_threshold=100))
    assert [a.active for a in feed(window, (0, 50), (10, 100), (20, 150))] == [False, False, True]


def test_scale_up_stabilization_holds_the_next_rise_and_lets_drops_through() -> None:
    window = PersistentLagWindow(settings(sustain_s=0.0, scale_up_stabilization_s=60.0))
    got = feed(window, (0, 3000), (10, 8000), (20, 2000), (30, 9000), (60, 8000), (70, 12000), (120, 12000))
    assert [(a.metric_value, a.reason) for a in got] == [
        (3000.0, "Sustained"),           # first rise (level 0 -> 3): cool-down until 60
        (3000.0, "ScaleUpStabilized"),   # 8000 held at 3000
        (2000.0, "Sustained"),           # a drop passes at once
        (3000.0, "ScaleUpStabilized"),   # 9000 held at the rise's 3000
        (8000.0, "Sustained"),           # cool-down over at 60: the next rise, cool-down until 120
        (8000.0, "ScaleUpStabilized"),
        (12000.0, "Sustained"),
    ]


def test_scale_up_stabilization_off_reports_every_rise() -> None:
    got = feed(PersistentLagWindow(settings(sustain_s=0.0)), (0, 3000), (10, 8000))
    assert [a.metric_value for a in got] == [3000.0, 8000.0]


@pytest.mark.parametrize(("last_s", "now_s", "due"), [
    pytest.param(None, 0.0, True, id="first-sample"),
    pytest.param(0.0, 9.99, False, id="before-interval"),
    pytest.param(0.0, 10.0, True, id="at-interval"),
])
def test_due_every_sampling_interval(last_s: float | None, now_s: float, due: bool) -> None:
    window = PersistentLagWindow(settings(sampling_interval_s=10.0))
    if last_s is not None:
        window.add(last_s, {0: 1})
    assert window.due(now_s) is due


def test_time_must_not_go_backwards() -> None:
    window = PersistentLagWindow(settings())
    window.add(10.0, {0: 1})
    with pytest.raises(ValueError, match=r"now_s: 5\.0 is before the newest sample \(10\.0\); pass monotonic times"):
        window.add(5.0, {0: 1})
