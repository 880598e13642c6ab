"""``--platform kubernetes --kubeconfig``: runs on a cluster that is already up.

``lagscale kube up`` starts the real local control plane (etcd, kube-apiserver,
kube-controller-manager, KEDA; built by ``scripts/bootstrap --with-kube``) once for the module
and keeps it up. Checked in the default session: the kubernetes platform given its kubeconfig
makes a namespace of its own, its pods run as replica processes, and ``stop`` deletes the
run's objects while the cluster keeps serving; a cluster with a Ready Node is refused with exit
2 before anything starts; SIGTERM stops ``kube up`` leaving no process of its run id.
``by_hand`` (about 2 minutes): a whole ``lagscale run --platform kubernetes --kubeconfig`` of a
short spike completes, reconciles and is scaled by the cluster's HPA.

Skipped when the binaries are not built (the reason names the bootstrap command).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kube import build
from pytest_lagscale.platform.kubernetes import KubernetesDeployment
from pytest_lagscale.process import RUN_ID_ENV

from ._kube import K8S, arrow_template, kube_up_process

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kube-platform")]
PROFILE = Path(__file__).resolve().parents[1] / "data" / "spike-short.yaml"
LAGSCALE = str(Path(sys.executable).parent / "lagscale")
UP_WITHIN_S = 60.0
RUN_WITHIN_S = 420.0


@pytest.fixture(scope="module")
def kube_up(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    """``lagscale kube up`` in its own session; yields (admin kubeconfig, its run id)."""
    reason = build.missing_reason()
    if reason is not None:
        pytest.skip(f"--platform kubernetes: {reason}")
    rid = f"kubeup{uuid.uuid4().hex[:8]}"
    with kube_up_process(tmp_path_factory.mktemp("kube-up"), rid, until="kubeconfig") as said:
        kubeconfig = Path(said["kubeconfig"])
        assert kubeconfig.is_file(), said
        yield kubeconfig, rid


def _api(kubeconfig: Path):
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig))


def _run(tmp_path: Path, kubeconfig: Path, out: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LAGSCALE, "run", "--platform", "kubernetes", "--kubeconfig",
                           str(kubeconfig), "--profile", str(PROFILE), "--engine", "arrow",
                           "--out", str(tmp_path / out)], capture_output=True, text=True,
                          timeout=RUN_WITHIN_S, env={**os.environ, RUN_ID_ENV:
                                                     f"kcrun{uuid.uuid4().hex[:8]}"})


def test_the_platform_on_a_kubeconfig_cluster_runs_pods_in_its_namespace_and_cleans_up(
        tmp_path, kube_up, kafka_cluster) -> None:
    from kubernetes import client

    kubeconfig, _ = kube_up
    template = arrow_template(kafka_cluster)
    plan = SimpleNamespace(policy_config=load_policy_manifest(K8S / "scaledobject-ci.yaml"),
                           settings=SimpleNamespace(kubeconfig=kubeconfig))
    KubernetesDeployment.check_plan(plan)  # the preflight passes on kube up's cluster
    platform = KubernetesDeployment(template, tmp_path)
    platform.configure(plan)
    api = _api(kubeconfig)
    with platform:
        namespace = platform.namespace
        assert namespace.startswith("lagscale-") and platform.control_plane is None
        labels = client.CoreV1Api(api).read_namespace(namespace).metadata.labels
        assert labels["lagscale.dev/run-id"]
        platform.scale(2)
        platform.wait_ready(2, within_s=120)
        pods = client.CoreV1Api(api).list_namespaced_pod(namespace).items
        assert sorted(p.status.phase for p in pods) == ["Running", "Running"]
        live = [r.process for r in platform.replicas()]
        assert platform.versions == {"kubernetes": "v1.36.3", "keda": "v2.21.0"}
    assert all(p.poll() is not None for p in live)
    assert platform.cleanup_errors == []
    assert client.AppsV1Api(api).list_namespaced_deployment(namespace).items == []
    assert client.AppsV1Api(api).list_namespaced_replica_set(namespace).items == []
    assert client.CoreV1Api(api).list_namespaced_pod(namespace).items == []
    assert client.VersionApi(api).get_code().git_version == "v1.36.3"  # the cluster serves on


@pytest.mark.by_hand
def test_a_run_on_a_kubeconfig_cluster_scales_through_its_hpa_and_cleans_up(tmp_path,
                                                                            kube_up) -> None:
    from kubernetes import client

    kubeconfig, _ = kube_up
    done = _run(tmp_path, kubeconfig, "runs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    bench = json.loads((run_dir / "benchmark.json").read_text())
    run, metrics = bench["run"], bench["metrics"]
    assert run["platform"] == "kubernetes"
    cluster = run["kubernetes"]["cluster"]
    assert cluster["namespace"].startswith("lagscale-kcrun")
    assert bench["inputs"]["versions"]["kubernetes"] == "v1.36.3"
    assert bench["inputs"]["versions"]["keda"] == "v2.21.0"
    assert metrics["lost_records"]["value"] == 0
    assert metrics["duplicated_records"]["value"] == 0
    events = list(read_events(run_dir / "events.jsonl"))
    desired = [e["desired_replicas"] for e in events if e["event"] == "hpa_status"]
    assert desired and max(desired) > run["min_replicas"], desired
    reported = [e for e in events if e["event"] == "hpa_status" and "metric_value" in e]
    assert reported, "the HPA's status.currentMetrics gave no metric value"
    assert "tap" in run["kubernetes"]["conformance"]["error"]
    cleanup = [e for e in events if e["event"] == "cluster_cleanup"]
    assert cleanup and cleanup[0]["errors"] == []
    api = _api(kubeconfig)
    namespace = cluster["namespace"]
    assert client.AppsV1Api(api).list_namespaced_deployment(namespace).items == []
    assert client.CoreV1Api(api).list_namespaced_pod(namespace).items == []
    assert client.CustomObjectsApi(api).list_namespaced_custom_object(
        "keda.sh", "v1alpha1", namespace, "scaledobjects")["items"] == []
    assert client.VersionApi(api).get_code().git_version == "v1.36.3"  # still serving


def test_a_cluster_with_a_ready_node_is_refused_before_anything_starts(tmp_path,
                                                                       kube_up) -> None:
    from kubernetes import client

    kubeconfig, _ = kube_up
    core = client.CoreV1Api(_api(kubeconfig))
    core.create_node({"metadata": {"name": "kubelet-1"}})
    try:
        core.patch_node_status("kubelet-1", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "kubelet is posting ready status"}]}})
        done = _run(tmp_path, kubeconfig, "refused")
    finally:
        core.delete_node("kubelet-1")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 Node(s) Ready (kubelet-1)" in done.stderr
    assert "use a cluster without nodes (lagscale kube up)" in done.stderr
    assert not (tmp_path / "refused").exists()
