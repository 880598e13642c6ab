"""The plan of a run whose Deployment runs a command consumer (the lab's franz-go consumer):
what it takes from the manifest, which run options it refuses, and the local template."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.plan import plan_run
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.platform import check_plan
from pytest_lagscale.platform.local import template_from_deployment

SPIKE_CI = Path("fixtures/profiles/spike-ci.yaml")
FRANZ = "k8s/franz-go-consumer-deployment-ci.yaml"


def test_a_command_consumer_plans_with_its_own_balancer_and_no_replica_flags() -> None:
    plan = plan_run(RunSettings(SPIKE_CI, deployment=FRANZ))
    assert (plan.deployment.kind, plan.engine, plan.balancer, plan.capacity_per_s) == (
        "command", "command", "cooperative-sticky", None)
    assert plan.flag_overrides == {}


def test_balancer_rewrites_the_arg_that_names_it() -> None:
    plan = plan_run(RunSettings(SPIKE_CI, deployment=FRANZ, balancer="range"))
    assert (plan.balancer, plan.flag_overrides) == ("range", {"-balancer": "range"})
    template = template_from_deployment(
        plan.deployment, "127.0.0.1:9092", flag_overrides=plan.flag_overrides,
        connection={"KAFKA_TOPIC": "events-r1", "KAFKA_GROUP": "enrich-r1",
                    "KAFKA_OUTPUT_TOPIC": "events-processed-r1"})
    assert template.kind == "command" and "-balancer=range" in template.argv
    assert template.argv[0] == "franz-go-consumer" and "--replica-id" not in template.argv
    assert {k: template.env[k] for k in ("KAFKA_BOOTSTRAP", "KAFKA_TOPIC", "KAFKA_GROUP",
                                         "KAFKA_OUTPUT_TOPIC")} == {
        "KAFKA_BOOTSTRAP": "127.0.0.1:9092", "KAFKA_TOPIC": "events-r1",
        "KAFKA_GROUP": "enrich-r1", "KAFKA_OUTPUT_TOPIC": "events-processed-r1"}
    assert (template.port_env, template.container_port) == ("METRICS_PORT", 9400)
    assert (template.readiness.kind, template.readiness.path) == ("httpGet", "/healthz")


@pytest.mark.parametrize("option, value", [("engine", "arrow"), ("trigger_interval_s", 1.0),
                                           ("static_membership", True)])
def test_options_of_the_replica_program_are_refused(option: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        plan_run(RunSettings(SPIKE_CI, deployment=FRANZ, **{option: value}))
    assert "a flag of the replica program, but" in str(info.value)
    assert "runs a command consumer (franz-go-consumer)" in str(info.value)


def test_the_kubernetes_deployment_of_a_command_consumer_keeps_its_container_with_the_runs_env() -> None:
    from pytest_lagscale.platform.kubernetes import deployment_object

    plan = plan_run(RunSettings(SPIKE_CI, deployment=FRANZ, balancer="range"))
    template = template_from_deployment(plan.deployment, "127.0.0.1:39092",
                                        flag_overrides={"-balancer": "range"},
                                        connection={"KAFKA_TOPIC": "events-r1"})
    body = deployment_object(FRANZ, template.argv, dict(template.env), kind="command")
    container = body["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["franz-go-consumer", "-balancer=range"]
    assert container["args"] == []
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (env["KAFKA_BOOTSTRAP"], env["KAFKA_TOPIC"], env["METRICS_PORT"]) == (
        "127.0.0.1:39092", "events-r1", "9400")
    assert body["spec"]["replicas"] == 0
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
