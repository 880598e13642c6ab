"""Record counts and send times of piecewise-constant schedules (pure)."""

from __future__ import annotations

import pytest

from pytest_lagscale.load.schedule import Schedule, Step


def _schedule() -> Schedule:
    return Schedule([Step(0.0, 2.0, 10.0, "a"), Step(2.0, 3.0, 0.0, "gap"),
                     Step(3.0, 4.0, 100.0, "b")])


def test_counts_per_step_and_total() -> None:
    s = _schedule()
    assert s.total_records == 120 and s.end_s == 4.0
    assert [s.records_in_step(j) for j in range(3)] == [range(0, 20), range(20, 20),
                                                        range(20, 120)]
    assert [s.step_of_record(i) for i in (0, 19, 20, 119)] == [0, 0, 2, 2]


def test_send_times_come_from_the_schedule_only() -> None:
    s = _schedule()
    assert [s.send_time(i) for i in (0, 1, 19, 20, 21, 119)] == pytest.approx(
        [0.0, 0.1, 1.9, 3.0, 3.01, 3.99])
    with pytest.raises(IndexError, match=r"^record: 120 outside 0\.\.119$"):
        s.send_time(120)


@pytest.mark.parametrize(
    ("t_s", "due"),
    [pytest.param(0.0, 1, id="record-0-is-due-at-the-start"),
     pytest.param(0.05, 1, id="inside-the-first-slot"),
     pytest.param(0.1, 2, id="exactly-at-a-send-time"),
     pytest.param(2.5, 20, id="zero-rate-gap-sends-nothing"),
     pytest.param(3.0, 21, id="next-step-starts-sending"),
     pytest.param(99.0, 120, id="capped-at-the-total")])
def test_due_count_is_records_with_send_time_at_or_before_t(t_s: float, due: int) -> None:
    assert _schedule().due_count(t_s) == due


def test_due_count_and_send_time_are_consistent_for_fractional_rates() -> None:
    s = Schedule([Step(0.0, 3.3, 333.3, "x"), Step(3.3, 7.0, 1234.5, "y")])
    for i in range(0, s.total_records, 97):
        t = s.send_time(i)
        assert s.due_count(t) >= i + 1 and s.due_count(t - 1e-7) <= i


@pytest.mark.parametrize(
    "steps",
    [pytest.param([], id="empty"),
     pytest.param([Step(0.0, 1.0, 1.0, "a"), Step(1.5, 2.0, 1.0, "b")], id="gap-between-steps"),
     pytest.param([Step(0.0, 1.0, -1.0, "a")], id="negative-rate")])
def test_invalid_schedules_are_rejected(steps: list[Step]) -> None:
    with pytest.raises(ValueError):
        Schedule(steps)
