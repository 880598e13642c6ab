"""A rolling restart of a live group on the embedded broker (experiment 3's static-membership
variant), with two arrow replicas under cooperative-sticky.

With static membership (``--instance-id=$(POD_NAME)``, expanded by the local platform to the
replica's slot name, and a 45 s session timeout) each replacement rejoins as the member it
replaces, so the member that stays up never rebalances: no ``revoked``, ``assigned`` or ``lost``
on it. Without it, each restart is a leave and a join, and the member that stays up gives up
partitions to the newcomer (``revoked``).
"""

from __future__ import annotations

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
from pytest_lagscale.experiment.plan import static_membership_flags
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.load.profiles import ActionSpec
from pytest_lagscale.platform import make_platform
from pytest_lagscale.platform.local import template_from_deployment
from tests.replica_helpers import produce_events

pytestmark = pytest.mark.integration
PARTITIONS = 4
REBALANCE = ("revoked", "assigned", "lost")


def _wait(clock: RealClock, what: str, check: Any, within_s: float) -> None:
    deadline = clock.now() + within_s
    while not check():
        if clock.now() > deadline:
            raise AssertionError(f"not within {within_s:g} s: {what}")
        clock.sleep(0.2)


def _stable_two_by_two(admin: KafkaAdmin, group: str, topic: str) -> bool:
    state = admin.describe_group(group, topic)
    return state.state.lower() == "stable" and \
        sorted(len(m.partitions) for m in state.members) == [2, 2]


def _survivor_rebalances(layout: RunDir, since_s: float) -> list[tuple[str, str, list[int]]]:
    """``(replica_id, event, partitions)`` of each rebalance event after ``since_s`` on a replica
    that was a member then: after its ``joined`` (its first assignment is its join, not a
    rebalance) and before its own ``sigterm`` (its close revokes locally)."""
    out = []
    for path in sorted(layout.replicas_dir.glob("*/events.jsonl")):
        member = False
        for e in read_events(path):
            if e["event"] == "sigterm":
                break
            if member and e["event"] in REBALANCE and e["monotonic_s"] >= since_s \
                    and e.get("partitions"):
                out.append((e["replica_id"], e["event"], e["partitions"]))
            member = member or e["event"] == "joined"
    return out


@pytest.mark.parametrize("static", [pytest.param(True, id="static-members-no-rebalance"),
                                    pytest.param(False, id="dynamic-members-rebalance")])
def test_rolling_restart_rebalances_the_survivor_only_without_static_membership(
        kafka_cluster: Any, tmp_path: Path, static: bool) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"roll-{suffix}", f"roll-{suffix}"
    admin = KafkaAdmin(kafka_cluster.bootstrap_servers)
    admin.create_topic(topic, PARTITIONS)
    layout, clock = RunDir(tmp_path), RealClock()
    overrides = {"--topic": topic, "--group": group, "--engine": "arrow",
                 "--balancer": "cooperative-sticky",
                 **(static_membership_flags("cooperative-sticky", {}) if static else {})}
    template = template_from_deployment(
        load_deployment(manifest_paths("ci")["deployment"]), kafka_cluster.bootstrap_servers,
        flag_overrides=overrides)
    events = EventLog(layout.source_events("runner"), source="runner")
    planned = plan_actions([ActionSpec(0.0, "rolling_restart", {"pause_s": 1})],
                           PlanFacts(partitions=PARTITIONS))
    with make_platform("local", template, layout) as platform:
        platform.scale(2)
        platform.wait_ready(2, within_s=60)
        produce_events(kafka_cluster.bootstrap_servers, topic, 2_000, PARTITIONS)
        _wait(clock, "2 members with 2 partitions each",
              lambda: _stable_two_by_two(admin, group, topic), 30)
        context = ActionContext(admin, topic, group, platform, None, kafka_cluster,
                                lambda ref: None, clock.now)
        start = clock.now()
        with ActionScheduler(planned, context, events, clock, start) as scheduler:
            _wait(clock, "the rolling restart", lambda: scheduler.done or scheduler.errors, 60)
        produce_events(kafka_cluster.bootstrap_servers, topic, 2_000, PARTITIONS,
                       first_seq=2_000)
        _wait(clock, "every record committed", lambda: admin.committed_offsets(group, topic)
              == admin.end_offsets(topic), 30)
        clock.sleep(1.0)  # the last callbacks reach the event logs
    events.close()

    assert scheduler.errors == []
    done = scheduler.done[0]
    assert (done["restarted"], done["interrupted"]) == (2, False)
    restarts = done["replicas"]
    assert [(r["replica_id"], r["pod_name"]) for r in restarts] == [
        ("replica-0001", "lagscale-consumer-0"), ("replica-0002", "lagscale-consumer-1")]
    started = {e["replica_id"]: e for e in read_events(layout.source_events("platform"))
               if e["event"] == "replica_started"}
    for r in restarts:  # the replacement has the replaced replica's slot and instance id
        old, new = started[r["replica_id"]], started[r["replacement_id"]]
        assert (new["pod_name"], new["instance_id"]) == (old["pod_name"], old["instance_id"])
        assert new["instance_id"] == (old["pod_name"] if static else None)
    survivors = _survivor_rebalances(layout, start)
    if static:
        assert survivors == [], survivors
    else:
        assert any(event == "revoked" for _, event, _ in survivors), survivors
