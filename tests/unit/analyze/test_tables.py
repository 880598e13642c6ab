from __future__ import annotations

import pandas as pd
import pytest

from pytest_lagscale.analyze import check_timeline, events_from_records, spike_window
from pytest_lagscale.contract.errors import ConfigError

from . import synth


def _record(monotonic_s: float, event: str, source: str, **fields: object) -> dict:
    return {"event": event, "source": source, "wall_time": "2026-08-01T00:00:00+00:00",
            "wall_ns": 1, "monotonic_s": monotonic_s, **fields}


def test_events_from_records_sorts_merges_and_splits_fields() -> None:
    records = [
        _record(105.0, "first_record", "r1"),
        _record(100.0, "spike_start", "producer"),
        _record(103.0, "replica_started", "platform", replica_id="r1", pid=42),
    ]
    table = events_from_records(records)
    assert list(table.columns) == ["t_s", "monotonic_s", "source", "event", "replica_id",
                                   "fields"]
    assert table["event"].tolist() == ["spike_start", "replica_started", "first_record"]
    assert table["t_s"].tolist() == [0.0, 3.0, 5.0]
    assert table["replica_id"].tolist() == [None, "r1", "r1"]
    assert table["fields"].tolist() == [{}, {"pid": 42}, {}]


def test_events_from_records_origin() -> None:
    table = events_from_records([_record(100.0, "spike_start", "producer")], origin_s=90.0)
    assert table["t_s"].tolist() == [10.0]


def test_events_from_records_rejects_record_without_monotonic_s() -> None:
    with pytest.raises(ConfigError) as info:
        events_from_records([{"event": "x"}])
    assert str(info.value) == ("event record 0: {'event': 'x'} lacks 'event' or 'monotonic_s'; "
                               "write events with EventLog.emit")


def test_events_from_records_empty() -> None:
    table = events_from_records([])
    assert len(table) == 0 and "t_s" in table.columns


def test_check_timeline_names_missing_columns() -> None:
    with pytest.raises(ConfigError) as info:
        check_timeline(pd.DataFrame({"t_s": [0.0], "total_lag": [0]}))
    assert str(info.value).startswith(
        "timeline: columns ['desired_replicas', 'current_replicas', 'ready_replicas', "
        "'consume_rate_per_s', 'produce_rate_per_s'] are missing")


def test_check_timeline_sorts_and_casts() -> None:
    table = synth.timeline(3).iloc[::-1]
    out = check_timeline(table)
    assert out["t_s"].tolist() == [0.0, 1.0, 2.0]
    assert out["total_lag"].dtype == "int64"


@pytest.mark.parametrize("rows, expected", [
    pytest.param([(5.0, "producer", "spike_start", {}), (9.0, "producer", "spike_end", {})],
                 (5.0, 9.0), id="start-and-end"),
    pytest.param([(1.0, "producer", "spike_end", {}), (5.0, "producer", "spike_start", {})],
                 (5.0, None), id="end-before-start-ignored"),
    pytest.param([], (None, None), id="no-spike"),
])
def test_spike_window(rows: list, expected: tuple) -> None:
    assert spike_window(synth.events(*rows)) == expected


def _phase(t_s: float, label: str) -> tuple:
    return (t_s, "producer", "phase", {"label": label})


@pytest.mark.parametrize("rows, expected", [
    pytest.param([_phase(0.0, "low-0"), _phase(30.0, "high-1"), _phase(40.0, "low-1"),
                  _phase(70.0, "high-2"), _phase(80.0, "low-2")], (30.0, 80.0),
                 id="phase-after-the-last-burst"),
    pytest.param([_phase(0.0, "low-0"), _phase(30.0, "high-1"),
                  (40.0, "producer", "load_end", {})], (30.0, 40.0), id="ends-with-load-end"),
    pytest.param([_phase(0.0, "low-0"), _phase(30.0, "high-1")], (30.0, None),
                 id="still-bursting"),
    pytest.param([_phase(0.0, "baseline"), (60.0, "producer", "spike_start", {})],
                 (None, None), id="no-bursts"),
])
def test_burst_window(rows: list, expected: tuple) -> None:
    from pytest_lagscale.analyze.tables import burst_window

    assert burst_window(synth.events(*rows)) == expected
