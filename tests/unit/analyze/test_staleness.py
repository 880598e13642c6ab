"""What a run could not see (analyze/staleness.py): unread lag from the timeline's sample ages,
the faults from the event table, and the reasons a run is not a good one."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pytest_lagscale.analyze.staleness import faults, lag_freshness, world_problems
from pytest_lagscale.analyze.tables import events_from_records


def _timeline(ages: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"t_s": [float(i) for i in range(len(ages))],
                         "total_lag": [100] * len(ages), "total_lag_age_s": ages})


def test_lag_older_than_the_limit_or_missing_is_unread_and_its_stretches_are_kept() -> None:
    nan = math.nan
    ages = [0.5, 0.5, 3.0, 5.0, nan, 0.4, 0.4, 4.5, 0.5, 0.5]
    fresh = lag_freshness(_timeline(ages), max_age_s=4.0)
    assert fresh.unread_s == 3.0 and fresh.longest_s == 2.0
    assert fresh.stretches == ((3.0, 5.0), (7.0, 8.0))
    assert fresh.unread_fraction == pytest.approx(0.3)


def test_a_timeline_without_ages_is_unknown_not_fresh() -> None:
    table = _timeline([0.0]).drop(columns=["total_lag_age_s"])
    fresh = lag_freshness(table, 4.0)
    assert fresh.unread_s is None and fresh.unread_fraction is None
    with pytest.raises(ValueError, match="max_age_s"):
        lag_freshness(table, 0)


def _events(*records: dict) -> pd.DataFrame:
    return events_from_records([{"monotonic_s": r.pop("t"), **r} for r in records],
                               origin_s=0.0)


def test_faults_are_listed_with_times_and_the_first_lag_read_after_an_injected_one() -> None:
    events = _events(
        {"t": 88.0, "event": "keda_poll", "source": "controller", "signal": {"source": "broker"}},
        {"t": 92.0, "event": "lag_read_failed", "source": "controller", "error": "x"},
        {"t": 110.5, "event": "action", "source": "runner", "action": "pause_broker",
         "label": "pause_broker 20 s", "started_s": 90.0, "fault": True, "fault_s": 20.0},
        {"t": 111.2, "event": "keda_poll", "source": "controller",
         "signal": {"source": "broker"}},
        {"t": 140.0, "event": "part_restarted", "source": "runner", "part": "prometheus",
         "exit": "killed by SIGKILL", "gap_s": 1.5},
        {"t": 150.0, "event": "part_died", "source": "runner", "part": "kafka",
         "exit": "killed by SIGKILL"},
        {"t": 155.0, "event": "replica_liveness_failed", "source": "platform",
         "replica_id": "replica-0008", "failures": 8})
    fresh = lag_freshness(_timeline([0.5] * 95 + [9.0] * 10 + [0.5] * 5), 4.0)
    found = [f.to_dict() for f in faults(events, fresh)]
    assert [(f["name"], f["kind"], f["start_s"], f["duration_s"]) for f in found] == [
        ("pause_broker", "injected", 90.0, 20.0), ("lag_unread", "observed", 95.0, 10.0),
        ("part_restarted", "observed", 138.5, 1.5), ("part_died", "observed", 150.0, None),
        ("replica_liveness_failed", "observed", 155.0, None)]
    assert found[4]["replica_id"] == "replica-0008"
    assert found[0]["lag_read_again_s"] == pytest.approx(1.2)
    assert found[2]["part"] == "prometheus" and found[3]["exit"] == "killed by SIGKILL"


def test_a_failed_fault_action_is_still_listed() -> None:
    events = _events({"t": 5.0, "event": "action_failed", "source": "runner",
                      "action": "pause_broker", "label": "pause_broker 20 s",
                      "started_s": 5.0, "fault": True, "error": "ConfigError: not embedded"})
    (fault,) = faults(events)
    assert fault.kind == "injected" and fault.duration_s is None
    assert fault.detail["error"] == "ConfigError: not embedded"


def test_a_good_run_has_no_problems_and_each_bad_one_says_why_with_numbers() -> None:
    fresh = lag_freshness(_timeline([0.5] * 100), 4.0)
    assert world_problems(settled=True, settle_timeout_s=300, freshness=fresh,
                          incomplete=None) == []
    stale = lag_freshness(_timeline([0.5] * 85 + [60.0] * 15), 4.0)
    problems = world_problems(settled=False, settle_timeout_s=300, freshness=stale,
                              incomplete="kafka killed by SIGKILL",
                              unsettled_state=" (at the end: lag 53,000 records, 2 replicas)")
    assert problems == [
        "incomplete: kafka killed by SIGKILL",
        "not settled: lag 0 at minReplicaCount not reached within 300 s (at the end: lag "
        "53,000 records, 2 replicas)",
        "lag unread 15 s of 100 s (15.0 % > 10 %; longest gap 15 s, lag older than 4 s counts "
        "as unread)"]
    ten = lag_freshness(_timeline([0.5] * 90 + [60.0] * 10), 4.0)  # 10 % is still allowed
    assert world_problems(settled=True, settle_timeout_s=300, freshness=ten,
                          incomplete=None) == []
