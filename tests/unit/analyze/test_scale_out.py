"""Per-replica scale-out decomposition and the burst summary, on synthetic tables."""

from __future__ import annotations

import math

import pytest

from pytest_lagscale.analyze.scale_out import ReplicaStart, ScaleOut, scale_out

from . import synth

WAVE_1 = ("r1", "r2", "r3", "r4")
WAVE_2 = ("r5", "r6", "r7")


def _replica_rows(rid: str, started: float, engine_ready: float | None, probe: float,
                  assigned: float | None, first: float | None) -> list[tuple]:
    rows = [(started, "platform", "replica_started", {"replica_id": rid}),
            (probe, "platform", "replica_ready", {"replica_id": rid})]
    if engine_ready is not None:
        rows.append((engine_ready, rid, "engine_ready", {"startup_s": engine_ready - started
                                                         - 0.5}))
    if assigned is not None:
        rows += [(assigned - 0.5, rid, "assigned", {"partitions": []}),
                 (assigned, rid, "assigned", {"partitions": [int(rid[1:])]})]
    if first is not None:
        rows.append((first, rid, "first_record", {}))
    return rows


def _decision(t: float, desired: int, current: int) -> tuple:
    return (t, "controller", "decision", {"desired_replicas": desired,
                                          "current_replicas": current})


def _two_wave_log(last_processes: bool = True):
    """Spike at 10 s; 1 -> 5 at 12 s (r1..r4), 5 -> 8 at 27 s (r5..r7), 8 -> 1 at 60 s,
    1 -> 2 at 69 s (r8, after the burst). Wave 1 is ready by its engine_ready (before the
    probe); wave 2 only by the probe (no engine_ready)."""
    rows = [(0.0, "platform", "replica_started", {"replica_id": "r0"}),
            (2.0, "platform", "replica_ready", {"replica_id": "r0"}),
            (10.0, "producer", "spike_start", {}),
            _decision(12.0, 5, 1), _decision(20.0, 5, 5), _decision(27.0, 8, 5),
            _decision(60.0, 1, 8), _decision(69.0, 2, 1)]
    for i, rid in enumerate(WAVE_1):
        start = 13.0 + 0.1 * i
        rows += _replica_rows(rid, start, 20.0 + i, 21.0 + i, 24.0 + i, 25.0 + i)
    for i, rid in enumerate(WAVE_2):
        start = 28.0 + 0.5 * i
        first = 42.0 + i if (last_processes or rid != "r7") else None
        rows += _replica_rows(rid, start, None, 38.0 + i, 41.0 + i, first)
    rows += _replica_rows("r8", 70.0, None, 80.0, 81.0, 82.0)
    return synth.events(*sorted(rows, key=lambda row: row[0]))


def _timeline():
    table = synth.timeline(90)
    load = [1.0] * 90
    load[11], load[30], load[50] = 15.0, 9.0, 20.0  # 11 s and 50 s are outside the window
    busy = [0.5] * 90
    busy[20], busy[44] = math.nan, 1.0
    table["load_average_1m"], table["cpu_busy_fraction"] = load, busy
    return table


def test_two_wave_burst_is_decomposed_per_replica() -> None:
    result = scale_out(_two_wave_log(), _timeline())
    assert [r.replica_id for r in result.replicas] == [*WAVE_1, *WAVE_2, "r8"]
    assert result.replicas[1] == ReplicaStart(
        replica_id="r2", started_s=pytest.approx(3.1), actuation_s=pytest.approx(1.1),
        cold_start_s=pytest.approx(7.9), engine_startup_s=pytest.approx(7.4), join_s=4.0,
        first_fetch_s=1.0, first_record_s=16.0, in_burst=True)
    r6 = result.replicas[5]  # wave 2: its decision is the one at 27 s; ready by the probe
    assert (r6.started_s, r6.actuation_s, r6.cold_start_s, r6.engine_startup_s, r6.join_s,
            r6.first_fetch_s) == (18.5, 1.5, 10.5, None, 3.0, 1.0)
    assert [r.actuation_s for r in result.replicas] == pytest.approx(
        [1.0, 1.1, 1.2, 1.3, 1.0, 1.5, 2.0, 1.0])
    assert [r.in_burst for r in result.replicas] == [True] * 7 + [False]


def test_burst_summary_covers_both_waves_and_the_load_in_the_window() -> None:
    result = scale_out(_two_wave_log(), _timeline())
    assert result.reason is None and result.spike_start_s == 10.0
    assert result.burst_replicas == 7
    assert (result.burst_start_s, result.burst_end_s) == (2.0, 34.0)  # 12 s -> r7 at 44 s
    # cold starts 7, 7.9, 8.8, 9.7 (engine_ready) and 10, 10.5, 11 (probe); r8 not counted
    assert result.cold_start_median_s == pytest.approx(9.7)
    assert result.cold_start_max_s == pytest.approx(11.0)
    assert result.load_average_max == 9.0  # buckets 12..44 s
    assert result.load_average_mean == pytest.approx((32 * 1.0 + 9.0) / 33)
    assert result.cpu_busy_mean == pytest.approx((31 * 0.5 + 1.0) / 32)  # NaN skipped


def test_a_replica_that_never_processed_has_none_fields() -> None:
    result = scale_out(_two_wave_log(last_processes=False), _timeline())
    r7 = next(r for r in result.replicas if r.replica_id == "r7")
    assert (r7.first_fetch_s, r7.first_record_s) == (None, None)
    assert r7.join_s == 3.0 and r7.cold_start_s == 11.0
    assert result.burst_end_s == 33.0  # r6's first record at 43 s; r7's assignment at 43.0 s
    assert result.reason is None and result.burst_replicas == 7


def _unsampled_load():
    table = synth.timeline(30)
    table["load_average_1m"] = table["cpu_busy_fraction"] = math.nan
    return table


@pytest.mark.parametrize("timeline", [
    pytest.param(lambda: synth.timeline(30), id="no-load-columns"),
    pytest.param(_unsampled_load, id="load-never-sampled"),
])
def test_a_replica_never_ready_and_no_load_figures(timeline) -> None:
    log = synth.events((10.0, "producer", "spike_start", {}), _decision(12.0, 2, 1),
                       (14.0, "platform", "replica_started", {"replica_id": "r1"}))
    result = scale_out(log, timeline())
    assert result.replicas == (ReplicaStart("r1", 4.0, 2.0, None, None, None, None, None,
                                            True),)
    assert (result.burst_replicas, result.burst_start_s, result.burst_end_s) == (1, 2.0, 4.0)
    assert (result.cold_start_median_s, result.cold_start_max_s) == (None, None)
    assert (result.load_average_max, result.load_average_mean, result.cpu_busy_mean) == (
        None, None, None)


@pytest.mark.parametrize("rows, reason", [
    pytest.param([_decision(12.0, 2, 1)],
                 "NoSpikeStart: no 'spike_start' event; the producer must log the spike",
                 id="no-spike"),
    pytest.param([(10.0, "producer", "spike_start", {}), _decision(12.0, 1, 1)],
                 "NoScaleOutDecision: no 'decision' with desired_replicas > current_replicas "
                 "after the spike start at 10.0 s", id="no-scale-out-decision"),
    pytest.param([(10.0, "producer", "spike_start", {}), _decision(12.0, 2, 1)],
                 "NoNewReplica: no replica started after the scale-out decision at 12.0 s",
                 id="no-new-replica"),
])
def test_no_burst_gives_a_reason_and_no_crash(rows: list, reason: str) -> None:
    result = scale_out(synth.events(*rows))
    assert result.reason == reason
    assert result.burst_replicas == 0 and result.cold_start_median_s is None


def test_to_dict_is_json_shaped() -> None:
    doc = scale_out(_two_wave_log(), _timeline()).to_dict()
    assert doc["burst_replicas"] == 7 and len(doc["replicas"]) == 8
    assert doc["replicas"][0]["replica_id"] == "r1" and isinstance(doc["replicas"][0], dict)
    assert ScaleOut(None).to_dict()["replicas"] == []
