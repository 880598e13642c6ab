"""``--kubeconfig`` on a cluster with kubelets: ``--replica-image``, the probe pod, the pod proxy.

``lagscale kube up --node kubelet`` keeps, for the module, the real control plane with a real
kubelet node whose pods sit on a bridge network (addresses of their own, as on kind) and the
replica image imported; a broker listens on the bridge's gateway, where the pods reach this
host. Checked in the default session: the preflight refuses (exit 2, one line per problem,
nothing created) a cluster with Ready nodes without ``--replica-image``, a broker the probe pod
cannot reach from inside, and an image the node cannot get; the platform runs the replica
program from the image as the cluster's pods (container ids, Ready from the kubelet), its
metrics come through the apiserver's pod proxy, and its stop deletes the run's objects; ``kube
up`` stops leaving no process, bridge or state of its node. ``by_hand`` (about 3 minutes): a
whole run on that cluster scales, writes its output topic and reconciles 0 lost / 0 duplicated.

Skipped when the binaries or the replica image's base are missing (the reason names
``scripts/bootstrap --with-kube``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pytest

from pytest_lagscale.config.cluster_consumer import as_cluster_consumer
from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.kube import build
from pytest_lagscale.kube.kubelet_node import POD_LOGS, STATE_ROOT
from pytest_lagscale.kube.node_commands import BRIDGE_GATEWAY, BRIDGE_NAME
from pytest_lagscale.platform.kubernetes import KubernetesDeployment, kubelet_node_problems
from pytest_lagscale.platform.local import template_from_deployment
from pytest_lagscale.process import RUN_ID_ENV

from ._kube import K8S, kube_up_process, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kube-platform")]
PROFILE = Path(__file__).resolve().parents[1] / "data" / "spike-short.yaml"
LAGSCALE = str(Path(sys.executable).parent / "lagscale")
RUN_WITHIN_S = 600.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """``lagscale kube up --node kubelet``: yields its kubeconfig, replica image and run id."""
    reason = build.missing_reason()
    problems = [] if reason else kubelet_node_problems()
    if reason or problems:
        pytest.skip(f"--platform kubernetes: {reason or problems[0]}")
    rid = f"kubeupn{uuid.uuid4().hex[:8]}"
    with kube_up_process(tmp_path_factory.mktemp("kube-up-node"), rid, "--node", "kubelet",
                 until="run on it", stop_within_s=90.0) as said:
        assert "kubeconfig" in said and "replica image" in said, said
        yield SimpleNamespace(kubeconfig=Path(said["kubeconfig"]), image=said["replica image"],
                              run_id=rid, said=said)
    assert not Path("/sys/class/net", BRIDGE_NAME).exists(), "the bridge was left"
    assert not (STATE_ROOT / rid).exists(), "the node's state directory was left"
    assert not list(POD_LOGS.glob("lagscale*_*")), "the pods' log directories were left"


@pytest.fixture(scope="module")
def gateway_broker(cluster) -> Iterator[object]:
    """An embedded broker listening on the bridge's gateway (where the pods reach this host)."""
    from pytest_lagscale.kafka.embedded import EmbeddedKafka

    with EmbeddedKafka(host=BRIDGE_GATEWAY) as kafka:
        yield kafka


def _api(kubeconfig: Path):
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig))


def _run(tmp_path: Path, cluster: SimpleNamespace, out: str, *extra: str,
         timeout_s: float = 180.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LAGSCALE, "run", "--platform", "kubernetes", "--kubeconfig",
                           str(cluster.kubeconfig), "--profile", str(PROFILE), "--out",
                           str(tmp_path / out), *extra], capture_output=True, text=True,
                          timeout=timeout_s,
                          env={**os.environ, RUN_ID_ENV: f"kcn{uuid.uuid4().hex[:8]}"})


def _run_namespaces(api) -> list[str]:
    from kubernetes import client

    return sorted(n.metadata.name for n in client.CoreV1Api(api).list_namespace().items
                  if n.metadata.name.startswith("lagscale-kcn")
                  and n.status.phase != "Terminating")


def test_kube_up_with_a_kubelet_node_says_how_to_run_on_it(cluster) -> None:
    assert cluster.said["replica image"].startswith("lagscale.local/lagscale-replica:")
    assert f"reach this host at {BRIDGE_GATEWAY}" in cluster.said["node"]
    assert f"--replica-image {cluster.image}" in cluster.said["run on it"]
    from kubernetes import client

    (node,) = client.CoreV1Api(_api(cluster.kubeconfig)).list_node().items
    assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def test_a_cluster_with_kubelets_without_replica_image_is_refused_naming_what_it_needs(
        tmp_path, cluster, gateway_broker) -> None:
    done = _run(tmp_path, cluster, "refused", "--kafka", "external", "--kafka-bootstrap",
                gateway_broker.bootstrap_servers)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 Node(s) Ready (" in done.stderr and "give --replica-image REF" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "refused").exists()


def test_a_broker_the_pods_cannot_reach_is_refused_by_the_probe_pod(tmp_path, cluster) -> None:
    """The broker is on the gateway's closed port 1: the probe pod's own connect fails, and
    its words are in the one line per problem; the probe's namespace is gone after."""
    done = _run(tmp_path, cluster, "unreachable", "--replica-image", cluster.image,
                "--kafka", "external", "--kafka-bootstrap", f"{BRIDGE_GATEWAY}:1")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, done.stderr
    assert f"could not reach the broker at {BRIDGE_GATEWAY}:1 from inside the cluster" in lines[0]
    assert f"connect {BRIDGE_GATEWAY}:1" in lines[0]
    assert not (tmp_path / "unreachable").exists()
    assert _run_namespaces(_api(cluster.kubeconfig)) == [] or all(
        not _pods(cluster, ns) for ns in _run_namespaces(_api(cluster.kubeconfig)))


def test_an_image_the_node_cannot_get_is_refused_at_once(tmp_path, cluster,
                                                         gateway_broker) -> None:
    done = _run(tmp_path, cluster, "noimage", "--replica-image", "lagscale.invalid/absent:0",
                "--kafka", "external", "--kafka-bootstrap", gateway_broker.bootstrap_servers)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "cannot start: ErrImagePull" in done.stderr or \
        "cannot start: ImagePullBackOff" in done.stderr, done.stderr
    assert "lagscale.invalid/absent:0" in done.stderr


def _pods(cluster: SimpleNamespace, namespace: str) -> list:
    from kubernetes import client

    return client.CoreV1Api(_api(cluster.kubeconfig)).list_namespaced_pod(namespace).items


def test_the_platform_runs_the_image_as_the_clusters_pods_scraped_through_the_pod_proxy(
        tmp_path, cluster, gateway_broker) -> None:
    from kubernetes import client

    suffix = uuid.uuid4().hex[:8]
    topic, group = f"events-{suffix}", f"enrich-{suffix}"
    KafkaAdmin(gateway_broker.bootstrap_servers).create_topic(topic, 2)
    deployment = as_cluster_consumer(load_deployment(K8S / "consumer-deployment-ci.yaml"))
    template = template_from_deployment(
        deployment, gateway_broker.bootstrap_servers,
        connection={"KAFKA_TOPIC": topic, "KAFKA_GROUP": group,
                    "KAFKA_OUTPUT_TOPIC": f"{topic}-processed"})
    settings = SimpleNamespace(kubeconfig=cluster.kubeconfig, replica_image=cluster.image,
                               kafka_bootstrap=gateway_broker.bootstrap_servers, node=None)
    plan = SimpleNamespace(policy_config=load_policy_manifest(K8S / "scaledobject-ci.yaml"),
                           settings=settings, deployment=deployment, replica_range=(1, 8))
    KubernetesDeployment.check_plan(plan)  # the probe pod reaches the gateway's broker
    platform = KubernetesDeployment(template, tmp_path)
    platform.configure(plan)
    assert platform.node_kind == "cluster" and platform.metrics_port == 9400
    api = _api(cluster.kubeconfig)
    with platform:
        namespace = platform.namespace
        platform.scale(1)
        platform.wait_ready(1, within_s=180)
        (replica,) = platform.replicas()
        assert replica.container_id.startswith("containerd://")
        pod = client.CoreV1Api(api).read_namespaced_pod(replica.replica_id, namespace)
        assert pod.status.pod_ip.startswith(BRIDGE_GATEWAY.rsplit(".", 1)[0] + ".")
        assert pod.spec.containers[0].image == cluster.image
        assert not pod.spec.host_network
        (group_,) = platform.metrics_target_groups()
        path = group_["labels"]["__metrics_path__"]
        assert path == (f"/api/v1/namespaces/{namespace}/pods/{replica.replica_id}:9400"
                        "/proxy/metrics")
        text = wait_for(lambda: _get(f"http://{group_['targets'][0]}{path}"), 30,
                        "the replica's metrics through the pod proxy")
        assert "rebalances_total" in text, text[:500]
        with pytest.raises(Exception, match="not a pod metrics path"):
            _get(f"http://{group_['targets'][0]}/api/v1/namespaces/kube-system/pods/x:1"
                 "/proxy/metrics", strict=True)
    info = platform.run_info([])["kubernetes"]
    assert info["node"] == "cluster" and info["kubelet_node"] is None
    pods = info["cluster_pods"]["pods"]
    assert [p["container_ids"][0].startswith("containerd://") for p in pods] == [True]
    assert info["cluster_pods"]["relay"]["forwarded_total"] >= 1
    assert platform.cleanup_errors == []
    assert client.AppsV1Api(api).list_namespaced_deployment(namespace).items == []
    assert client.CoreV1Api(api).list_namespaced_pod(namespace).items == []


def _get(url: str, strict: bool = False) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.read().decode()
    except Exception as exc:
        if strict:
            body = exc.read().decode() if hasattr(exc, "read") else str(exc)
            raise AssertionError(body) from exc
        return None


@pytest.mark.by_hand
def test_a_run_on_a_cluster_with_kubelets_scales_and_reconciles_its_output_topic(
        tmp_path, cluster, gateway_broker) -> None:
    done = _run(tmp_path, cluster, "runs", "--replica-image", cluster.image, "--kafka",
                "external", "--kafka-bootstrap", gateway_broker.bootstrap_servers,
                timeout_s=RUN_WITHIN_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    bench = json.loads((run_dir / "benchmark.json").read_text())
    run, metrics = bench["run"], bench["metrics"]
    kube = run["kubernetes"]
    assert kube["node"] == "cluster" and kube["cluster"]["replica_image"] == cluster.image
    assert run["measured_from"]["exactness"] == "output_topic", run["measured_from"]
    assert metrics["lost_records"]["value"] == 0
    assert metrics["duplicated_records"]["value"] == 0
    ran = [p for p in kube["cluster_pods"]["pods"] if p["container_ids"]]  # others: Pending
    # a pod deleted between two of the observer's lists ends "gone", its exit code unseen
    seen = [p["exit_code"] for p in ran if p["exit_code"] is not None]
    assert len(ran) > 1 and seen and all(code == 0 for code in seen), ran
    assert bench["inputs"]["engine"] == "spark", bench["inputs"]["engine"]  # the replicas
    assert kube["cluster_pods"]["relay"]["forwarded_total"] > 0
