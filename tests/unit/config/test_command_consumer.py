"""A Deployment whose container runs any other program: a command consumer, known to the
harness through its env (KAFKA_*), its probes and the local-port annotation."""

from __future__ import annotations

import pytest

from pytest_lagscale.config.deployment import CommandConsumer, load_deployment, parse_deployment
from pytest_lagscale.contract.errors import ConfigError

from ._helpers import DELETE, K8S, committed, edited

FRANZ = committed("franz-go-consumer-deployment-ci.yaml")
CONTAINER = ("spec", "template", "spec", "containers", 0)
CPATH = "spec.template.spec.containers[0]"
ANNOTATION = ("spec", "template", "metadata", "annotations", "pytest-lagscale.io/local-port-env")


def _problems(doc: object) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_deployment(doc, source="deploy.yaml")
    return list(info.value.problems)


@pytest.mark.parametrize("name", ["franz-go-consumer-deployment-ci.yaml",
                                  "franz-go-consumer-deployment.yaml"])
def test_the_committed_franz_go_deployments_are_command_consumers(name: str) -> None:
    config = load_deployment(K8S / name)
    assert (config.kind, config.replica, config.topic, config.group) == (
        "command", None, "events", "enrich")
    assert config.command == CommandConsumer(
        topic="events", group="enrich", raw_args=config.command.raw_args, port_env="METRICS_PORT",
        port=9400, output_topic="events-processed")
    assert config.command.raw_args[0] == "franz-go-consumer"
    assert "-metrics-addr=:$(METRICS_PORT)" in config.command.raw_args  # expanded per replica
    assert (config.readiness.kind, config.readiness.path, config.readiness.port) == (
        "httpGet", "/healthz", 9400)


def test_the_connection_env_is_required() -> None:
    doc = edited(FRANZ, ((*CONTAINER, "env"), [{"name": "KAFKA_BOOTSTRAP", "value": "k:9092"}]),
                 (ANNOTATION, DELETE))
    assert _problems(doc) == [
        f"'{CPATH}.env': got ['KAFKA_BOOTSTRAP'], expected an env entry with a literal value for "
        "each of KAFKA_BOOTSTRAP, KAFKA_TOPIC, KAFKA_GROUP in deploy.yaml; add KAFKA_TOPIC, "
        "KAFKA_GROUP (the harness gives the consumer its broker, topic and group through them)"]


def test_without_a_readiness_probe_the_consumer_is_ready_by_group_membership() -> None:
    config = parse_deployment(edited(FRANZ, ((*CONTAINER, "readinessProbe"), DELETE)))
    assert config.readiness is None


@pytest.mark.parametrize("probe, expect", [
    ({"tcpSocket": {"port": "metrics"}}, ("tcpSocket", 9400, ())),
    ({"exec": {"command": ["test", "-e", "/tmp/$(KAFKA_GROUP)"]}}, ("exec", 0, ("test", "-e", "/tmp/enrich"))),
])
def test_tcp_and_exec_probes_are_read_as_a_kubelet_runs_them(probe: dict, expect: tuple) -> None:
    config = parse_deployment(edited(FRANZ, ((*CONTAINER, "readinessProbe"), probe)))
    assert (config.readiness.kind, config.readiness.port, config.readiness.command) == expect


@pytest.mark.parametrize("probe, problem", [
    ({"httpGet": {"path": "/", "port": 1}, "tcpSocket": {"port": 1}},
     f"'{CPATH}.readinessProbe': got ['httpGet', 'tcpSocket'], expected exactly one of httpGet, "
     "tcpSocket or exec in deploy.yaml; e.g. httpGet: {path: /ready, port: metrics}"),
    ({"exec": {"command": []}},
     f"'{CPATH}.readinessProbe.exec.command': got no value, expected a non-empty list of "
     "strings in deploy.yaml; e.g. command: [cat, /tmp/ready]"),
])
def test_a_bad_probe_is_refused(probe: dict, problem: str) -> None:
    assert problem in _problems(edited(FRANZ, ((*CONTAINER, "readinessProbe"), probe)))


def test_the_port_annotation_must_name_a_variable_holding_a_container_port() -> None:
    assert _problems(edited(FRANZ, (ANNOTATION, "NO_SUCH_VAR"))) == [
        "'spec.template.metadata.annotations[pytest-lagscale.io/local-port-env]': got "
        "'NO_SUCH_VAR', expected the name of an env variable whose value is one of the "
        "container's containerPorts (9400) in deploy.yaml; add the variable, e.g. {name: "
        "METRICS_PORT, value: '9400'}, and use $(METRICS_PORT) in args"]
