"""The open-model pacing loop under a FakeClock: on time, falling behind, deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.load.events import EventSource
from pytest_lagscale.load.pacing import PacingOptions, Sink, run_open_model
from pytest_lagscale.load.schedule import Schedule, Step


class RecordingSink:
    """Keeps (clock time, events) per send; optionally costs ``per_record_s`` of clock time."""

    def __init__(self, clock: FakeClock, per_record_s: float = 0.0):
        self.clock = clock
        self.per_record_s = per_record_s
        self.sends: list[tuple[float, np.ndarray]] = []
        self.polls = 0

    def send(self, events: np.ndarray) -> None:
        self.sends.append((self.clock.now(), events.copy()))
        self.clock.advance(self.per_record_s * len(events))

    def poll(self) -> None:
        self.polls += 1

    def events(self) -> np.ndarray:
        return np.concatenate([e for _, e in self.sends])


def _run(schedule: Schedule, per_record_s: float = 0.0, seed: int = 1, **kw):
    clock = FakeClock(1000.0)
    sink = RecordingSink(clock, per_record_s)
    result = run_open_model(schedule, EventSource(seed, entities=1000), sink, clock,
                            wall_ns=lambda: 1_700_000_000_000_000_000, **kw)
    return result, sink


def test_fake_sink_implements_the_sink_protocol() -> None:
    assert isinstance(RecordingSink(FakeClock()), Sink)


def test_a_fast_sink_gets_every_record_on_time_in_5ms_ticks() -> None:
    result, sink = _run(Schedule([Step(0.0, 1.0, 1000.0, "a"), Step(1.0, 2.0, 0.0, "gap"),
                                  Step(2.0, 3.0, 20_000.0, "b")]))
    assert [s.sent_records for s in result.steps] == [1000, 0, 20_000]
    assert [s.achieved_rate_per_s for s in result.steps] == pytest.approx([1000, 0, 20_000])
    assert result.kept_up and result.sent_records == 21_000
    assert result.max_send_delay_s <= 0.005 + 1e-9
    assert result.elapsed_s == pytest.approx(3.0, abs=0.006)  # waits out the schedule's end
    ticks = np.unique([t for t, _ in sink.sends])  # a tick may send several chunks
    assert np.diff(ticks).min() >= 0.005 - 1e-9


def test_send_times_follow_the_schedule_not_the_sink() -> None:
    """Record i goes out at the first tick at or after its scheduled time i / rate."""
    _, sink = _run(Schedule([Step(0.0, 0.1, 1000.0, "a")]))
    for t, events in sink.sends:
        sched = events["seq"].astype(float) / 1000.0
        assert ((t - 1000.0) >= sched - 1e-9).all() and ((t - 1000.0) - sched < 0.005).all()


def test_a_slow_sink_is_reported_as_not_keeping_up_and_the_load_is_not_lowered() -> None:
    """The sink handles 10k records/s; the step asks 20k/s for 2 s."""
    result, sink = _run(Schedule([Step(0.0, 2.0, 20_000.0, "x")]), per_record_s=1e-4)
    step = result.steps[0]
    assert step.sent_records == step.requested_records == 40_000  # nothing dropped
    assert step.duration_s == pytest.approx(4.0, rel=0.01)
    assert step.achieved_rate_per_s == pytest.approx(10_000, rel=0.01)
    assert step.max_send_delay_s == pytest.approx(2.0, rel=0.05)
    assert not step.kept_up and not result.kept_up
    assert max(len(e) for _, e in sink.sends) == 8192  # catches up in max-size chunks


def test_delay_tolerance_decides_kept_up() -> None:
    schedule = Schedule([Step(0.0, 1.0, 1000.0, "a")])
    result, _ = _run(schedule, options=PacingOptions(tick_s=0.05, delay_tolerance_s=0.01))
    assert result.steps[0].max_send_delay_s == pytest.approx(0.049, abs=0.0011)
    assert not result.kept_up


def test_chunks_never_span_two_steps_and_ts_is_stamped() -> None:
    schedule = Schedule([Step(0.0, 0.0123, 1000.0, "a"), Step(0.0123, 0.05, 5000.0, "b")])
    _, sink = _run(schedule)
    for _, events in sink.sends:
        steps = {schedule.step_of_record(int(i)) for i in events["seq"]}
        assert len(steps) == 1
        assert (events["ts"] == 1_700_000_000_000_000_000).all()


def test_two_runs_with_one_seed_send_the_same_records_at_the_same_times() -> None:
    schedule = Schedule([Step(0.0, 0.5, 2000.0, "a"), Step(0.5, 1.0, 6000.0, "b")])
    _, first = _run(schedule, seed=9)
    _, second = _run(schedule, seed=9)
    assert [t for t, _ in first.sends] == [t for t, _ in second.sends]
    assert np.array_equal(first.events(), second.events())
    _, other = _run(schedule, seed=10)
    assert not np.array_equal(first.events()["entity_id"], other.events()["entity_id"])


def test_should_stop_ends_the_run_early_as_interrupted() -> None:
    clock = FakeClock()
    sink = RecordingSink(clock)
    result = run_open_model(Schedule([Step(0.0, 10.0, 100.0, "a")]),
                            EventSource(1, entities=10), sink, clock,
                            should_stop=lambda: clock.now() >= 1.0)
    assert result.interrupted and not result.kept_up
    assert 95 <= result.sent_records <= 102 and result.elapsed_s < 1.01


def test_progress_is_reported_every_progress_every_s() -> None:
    calls: list[tuple[float, int]] = []
    _run(Schedule([Step(0.0, 3.0, 100.0, "a")]), options=PacingOptions(progress_every_s=1.0),
         progress=lambda t, sent: calls.append((t, sent)))
    assert [round(t, 3) for t, _ in calls] == [1.0, 2.0]  # none at the end: the run is over
    assert [sent for _, sent in calls] == pytest.approx([101, 201], abs=1)
