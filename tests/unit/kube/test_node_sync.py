"""The node agent's decisions per pod (pure; pods in the API's shape)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pytest_lagscale.kube.node_sync import Action, ReplicaState, sync

POD = json.loads((Path(__file__).parent / "data" / "pod-consumer-ci.json").read_text())
UID = POD["metadata"]["uid"]
NAME = "lagscale-run/lagscale-consumer-6d9f7b8c4-x2kqp"
SELECTOR = {"app.kubernetes.io/name": "lagscale-consumer"}


def _pod(**changes):
    pod = copy.deepcopy(POD)
    for path, value in changes.items():
        node = pod
        *parents, leaf = path.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return pod


def _ready(value):
    return {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if value else "False"}]}


@pytest.mark.parametrize("pod, state, expected", [
    pytest.param(_pod(), None, Action("start", UID, NAME, bind=True), id="new-pod-unbound-start-and-bind"),
    pytest.param(_pod(spec__nodeName="lagscale-local"), None, Action("start", UID, NAME),
                 id="new-pod-already-bound"),
    pytest.param(_pod(status=_ready(False)), ReplicaState(probe_ready=True),
                 Action("report_ready", UID, NAME, ready=True), id="probe-passed-report-ready"),
    pytest.param(_pod(status=_ready(True)), ReplicaState(probe_ready=False),
                 Action("report_ready", UID, NAME, ready=False), id="probe-failed-report-not-ready"),
    pytest.param(_pod(metadata__deletionTimestamp="2026-11-26T04:05:00Z",
                      metadata__deletionGracePeriodSeconds=30),
                 ReplicaState(), Action("terminate", UID, NAME, grace_s=30.0),
                 id="deleted-sigterm-with-grace"),
    pytest.param(_pod(metadata__deletionTimestamp="2026-11-26T04:05:00Z"),
                 ReplicaState(running=False, exit_code=0, terminating=True),
                 Action("final_delete", UID, NAME), id="deleted-and-exited-final-delete"),
    pytest.param(_pod(metadata__deletionTimestamp="2026-11-26T04:05:00Z"), None,
                 Action("final_delete", UID, NAME), id="deleted-before-start"),
    pytest.param(_pod(status=_ready(True)), ReplicaState(running=False, exit_code=137),
                 Action("report_failed", UID, NAME, exit_code=137), id="exited-on-its-own-failed"),
])
def test_one_pod(pod, state, expected):
    replicas = {UID: state} if state is not None else {}
    assert sync([pod], replicas, SELECTOR) == [expected]


@pytest.mark.parametrize("pod, state", [
    pytest.param(_pod(status=_ready(True)), ReplicaState(probe_ready=True), id="ready-unchanged"),
    pytest.param(_pod(status=_ready(False)), ReplicaState(probe_ready=None), id="not-probed-yet"),
    pytest.param(_pod(metadata__deletionTimestamp="t"), ReplicaState(terminating=True),
                 id="sigterm-already-sent"),
    pytest.param(_pod(status={"phase": "Failed"}), None, id="failed-pod-not-restarted"),
    pytest.param(_pod(metadata__labels={"app": "other"}), None, id="other-deployments-pod"),
])
def test_nothing_to_do(pod, state):
    replicas = {UID: state} if state is not None else {}
    assert sync([pod], replicas, SELECTOR) == []


def test_replica_whose_pod_is_gone_is_forgotten():
    assert sync([], {"u2": ReplicaState(), "u1": ReplicaState(running=False)}, SELECTOR) == [
        Action("forget", "u1", ""), Action("forget", "u2", "")]
