"""The kubernetes platform with ``--node kubelet``: pods run as containers through a real kubelet.

The local control plane, containerd, runc, kube-scheduler and the kubelet run for real; the
Deployment is the committed ci one on the arrow engine (a replica ready in about a second),
rewritten for the node (:mod:`pytest_lagscale.kube.pod_template`) and run from the replica image.
Checked: ``scale`` gets pods scheduled (not bound by hand) onto the kubelet's Node, each a
container with a ``containerd://`` id, Ready by the kubelet's own probe; a replica SIGKILLed
through containerd is restarted by the kubelet in the same pod (restartCount 1, a new container
id, ``replica_exited`` then ``replica_restarted``); a scale to 0 gets SIGTERM from the kubelet
and each replica drains and exits 0 (``replica_stopped`` ``terminated``, checked against the
replica's own ``drained`` event); ``stop`` leaves no process, mount, shim or cgroup.

Skipped when the control plane, the node or the replica image's base is not built (the reason
names the bootstrap command).
"""

from __future__ import annotations

import signal

import pytest

from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kube import build
from pytest_lagscale.kube.policy import hpa_timing
from pytest_lagscale.platform.kubernetes import KubernetesDeployment, kubelet_node_problems

from ._kube import K8S, arrow_template, pods_of, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kube-platform")]


@pytest.fixture
def deployment(kafka_cluster, tmp_path):
    from pytest_lagscale.kube.kubelet_node import STATE_ROOT, leftovers

    reason = build.missing_reason()
    if reason is not None:
        pytest.skip(f"--platform kubernetes: {reason}")
    if kubelet_node_problems():
        pytest.skip(f"--node kubelet: {'; '.join(kubelet_node_problems())}")
    platform = KubernetesDeployment(arrow_template(kafka_cluster), tmp_path)
    platform.timing = hpa_timing(load_policy_manifest(K8S / "scaledobject-ci.yaml"))
    platform.node_kind = "kubelet"
    with platform:
        state = STATE_ROOT / platform.node.run_id
        yield platform
    assert leftovers(state) == [] and not state.exists()
    assert platform.node_info["stop"] == {"kubelet": "terminated", "kube-scheduler": "terminated",
                                          "containerd": "terminated"}


_pods = pods_of


def _events(platform, name):
    return [e for e in read_events(platform.layout.source_events("platform"))
            if e["event"] == name]


def test_pods_run_as_containers_restart_when_killed_and_drain_on_the_kubelets_sigterm(deployment):
    deployment.scale(2)
    deployment.wait_ready(2, within_s=120)
    pods = _pods(deployment)
    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == "lagscale-node"  # scheduled by kube-scheduler
        assert pod["spec"]["hostNetwork"] is True
        status = pod["status"]["containerStatuses"][0]
        assert status["containerID"].startswith("containerd://")
        assert status["image"].endswith("lagscale-replica:0.1.0")
        conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert conditions["Ready"] == "True" and conditions["ContainersReady"] == "True"
    wait_for(lambda: len(deployment.metrics_targets()) == 2, 10, "both replicas' ports read")
    started = {e["replica_id"]: e["container_id"] for e in _events(deployment, "replica_started")}
    assert sorted(started) == sorted(p["metadata"]["name"] for p in pods)

    victim = sorted(started)[0]
    deployment.kill_replica(victim, signal.SIGKILL)
    restarted = wait_for(lambda: _events(deployment, "replica_restarted"), 60,
                         "the kubelet restarted the killed container")
    assert [e["replica_id"] for e in restarted] == [victim]
    assert restarted[0]["restart_count"] == 1
    assert restarted[0]["container_id"] != started[victim]
    exited = _events(deployment, "replica_exited")
    assert [(e["replica_id"], e["exit_code"]) for e in exited] == [(victim, 128 + signal.SIGKILL)]
    wait_for(lambda: deployment.ready_replicas == 2, 60, "the restarted replica ready again")

    deployment.scale(0)
    wait_for(lambda: not _pods(deployment), 60, "every pod gone after the scale to 0")
    stopped = wait_for(lambda: len(_events(deployment, "replica_stopped")) == 2
                       and _events(deployment, "replica_stopped"), 10, "two replica_stopped")
    terminating = _events(deployment, "replica_terminating")
    assert sorted(e["replica_id"] for e in terminating) == sorted(started)
    assert all(e["grace_period_s"] == 30 for e in terminating)
    for event in stopped:
        assert event["outcome"] in ("terminated", "gone"), event
        replica_events = read_events(deployment.layout.replica_events(event["replica_id"]))
        assert any(e["event"] == "drained" for e in replica_events), event["replica_id"]
    assert any(e["exit_code"] == 0 for e in stopped), stopped
