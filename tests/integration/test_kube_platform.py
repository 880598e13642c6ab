"""The kubernetes platform on the real local control plane: pods become replica processes.

etcd, kube-apiserver, kube-controller-manager and KEDA (built by ``scripts/bootstrap
--with-kube``) run for real; the Deployment is the committed ci one with the arrow engine (a
replica ready in about a second), its pods run by the node agent. Checked: ``scale`` creates
pods that the agent binds, starts and reports Running and Ready; a replica killed by a signal
makes its pod Failed and the ReplicaSet replaces it; a scale to 0 terminates every process;
``stop`` leaves no process of the control plane or of a replica.

Skipped when the binaries are not built (the reason names the bootstrap command).
"""

from __future__ import annotations

import os
import signal

import pytest

from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kube import build
from pytest_lagscale.kube.policy import hpa_timing
from pytest_lagscale.platform.kubernetes import KubernetesDeployment

from ._kube import K8S, arrow_template, pods_of, wait_for as _wait

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kube-platform")]


@pytest.fixture
def deployment(kafka_cluster, tmp_path):
    reason = build.missing_reason()
    if reason is not None:
        pytest.skip(f"--platform kubernetes: {reason}")
    platform = KubernetesDeployment(arrow_template(kafka_cluster), tmp_path)
    platform.timing = hpa_timing(load_policy_manifest(K8S / "scaledobject-ci.yaml"))
    with platform:
        yield platform
    # every process of the control plane and of the replicas is gone after stop()
    pids = [p.pid for _, p in platform.control_plane._processes] if platform.control_plane else []
    pids += [r.process.pid for r in platform.agent._pods.values()] if platform.agent else []
    assert not [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


_pods = pods_of




def test_pods_run_as_replicas_are_replaced_when_killed_and_removed_on_scale_down(deployment):
    deployment.scale(2)
    deployment.wait_ready(2, within_s=120)
    pods = _pods(deployment)
    assert len(pods) == 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == "lagscale-local"
        assert pod["status"]["phase"] == "Running"
        ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert ready["Ready"] == "True" and ready["ContainersReady"] == "True"
    first = {r.replica_id: r.pod_name for r in deployment.replicas()}
    assert sorted(first.values()) == sorted(p["metadata"]["name"] for p in pods)
    assert len(deployment.metrics_targets()) == 2

    victim = sorted(first)[0]
    deployment.kill_replica(victim, signal.SIGKILL)
    _wait(lambda: first[victim] not in {p["metadata"]["name"] for p in _pods(deployment)},
          30, "the killed replica's pod Failed and deleted")
    _wait(lambda: deployment.ready_replicas == 2 and len(deployment.replicas()) == 2, 60,
          "a replacement pod ready")
    events = read_events(deployment.layout.source_events("platform"))
    exited = [e for e in events if e["event"] == "replica_exited"]
    assert [e["replica_id"] for e in exited] == [victim]
    assert exited[0]["exit_code"] == -signal.SIGKILL
    assert victim not in {r.replica_id for r in deployment.replicas()}

    live = [r.process for r in deployment.replicas()]
    deployment.scale(0)
    _wait(lambda: not _pods(deployment), 60, "every pod deleted after the scale to 0")
    deployment.wait_terminated(30)
    assert all(p.poll() is not None for p in live)
    stopped = [e for e in read_events(deployment.layout.source_events("platform"))
               if e["event"] == "replica_stopped"]
    assert {e["outcome"] for e in stopped} <= {"terminated", "exited"}
