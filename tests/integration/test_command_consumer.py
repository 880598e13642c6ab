"""A consumer given as a plain command (tests/data/plain_consumer.py: confluent-kafka, no
metrics, no probe, no event log, no store) scaled through a spike by a whole run, measured from
the broker's side only: readiness by group membership, reaction decomposed from the group
observer's members and commits, rates and dips from committed offsets, and "consumed ==
produced" from the group's committed offsets, with duplicates reported as not measured."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.experiment import RunSettings, run_experiment

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[1] / "data"


def _deployment(tmp_path: Path) -> Path:
    doc = yaml.safe_load((DATA / "plain-consumer-deployment.yaml").read_text())
    container = doc["spec"]["template"]["spec"]["containers"][0]
    container["command"] = [sys.executable, str(DATA / "plain_consumer.py")]
    path = tmp_path / "plain-consumer-deployment.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_plain_command_consumer_scales_through_a_spike_measured_from_the_broker(
        kafka_cluster: Any, tmp_path: Path) -> None:
    deployment = _deployment(tmp_path)
    result = run_experiment(RunSettings(profile=DATA / "spike-short.yaml",
                                        deployment=deployment, out_dir=tmp_path,
                                        settle_timeout_s=60), cluster=kafka_cluster)
    doc = result.document()
    # the setup is the Deployment's bytes, wherever the file was written
    assert doc["inputs"]["deployment_sha256"] == hashlib.sha256(
        deployment.read_bytes()).hexdigest()
    run = doc["run"]
    assert run["measured_from"] == {
        "consumer": "command", "rates_and_dips": "committed_offsets",
        "exactness": "committed_offsets", "duplicates_measured": False, "reaction": "group",
        "output_topic": None}
    m = result.metrics
    # consumed == produced from the committed offsets; duplicates cannot be seen there
    assert run["committed_exactness"]["unconsumed_total"] == 0, run["committed_exactness"]
    assert m["lost_records"] == 0.0 and m["duplicated_records"] is None, m
    assert int(result.timeline["current_replicas"].max()) >= 2, "no scale-out on the spike"
    # readiness by membership: every replica the platform called ready was a member then
    platform = read_events(result.run_dir / "platform.events.jsonl")
    assert [e for e in platform if e["event"] == "replica_ready"]
    group = read_events(result.run_dir / "group.events.jsonl")
    names = {e["event"] for e in group}
    assert {"member_joined", "member_assigned", "member_first_commit",
            "committed_offsets", "rebalance_ended"} <= names, names
    # the reaction decomposed from the broker's view: each part measured, summing to the total
    parts = [m[k] for k in ("detection_s", "actuation_s", "cold_start_s", "join_s",
                            "first_fetch_s")]
    assert None not in parts and m["reaction_time_s"] == pytest.approx(sum(parts), abs=1e-6), m
    assert result.timeline["consume_rate_per_s"].max() > 0
