"""Scheduled actions against the running embedded broker, with producer and replicas live.

``increase_partitions`` is experiment 7's mechanism: the topic grows while records are produced
and consumed; the producer spreads records over the new partitions, the group rebalances onto
them and drains them, and nothing is lost.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.contract.clock import RealClock
from pytest_lagscale.config.bundled import manifest_paths
from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.contract.rundir import RunDir
from pytest_lagscale.contract.eventlog import EventLog, read_events
from pytest_lagscale.experiment.actions import (ActionContext, ActionScheduler, PlanFacts,
                                                plan_actions)
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.load.producer import ProduceSettings, produce_profile
from pytest_lagscale.load.profiles import ActionSpec, parse_profile
from pytest_lagscale.platform import make_platform
from pytest_lagscale.platform.local import template_from_deployment

pytestmark = pytest.mark.integration


def _drained(admin: KafkaAdmin, group: str, topic: str, partitions: int) -> bool:
    ends = admin.end_offsets(topic)
    committed = admin.committed_offsets(group, topic)
    return len(ends) == partitions and all(committed.get(p, -1) == end
                                          for p, end in ends.items())


def test_increase_partitions_mid_run_is_produced_to_consumed_and_drained(
        kafka_cluster: Any, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"grow-{suffix}", f"grow-{suffix}"
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic(topic, 4)
    profile = parse_profile({"kind": "steady", "seed": 7, "partitions": 4, "topic": topic,
                             "duration_s": 30, "rate_per_s": 300})
    layout = RunDir(tmp_path)
    template = template_from_deployment(
        load_deployment(manifest_paths("ci")["deployment"]), kafka_cluster.bootstrap_servers,
        flag_overrides={"--topic": topic, "--group": group, "--engine": "arrow"})
    clock = RealClock()
    events = EventLog(layout.source_events("runner"), source="runner")
    with make_platform("local", template, layout) as platform:
        platform.scale(2)
        platform.wait_ready(2, within_s=120)
        outcome: dict[str, Any] = {}
        producer = threading.Thread(target=lambda: outcome.update(result=produce_profile(
            profile, ProduceSettings(kafka_cluster.bootstrap_servers), max_partitions=8)))
        planned = plan_actions([ActionSpec(8.0, "increase_partitions", {"to": 8})],
                               PlanFacts(partitions=4))
        context = ActionContext(admin, topic, group, platform, None, kafka_cluster,
                                lambda ref: None, clock.now)
        start = clock.now()
        producer.start()
        with ActionScheduler(planned, context, events, clock, start) as scheduler:
            producer.join(90)
        deadline = clock.now() + 90
        while not _drained(admin, group, topic, 8) and clock.now() < deadline:
            clock.sleep(1.0)
        drained = _drained(admin, group, topic, 8)
    events.close()

    assert scheduler.errors == []
    assert scheduler.done[0]["partitions_before"] == 4
    assert scheduler.done[0]["partitions_after"] == 8
    assert admin.partition_count(topic) == 8
    manifest = outcome["result"].manifest
    per_partition = {p.partition: p.count for p in manifest.per_partition}
    assert all(per_partition[p] > 0 for p in range(8)), per_partition  # new ones produced to
    assert manifest.total_failed == 0 and manifest.total_acked == 9000
    assert drained, (admin.end_offsets(topic), admin.committed_offsets(group, topic))
    assigned = {p for path in layout.event_logs() for record in read_events(path)
                if record.get("event") == "assigned" for p in record.get("partitions", [])}
    assert assigned >= set(range(4, 8)), assigned  # the group rebalanced onto the new ones
    actions = [r for r in read_events(layout.source_events("runner")) if r["event"] == "action"]
    assert [(a["action"], a["scheduled_s"]) for a in actions] == [("increase_partitions", 8.0)]
