"""Scheduled actions through the whole runner: a profile's actions run on time against the live
run, are written to the event log and the benchmark JSON, and the run still reconciles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.experiment import RunSettings, run_experiment

pytestmark = pytest.mark.integration

PROFILE = Path(__file__).resolve().parents[1] / "data" / "actions-short.yaml"


def test_profile_actions_run_on_time_and_the_run_reconciles(kafka_cluster: Any,
                                                           tmp_path: Path) -> None:
    result = run_experiment(RunSettings(profile=PROFILE, engine="arrow", out_dir=tmp_path,
                                        settle_timeout_s=120), cluster=kafka_cluster)
    done = result.document()["run"]["actions"]
    assert [(a["action"], a["scheduled_s"]) for a in done] == [("increase_partitions", 10.0),
                                                              ("kill_replica", 20.0)]
    assert (done[0]["partitions_before"], done[0]["partitions_after"]) == (4, 6)
    assert (done[1]["replica_id"], done[1]["signal"]) == ("replica-0001", "SIGKILL")
    assert all(a["scheduled_s"] <= a["started_s"] < a["scheduled_s"] + 1 for a in done), done
    actions = result.events[result.events["event"] == "action"]
    # On time: each action's event is written when it finished (t_s = 0 is the load start); an
    # increase waits for the new partitions' metadata, so allow 3 s.
    assert all(at_s <= t_s <= at_s + 3 for at_s, t_s in zip((10, 20), actions["t_s"])), \
        list(actions["t_s"])
    exited = result.events[result.events["event"] == "replica_exited"]
    assert list(exited["replica_id"]) == ["replica-0001"]  # and the Deployment replaced it
    m = result.metrics
    assert m["produced_records"] == 12_000.0 and m["lost_records"] == 0.0, m
    manifest = json.loads(Path(result.artifacts["manifest_json"]).read_text())
    assert [p["count"] > 0 for p in manifest["per_partition"]] == [True] * 6  # new ones used
    assert Path(result.artifacts["timeline_png"]).stat().st_size > 0
