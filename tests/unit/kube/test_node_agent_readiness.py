"""The node agent's readiness of a command consumer without a probe: group membership, as the
local platform reads it (members holding partitions; that many live pods, oldest first, ready
for good)."""

from __future__ import annotations

import datetime as dt

from kubernetes.client import ApiClient

from pytest_lagscale.contract.eventlog import EventLog
from pytest_lagscale.contract.rundir import RunDir
from pytest_lagscale.kube import pod_replica as pr
from pytest_lagscale.kube.node_agent import NodeAgent, PodProcess


class _Running:
    """A process that has not exited (what the agent reads of a live pod's process)."""

    pid = 0

    def poll(self) -> None:
        return None


def _agent(tmp_path) -> NodeAgent:
    layout = RunDir(tmp_path)
    return NodeAgent(ApiClient(), "ns", {"app": "c"}, layout,
                     EventLog(tmp_path / "platform.events.jsonl", source="platform"))


def _pod(agent: NodeAgent, n: int) -> PodProcess:
    spec = pr.ReplicaSpec("ns", f"c-{n}", f"u-{n}", "consumer", ("consumer",), kind="command")
    record = PodProcess(f"replica-{n:04d}", f"ns/c-{n}", f"c-{n}", spec, _Running(), 40000 + n,
                        started_s=float(n), started_at=dt.datetime.now(dt.timezone.utc))
    agent._pods[spec.uid] = record
    return record


def test_pods_become_ready_oldest_first_as_members_appear_and_stay_ready(tmp_path) -> None:
    agent = _agent(tmp_path)
    pods = [_pod(agent, n) for n in (1, 2, 3)]
    members = {"n": None}
    agent.use_group_membership(lambda: members["n"])
    agent._probe_due()
    assert [p.ready_s for p in pods] == [None, None, None]  # unknown: nobody ready
    members["n"] = 2
    for _ in range(3):  # one pod per round, oldest first
        for p in pods:
            p.last_probe_s = -1e9
        agent._probe_due()
    assert [p.ready_s is not None for p in pods] == [True, True, False]
    members["n"] = 0  # an eager rebalance: nobody holds partitions for a moment
    for p in pods:
        p.last_probe_s = -1e9
    agent._probe_due()
    assert [p.probe_ready for p in pods] == [True, True, False]


def test_without_a_membership_source_a_probeless_command_pod_is_never_ready(tmp_path) -> None:
    agent = _agent(tmp_path)
    pod = _pod(agent, 1)
    agent._probe_due()
    assert (pod.probe_ready, pod.ready_s) == (False, None)
