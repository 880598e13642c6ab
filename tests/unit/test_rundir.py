"""The run directory (contract.rundir): its layout, unique names and the one event-log merge."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.contract.rundir import RunDir


def _log(path: Path, *records: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_event_logs_include_every_replica_log_named_events_jsonl(tmp_path: Path) -> None:
    """The bug of observe.recorder.find_event_logs: replicas' logs are named ``events.jsonl``
    like the merged table it excluded, so the replicas' events were dropped."""
    run = RunDir(tmp_path)
    _log(run.source_events("controller"), {"event": "hpa_sync", "monotonic_s": 2.0})
    _log(run.replica_events("replica-1"), {"event": "assigned", "monotonic_s": 1.0})
    _log(run.replica_events("replica-2"), {"event": "first_record", "monotonic_s": 3.0})
    _log(run.events_jsonl, {"event": "stale merged", "monotonic_s": 0.0})

    assert run.event_logs() == [run.source_events("controller"), run.replica_events("replica-1"),
                                run.replica_events("replica-2")]
    merged = run.merge_events()
    assert [r["event"] for r in merged] == ["assigned", "hpa_sync", "first_record"]
    assert [json.loads(line)["event"] for line in run.events_jsonl.read_text().splitlines()] \
        == ["assigned", "hpa_sync", "first_record"]


def test_create_claims_a_fresh_directory_when_the_name_is_taken(tmp_path: Path) -> None:
    when = datetime(2026, 11, 22, 17, 0, 0, tzinfo=timezone.utc)
    first = RunDir.create(tmp_path / "runs", "spike-ci", now=when)
    second = RunDir.create(tmp_path / "runs", "spike-ci", now=when)
    assert first.name == "20261122T170000Z-spike-ci"
    assert second.name == "20261122T170000Z-spike-ci-2"
    assert first.root.is_absolute() and first.root.is_dir() and second.root.is_dir()


def test_artifacts_are_inside_the_run_directory(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert set(run.artifacts()) == {"benchmark_json", "timeline_png", "summary_md",
                                    "timeline_parquet", "timeline_csv", "events_jsonl",
                                    "manifest_json", "store"}
    assert all(path.parent == tmp_path for path in run.artifacts().values())


def test_unknown_event_source_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        RunDir(tmp_path).source_events("autoscaler")
    assert str(info.value) == ("event source 'autoscaler': not one of runner, producer, "
                               "controller, platform, group; add it to SOURCE_EVENT_LOGS")
