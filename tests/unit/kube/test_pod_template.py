"""The Deployment as the kubelet node runs it: image, hostNetwork, per-pod flags, exec probes."""

from __future__ import annotations

import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_lagscale.kube.pod_template import (PORT_FILE, cluster_deployment,
                                                 kubelet_deployment, millicores)
from pytest_lagscale.platform.kubernetes import deployment_object

ROOT = Path(__file__).resolve().parents[3]
RUN = Path("/tmp/run-1")


def _body() -> dict:
    argv = ("python", "-m", "spark_consumer", "--bootstrap=127.0.0.1:9092", "--topic=events",
            "--metrics-port=9400", "--store=/data/store", "--port-file=/tmp/x")
    return deployment_object(ROOT / "k8s" / "consumer-deployment-ci.yaml", argv, {"A": "1"})


def _rewrite(body: dict | None = None) -> tuple[dict, list[str]]:
    return kubelet_deployment(body or _body(), image="lagscale.local/lagscale-replica:0.1.0",
                              run_root=RUN, replicas_dir=RUN / "replicas", store=RUN / "store",
                              event_log_name="events.jsonl", node_cpu_millicores=2000,
                              max_replicas=8)


def test_the_pod_runs_the_replica_image_on_the_host_network_with_its_own_flags() -> None:
    doc, notes = _rewrite()
    spec = doc["spec"]["template"]["spec"]
    consumer = spec["containers"][0]
    assert spec["hostNetwork"] is True and spec["automountServiceAccountToken"] is False
    assert consumer["image"] == "lagscale.local/lagscale-replica:0.1.0"
    assert consumer["imagePullPolicy"] == "Never"
    assert "ports" not in consumer
    command = consumer["command"]
    assert command[:3] == ["python", "-m", "spark_consumer"]
    assert "--metrics-port=9400" not in command and "--port-file=/tmp/x" not in command
    assert "--store=/data/store" not in command
    assert command[-5:] == ["--replica-id=$(POD_NAME)", "--metrics-port=0",
                            f"--port-file={RUN}/replicas/$(POD_NAME)/{PORT_FILE}",
                            f"--event-log={RUN}/replicas/$(POD_NAME)/events.jsonl",
                            f"--store={RUN}/store"]
    assert consumer["env"][0] == {"name": "POD_NAME",
                                  "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    assert {"name": "A", "value": "1"} in consumer["env"]
    assert spec["volumes"] == [{"name": "run", "hostPath": {"path": str(RUN),
                                                              "type": "Directory"}}]
    assert consumer["volumeMounts"] == [{"name": "run", "mountPath": str(RUN)}]
    assert consumer["resources"]["requests"] == {"cpu": "250m", "memory": "1Gi"}
    assert "consumer: cpu request 500m -> 250m (the node's 2000m over maxReplicaCount 8)" in notes
    assert spec["terminationGracePeriodSeconds"] == 30


def test_http_probes_become_exec_probes_with_the_same_timing() -> None:
    before = _body()["spec"]["template"]["spec"]["containers"][0]
    doc, notes = _rewrite()
    consumer = doc["spec"]["template"]["spec"]["containers"][0]
    for name, path in (("readinessProbe", "/ready"), ("livenessProbe", "/healthz")):
        probe = consumer[name]
        assert "httpGet" not in probe
        assert probe["exec"]["command"][0:2] == ["bash", "-c"]
        assert probe["exec"]["command"][3:] == [str(RUN / "replicas"), path]
        assert {k: v for k, v in probe.items() if k != "exec"} == {
            k: v for k, v in before[name].items() if k != "httpGet"}
    assert sum("httpGet -> exec" in n for n in notes) == 2


class _Handler(BaseHTTPRequestHandler):
    codes = {"/ready": 200, "/healthz": 503}

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(self.codes.get(self.path, 404))
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize("path, passes", [("/ready", True), ("/healthz", False),
                                           ("/missing", False)])
def test_the_exec_probe_passes_exactly_when_the_get_answers_2xx_or_3xx(tmp_path, path,
                                                                       passes) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        pod_dir = tmp_path / "replicas" / "pod-a"
        pod_dir.mkdir(parents=True)
        (pod_dir / PORT_FILE).write_text(f"{server.server_address[1]}\n")
        doc, _ = kubelet_deployment(_body(), image="i", run_root=tmp_path,
                                    replicas_dir=tmp_path / "replicas", store=tmp_path / "s",
                                    event_log_name="e", node_cpu_millicores=2000,
                                    max_replicas=8)
        command = doc["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["exec"][
            "command"]
        command = command[:-1] + [path]
        done = subprocess.run(command, env={"POD_NAME": "pod-a", "PATH": "/usr/bin:/bin"},
                              capture_output=True, timeout=10)
        assert (done.returncode == 0) is passes
    finally:
        server.shutdown()
        server.server_close()


def test_the_exec_probe_fails_before_the_replica_wrote_its_port(tmp_path) -> None:
    doc, _ = kubelet_deployment(_body(), image="i", run_root=tmp_path,
                                replicas_dir=tmp_path / "replicas", store=tmp_path / "s",
                                event_log_name="e", node_cpu_millicores=2000,
                                max_replicas=8)
    command = doc["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"]
    done = subprocess.run(command, env={"POD_NAME": "pod-a", "PATH": "/usr/bin:/bin"},
                          capture_output=True, timeout=10)
    assert done.returncode != 0


def test_a_cpu_request_that_fits_the_node_at_max_replicas_is_kept() -> None:
    doc, notes = kubelet_deployment(_body(), image="i", run_root=RUN, replicas_dir=RUN / "r",
                                    store=RUN / "s", event_log_name="e",
                                    node_cpu_millicores=8000, max_replicas=8)
    assert doc["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] \
        == "500m"
    assert not any("cpu request" in n for n in notes)


@pytest.mark.parametrize("quantity, expected", [("500m", 500), ("2", 2000), ("0.25", 250),
                                                (1, 1000)])
def test_cpu_quantities_read_in_millicores(quantity, expected) -> None:
    assert millicores(quantity) == expected


def test_on_a_cluster_the_consumer_runs_the_given_image_without_host_paths() -> None:
    body = _body()
    doc, notes = cluster_deployment(body, image="registry.example/lagscale-replica:0.1.0")
    spec = doc["spec"]["template"]["spec"]
    consumer = spec["containers"][0]
    assert consumer["image"] == "registry.example/lagscale-replica:0.1.0"
    assert consumer["imagePullPolicy"] == "IfNotPresent"  # the manifest's
    assert spec["volumes"] == [] and consumer["volumeMounts"] == []
    assert consumer["ports"] == [{"name": "metrics", "containerPort": 9400}]
    assert consumer["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "metrics"}
    assert "hostNetwork" not in spec and spec["automountServiceAccountToken"] is False
    assert notes == ["consumer: image lagscale.local/lagscale-replica:0.1.0 -> "
                     "registry.example/lagscale-replica:0.1.0 (--replica-image)",
                     "no service-account token (the consumer never calls the API; set "
                     "automountServiceAccountToken in the manifest to have one)",
                     "hostPath volumes dropped (store): paths on the cluster's machines; the "
                     "output topic is the run's record"]
    assert body["spec"]["template"]["spec"]["volumes"]  # the input is not changed
