"""The node agent's pure part: pods -> replica processes, and the pod status it reports."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kube import pod_replica as pr

POD = json.loads((Path(__file__).parent / "data" / "pod-consumer-ci.json").read_text())
T0 = dt.datetime(2026, 11, 26, 4, 0, 5, tzinfo=dt.timezone.utc)
T1 = T0 + dt.timedelta(seconds=12)
NODE_FLAGS = {"--replica-id": "lagscale-consumer-6d9f7b8c4-x2kqp", "--metrics-port": "41234",
              "--event-log": "/run/replicas/x2kqp/events.jsonl", "--store": "/run/store"}


def _spec(pod=POD):
    return pr.replica_spec(pod, python="/venv/bin/python")


def test_pod_of_the_ci_deployment_becomes_the_replica_command_line():
    spec = _spec()
    assert (spec.namespace, spec.pod_name, spec.container_name) == (
        "lagscale-run", "lagscale-consumer-6d9f7b8c4-x2kqp", "consumer")
    assert spec.argv[:3] == ("/venv/bin/python", "-m", "spark_consumer")
    assert spec.argv[3] == "--bootstrap=127.0.0.1:39092"
    assert spec.env == {"KAFKA_BOOTSTRAP": "127.0.0.1:39092"}
    assert (spec.termination_grace_period_s, spec.readiness_path, spec.readiness_period_s,
            spec.readiness_failure_threshold) == (30.0, "/ready", 2.0, 3)


def test_replica_argv_replaces_the_pods_platform_flags_with_the_nodes():
    argv = pr.replica_argv(_spec(), NODE_FLAGS)
    assert "--metrics-port=9400" not in argv and "--store=/data/store" not in argv
    assert argv[-4:] == ("--replica-id=lagscale-consumer-6d9f7b8c4-x2kqp",
                         "--metrics-port=41234", "--event-log=/run/replicas/x2kqp/events.jsonl",
                         "--store=/run/store")
    assert "--engine=spark" in argv and "--topic=events" in argv


def test_replica_argv_drops_space_separated_platform_flags_too():
    spec = pr.ReplicaSpec("ns", "p", "u", "c", ("python", "-m", "spark_consumer", "--store",
                                                  "/x", "--topic=events"))
    assert pr.replica_argv(spec, {"--store": "/y"}) == (
        "python", "-m", "spark_consumer", "--topic=events", "--store=/y")
    with pytest.raises(ConfigError, match=r"platform flags \['--topic'\]: not in --metrics-port"):
        pr.replica_argv(spec, {"--topic": "x"})


def test_field_refs_resolve_to_the_pod_and_the_local_node():
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["env"] += [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "ID", "value": "$(POD_NAME)@$(POD_IP) $$(POD_NAME)"},
    ]
    pod["spec"]["containers"][0]["args"].append("--instance-id=$(POD_NAME)")
    spec = _spec(pod)
    assert spec.env["ID"] == "lagscale-consumer-6d9f7b8c4-x2kqp@127.0.0.1 $(POD_NAME)"
    assert spec.argv[-1] == "--instance-id=lagscale-consumer-6d9f7b8c4-x2kqp"


def test_unsupported_value_from_and_bad_args_are_reported_together():
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["env"].append(
        {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})
    pod["spec"]["containers"][0]["args"].append(9400)
    with pytest.raises(ConfigError) as err:
        _spec(pod)
    who = "pod 'lagscale-run/lagscale-consumer-6d9f7b8c4-x2kqp'"
    assert err.value.problems == [
        f"{who}: spec.containers[0].env[1].valueFrom: {{'secretKeyRef': {{'name': 's', 'key': 'k'}}}} "
        "is not a fieldRef to one of metadata.name, metadata.namespace, metadata.uid, "
        "spec.nodeName, spec.serviceAccountName, status.podIP, status.hostIP; use a literal value",
        f"{who}: spec.containers[0].args[12]: 9400 is not a string; quote it"]


def test_a_pod_without_the_replica_program_is_refused():
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"] = [{"name": "a", "command": ["sleep"]}, {"name": "b", "command": ["true"]}]
    with pytest.raises(ConfigError, match="several containers and none runs 'python -m spark_consumer'"):
        _spec(pod)


def test_binding_assigns_the_pod_to_the_agents_node():
    body = pr.binding(POD)
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "lagscale-local"}
    assert body["metadata"]["name"] == "lagscale-consumer-6d9f7b8c4-x2kqp"


def test_running_then_ready_then_unchanged():
    spec = _spec()
    status = pr.running_status(spec, T0, image="pytest-lagscale/spark-consumer:0.1.0")["status"]
    assert status["phase"] == "Running" and status["podIP"] == status["hostIP"] == "127.0.0.1"
    assert status["startTime"] == "2026-11-26T04:00:05Z"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "PodScheduled": "True", "Initialized": "True", "ContainersReady": "False", "Ready": "False"}
    assert status["containerStatuses"][0]["state"] == {"running": {"startedAt": "2026-11-26T04:00:05Z"}}
    pod = {**POD, "status": status}
    patch = pr.ready_patch(pod, spec, True, T1)["status"]
    assert {c["type"]: (c["status"], c["lastTransitionTime"]) for c in patch["conditions"]} == {
        "ContainersReady": ("True", "2026-11-26T04:00:17Z"), "Ready": ("True", "2026-11-26T04:00:17Z")}
    assert patch["containerStatuses"][0]["ready"] is True
    assert patch["containerStatuses"][0]["state"]["running"]["startedAt"] == "2026-11-26T04:00:05Z"
    ready_pod = {**POD, "status": {**status, "conditions": patch["conditions"]}}
    assert pr.ready_patch(ready_pod, spec, True, T1) is None
    assert pr.current_ready(ready_pod) is True and pr.current_ready(POD) is None


def test_failed_status_carries_the_exit_code():
    status = pr.failed_status(_spec(), 137, T0, T1)["status"]
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"] == {
        "exitCode": 137, "reason": "Error", "startedAt": "2026-11-26T04:00:05Z",
        "finishedAt": "2026-11-26T04:00:17Z"}


@pytest.mark.parametrize("meta, spec, grace", [
    pytest.param({}, {"terminationGracePeriodSeconds": 30}, 30.0, id="spec-grace"),
    pytest.param({"deletionGracePeriodSeconds": 5}, {"terminationGracePeriodSeconds": 30}, 5.0,
                 id="delete-call-grace-wins"),
    pytest.param({}, {}, 30.0, id="kubernetes-default-30s"),
    pytest.param({"deletionGracePeriodSeconds": 0}, {"terminationGracePeriodSeconds": 30}, 0.0,
                 id="force-delete-zero"),
])
def test_termination_grace(meta, spec, grace):
    assert pr.termination_grace_s({"metadata": meta, "spec": spec}) == grace


def test_terminating_and_final_delete():
    assert not pr.is_terminating(POD)
    deleting = {**POD, "metadata": {**POD["metadata"], "deletionTimestamp": "2026-11-26T04:05:00Z",
                                    "deletionGracePeriodSeconds": 30}}
    assert pr.is_terminating(deleting)
    assert pr.final_delete_options(deleting) == {
        "gracePeriodSeconds": 0, "preconditions": {"uid": "0b6f3c52-2f0e-4a3e-9b7e-3f1f4c1f9a10"}}


def test_selector_match():
    assert pr.matches_selector(POD, {"app.kubernetes.io/name": "lagscale-consumer"})
    assert not pr.matches_selector(POD, {"app.kubernetes.io/name": "other"})


def test_rfc3339_refuses_naive_times():
    with pytest.raises(ConfigError, match="a naive datetime"):
        pr.rfc3339(dt.datetime(2026, 1, 1))


def test_kubernetes_client_objects_serialize_to_the_shape_read_here():
    """The agent gets V1Pod objects from the client; sanitize_for_serialization gives the API's JSON."""
    client = pytest.importorskip("kubernetes.client", reason="kubernetes missing: pip install -e '.[kubernetes]'")
    api = client.ApiClient()
    body = {k: v for k, v in POD.items() if k != "_comment"}

    class Response:  # what older clients' ApiClient.deserialize reads
        data = json.dumps(body)

    try:  # kubernetes 37: deserialize(response_text, response_type, content_type)
        pod = api.deserialize(json.dumps(body), "V1Pod", "application/json")
    except TypeError:
        pod = api.deserialize(Response(), "V1Pod")
    assert isinstance(pod, client.V1Pod)
    again = api.sanitize_for_serialization(pod)
    assert pr.replica_spec(again, python="py").argv == ("py",) + _spec().argv[1:]
    assert pr.termination_grace_s(again) == 30.0


def _franz_pod() -> dict:
    """A pod of the bundled franz-go Deployment as the ReplicaSet makes it."""
    from pytest_lagscale.platform.kubernetes import deployment_object

    doc = deployment_object("k8s/franz-go-consumer-deployment-ci.yaml",
                            ("franz-go-consumer", "-balancer=range", "-metrics-addr=:$(METRICS_PORT)"),
                            {"KAFKA_BOOTSTRAP": "127.0.0.1:39092", "KAFKA_TOPIC": "events-r1"},
                            kind="command")
    template = doc["spec"]["template"]
    meta = {**template["metadata"], "name": "franz-go-consumer-5c-abcde", "namespace": "lagscale-run",
            "uid": "u-1"}
    return {"metadata": meta, "spec": template["spec"]}


def test_a_command_consumers_pod_runs_as_written_with_its_own_port_and_probe():
    spec = pr.replica_spec(_franz_pod(), python="/venv/bin/python", port=41999)
    assert spec.kind == "command"
    assert spec.argv == ("franz-go-consumer", "-balancer=range", "-metrics-addr=:41999")
    assert spec.port_env == "METRICS_PORT"
    assert spec.env["METRICS_PORT"] == "41999"
    assert (spec.env["KAFKA_BOOTSTRAP"], spec.env["KAFKA_TOPIC"], spec.env["KAFKA_GROUP"]) == (
        "127.0.0.1:39092", "events-r1", "enrich")
    assert spec.readiness is not None
    assert (spec.readiness.kind, spec.readiness.path, spec.readiness.port) == ("httpGet", "/healthz", 41999)
    # the node adds no per-replica flags to a command consumer; replica_argv is for the program
    assert "--metrics-port" not in " ".join(spec.argv)


def test_a_command_consumers_probe_on_another_port_keeps_that_port_and_exec_expands_its_env():
    pod = _franz_pod()
    container = pod["spec"]["containers"][0]
    container["readinessProbe"] = {"tcpSocket": {"port": 7000}}
    assert pr.replica_spec(pod, python="py", port=41999).readiness.port == 7000
    container["readinessProbe"] = {"exec": {"command": ["probe", "$(METRICS_PORT)"]}, "timeoutSeconds": 2}
    probe = pr.replica_spec(pod, python="py", port=41999).readiness
    assert (probe.kind, probe.command, probe.timeout_s) == ("exec", ("probe", "41999"), 2)


def test_a_command_consumer_without_a_probe_is_left_to_group_membership():
    pod = _franz_pod()
    del pod["spec"]["containers"][0]["readinessProbe"]
    spec = pr.replica_spec(pod, python="py", port=41999)
    assert (spec.kind, spec.readiness) == ("command", None)


def test_a_bad_probe_of_a_command_consumer_names_the_pod_and_the_field():
    pod = _franz_pod()
    pod["spec"]["containers"][0]["readinessProbe"] = {"grpc": {"port": 9400}}
    with pytest.raises(ConfigError, match=r"spec\.containers\[0\]\.readinessProbe.*exactly one of.*"
                                          r"in pod 'lagscale-run/franz-go-consumer-5c-abcde'"):
        pr.replica_spec(pod, python="py", port=41999)
