"""Loading the consumer Deployment, the CPU HPA, behavior defaults and the cross-file checks."""

from __future__ import annotations

import pytest

from pytest_lagscale.config.behavior import DEFAULT_SCALE_DOWN, DEFAULT_SCALE_UP, ScalingRules, parse_behavior
from pytest_lagscale.config.deployment import LivenessProbe, load_deployment, parse_deployment
from pytest_lagscale.config.hpa import load_cpu_hpa, parse_cpu_hpa
from pytest_lagscale.config.manifests import check_manifests, load_manifests, manifest_paths
from pytest_lagscale.contract.errors import ConfigError

from ._helpers import DELETE, K8S, committed, edited

DEPLOYMENT = committed("consumer-deployment.yaml")
HPA = committed("hpa-cpu.yaml")
POD = ("spec", "template", "spec")
CONTAINER = (*POD, "containers", 0)
ARGS = (*CONTAINER, "args")
CPATH = "spec.template.spec.containers[0]"


def test_committed_deployment() -> None:
    config = load_deployment(K8S / "consumer-deployment.yaml")
    replica = config.replica
    assert (config.name, config.termination_grace_period_s, config.cpu_request_millicores) == (
        "lagscale-consumer", 45, 500)
    assert (replica.bootstrap, replica.topic, replica.group, replica.balancer, replica.commit) == (
        "lagscale-kafka:9092", "events", "enrich", "cooperative-sticky", "manual")
    assert (replica.process_ms, replica.inflight, replica.drain_timeout_s, replica.metrics_port, replica.store) == (
        5.0, 8, 30.0, 9400, "/data/store")
    assert (config.readiness.path, config.readiness.port, config.readiness.period_s) == ("/ready", 9400, 2)
    assert config.argv[:3] == ("python", "-m", "spark_consumer")


@pytest.mark.parametrize("name", ["consumer-deployment.yaml", "consumer-deployment-ci.yaml"])
def test_committed_liveness_probe(name: str) -> None:
    assert load_deployment(K8S / name).liveness == LivenessProbe(
        path="/healthz", port=9400, initial_delay_s=0, period_s=2, timeout_s=1, success_threshold=1,
        failure_threshold=8, termination_grace_period_s=None)


LIVENESS = (*CONTAINER, "livenessProbe")


def test_liveness_probe_takes_the_kubernetes_defaults() -> None:
    doc = edited(DEPLOYMENT, (LIVENESS, {"httpGet": {"path": "/healthz", "port": "metrics"}}))
    assert parse_deployment(doc).liveness == LivenessProbe(
        path="/healthz", port=9400, initial_delay_s=0, period_s=10, timeout_s=1, success_threshold=1,
        failure_threshold=3, termination_grace_period_s=None)


def test_liveness_probe_is_optional_and_its_own_grace_period_is_read() -> None:
    assert parse_deployment(edited(DEPLOYMENT, (LIVENESS, DELETE))).liveness is None
    doc = edited(DEPLOYMENT, ((*LIVENESS, "terminationGracePeriodSeconds"), 10),
                 ((*LIVENESS, "initialDelaySeconds"), 15), ((*LIVENESS, "timeoutSeconds"), 2))
    probe = parse_deployment(doc).liveness
    assert (probe.termination_grace_period_s, probe.initial_delay_s, probe.timeout_s) == (10, 15, 2)


LPATH = f"{CPATH}.livenessProbe"
BAD_LIVENESS = [
    pytest.param("periodSeconds", 0, f"'{LPATH}.periodSeconds': got 0, expected an integer >= 1 (seconds) in "
                 "deploy.yaml; raise it to at least 1", id="period-zero"),
    pytest.param("periodSeconds", "5", f"'{LPATH}.periodSeconds': got '5', expected an integer >= 1 (seconds) in "
                 "deploy.yaml; write a whole number without quotes, e.g. 1", id="period-string"),
    pytest.param("failureThreshold", 0, f"'{LPATH}.failureThreshold': got 0, expected an integer >= 1 in "
                 "deploy.yaml; raise it to at least 1", id="failure-threshold-zero"),
    pytest.param("timeoutSeconds", 0, f"'{LPATH}.timeoutSeconds': got 0, expected an integer >= 1 (seconds) in "
                 "deploy.yaml; raise it to at least 1", id="timeout-zero"),
    pytest.param("initialDelaySeconds", -1, f"'{LPATH}.initialDelaySeconds': got -1, expected an integer >= 0 "
                 "(seconds) in deploy.yaml; raise it to at least 0", id="initial-delay-negative"),
    pytest.param("successThreshold", 2, f"'{LPATH}.successThreshold': got 2, expected 1 (Kubernetes requires 1 for "
                 "a liveness probe) in deploy.yaml; set successThreshold: 1 or leave it out", id="success-threshold"),
    pytest.param("terminationGracePeriodSeconds", 0, f"'{LPATH}.terminationGracePeriodSeconds': got 0, expected an "
                 "integer >= 1 (seconds) in deploy.yaml; raise it to at least 1", id="probe-grace-zero"),
    pytest.param("periodSecond", 5, f"'{LPATH}.periodSecond': got 5, expected a known key of '{LPATH}' in "
                 f"deploy.yaml; rename it to '{LPATH}.periodSeconds'", id="unknown-key"),
]


@pytest.mark.parametrize(("key", "value", "problem"), BAD_LIVENESS)
def test_bad_liveness_probe_field(key: str, value: object, problem: str) -> None:
    assert _deployment_problems(edited(DEPLOYMENT, ((*LIVENESS, key), value))) == [problem]


@pytest.mark.parametrize(("probe", "problem"), [
    pytest.param({"exec": {"command": ["true"]}, "periodSeconds": 5},
                 f"'{LPATH}.httpGet': got no value, expected an httpGet probe (the harness runs HTTP probes only) in "
                 "deploy.yaml; replace exec with httpGet: {path: /healthz, port: metrics}", id="exec-probe"),
    pytest.param({"httpGet": {"path": "/healthz", "port": 8080}},
                 f"'{LPATH}.httpGet.port': got 8080, expected the --metrics-port (9400) in deploy.yaml; set the "
                 "probe port to 9400", id="port-is-metrics-port"),
    pytest.param("yes", f"'{LPATH}': got 'yes', expected a mapping in deploy.yaml; write '{LPATH}' as a YAML mapping "
                 "of key: value", id="not-a-mapping"),
])
def test_bad_liveness_probe(probe: object, problem: str) -> None:
    assert _deployment_problems(edited(DEPLOYMENT, (LIVENESS, probe))) == [problem]


def test_replica_flags_space_separated_and_escaped_var() -> None:
    doc = edited(DEPLOYMENT, ((*CONTAINER, "command"), ["spark-consumer"]),
                 (ARGS, ["--bootstrap", "$$(LITERAL)", "--topic", "events", "--group", "enrich", "--balancer", "range",
                         "--process-ms", "0", "--inflight", "1", "--commit", "auto", "--drain-timeout", "10",
                         "--metrics-port", "9400", "--store", "/s", "--engine", "arrow"]))
    replica = parse_deployment(doc).replica
    assert (replica.bootstrap, replica.balancer, replica.engine, replica.drain_timeout_s) == (
        "$(LITERAL)", "range", "arrow", 10.0)


def _deployment_problems(doc: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_deployment(doc, source="deploy.yaml")
    return info.value.problems


BAD_DEPLOYMENTS = [
    pytest.param((((*POD, "terminationGracePeriodSeconds"), 30),),
                 ["'spec.template.spec.terminationGracePeriodSeconds': got 30, expected an integer > --drain-timeout "
                  "(30 seconds) in deploy.yaml; set it to at least 40 so the drain ends before SIGKILL"],
                 id="grace-period-exceeds-drain-timeout"),
    pytest.param((((*ARGS, 4), "--process-ms=fast"),),
                 [f"'{CPATH}.args[--process-ms]': got 'fast', expected a number of ms in 0..60000 in "
                  "deploy.yaml; write e.g. '--process-ms=5'"], id="flag-value-type"),
    pytest.param((((*ARGS, 3), "--balancer=sticky"),),
                 [f"'{CPATH}.args[--balancer]': got 'sticky', expected one of cooperative-sticky, range, roundrobin, "
                  "consumer in deploy.yaml; write e.g. '--balancer=cooperative-sticky'"], id="flag-enum"),
    pytest.param((((*ARGS, 5), "--in-flight=500"),),
                 [f"'{CPATH}.args[--in-flight=500]': got '--in-flight=500', expected a flag of the replica contract "
                  "in deploy.yaml; rename it to '--inflight'",
                  f"'{CPATH}.args[--inflight]': got no value, expected a whole number of records in 1..100000 in deploy.yaml; "
                  "add '--inflight=500' to args"], id="unknown-flag-suggests-nearest"),
    pytest.param((((*CONTAINER, "command"), ["python", "app.py"]),),
                 # any other program is a command consumer: the harness reaches it through its env only
                 [f"'{CPATH}.env': got ['KAFKA_BOOTSTRAP'], expected an env entry with a literal value for each "
                  "of KAFKA_BOOTSTRAP, KAFKA_TOPIC, KAFKA_GROUP in deploy.yaml; add KAFKA_TOPIC, KAFKA_GROUP (the "
                  "harness gives the consumer its broker, topic and group through them)"],
                 id="command-consumer-needs-connection-env"),
    pytest.param((((*CONTAINER, "readinessProbe", "httpGet", "port"), 8080),),
                 [f"'{CPATH}.readinessProbe.httpGet.port': got 8080, expected the --metrics-port (9400) in "
                  "deploy.yaml; set the probe port to 9400"], id="probe-port-is-metrics-port"),
    pytest.param((((*CONTAINER, "readinessProbe", "httpGet", "port"), "http"),),
                 [f"'{CPATH}.readinessProbe.httpGet.port': got 'http', expected a port number in [1, 65535] or the "
                  "name of a container port in deploy.yaml; use the metrics port, e.g. 9400"],
                 id="probe-named-port-unknown"),
    pytest.param((((*CONTAINER, "readinessProbe"), DELETE),),
                 [f"'{CPATH}.readinessProbe': got no value, expected an httpGet probe on /ready in deploy.yaml; add "
                  "readinessProbe: {httpGet: {path: /ready, port: metrics}}"], id="probe-required"),
    pytest.param((((*CONTAINER, "imagePullPolicyy"), "Always"),),
                 [f"'{CPATH}.imagePullPolicyy': got 'Always', expected a known key of '{CPATH}' in deploy.yaml; "
                  f"rename it to '{CPATH}.imagePullPolicy'"], id="unknown-container-key"),
    pytest.param((((*CONTAINER, "resources", "requests", "cpu"), "half"),),
                 [f"'{CPATH}.resources.requests.cpu': got 'half', expected a CPU quantity such as '500m' or '1' in "
                  "deploy.yaml; write millicores as '500m' or cores as '1'"], id="cpu-quantity"),
    pytest.param(((("spec", "selector", "matchLabels", "tier"), "x"),),
                 ["'spec.selector.matchLabels.tier': got 'x', expected a label also set in "
                  "spec.template.metadata.labels in deploy.yaml; add tier: x to the template labels"],
                 id="selector-matches-template"),
]


@pytest.mark.parametrize(("edits", "problems"), BAD_DEPLOYMENTS)
def test_bad_deployment(edits: tuple, problems: list[str]) -> None:
    assert _deployment_problems(edited(DEPLOYMENT, *edits)) == problems


def test_committed_cpu_hpas() -> None:
    full, ci = load_cpu_hpa(K8S / "hpa-cpu.yaml"), load_cpu_hpa(K8S / "hpa-cpu-ci.yaml")
    assert (full.min_replicas, full.max_replicas, full.target_utilization_percent) == (1, 48, 70)
    assert (ci.max_replicas, ci.harness.hpa_sync_period_s) == (8, 3.0)


BAD_HPAS = [
    pytest.param(((("spec", "minReplicas"), 0),),
                 ["'spec.minReplicas': got 0, expected an integer >= 1 (replicas) in hpa.yaml; raise it to at least 1"],
                 id="min-replicas-ge-1"),
    pytest.param(((("spec", "maxReplicas"), DELETE),),
                 ["'spec.maxReplicas': got no value, expected an integer >= 1 (replicas) in hpa.yaml; "
                  "add 'spec.maxReplicas', e.g. 1"], id="max-replicas-required"),
    pytest.param(((("spec", "metrics", 0, "resource", "name"), "memory"),),
                 ["'spec.metrics[0].resource.name': got 'memory', expected one of {'cpu'} in hpa.yaml; "
                  "use one of {'cpu'}"], id="cpu-only"),
    pytest.param(((("spec", "metrics", 0, "resource", "target", "averageUtilization"), 0),),
                 ["'spec.metrics[0].resource.target.averageUtilization': got 0, expected an integer >= 1 (percent of "
                  "requests) in hpa.yaml; raise it to at least 1"], id="utilization-positive"),
    pytest.param(((("spec", "behavior", "scaleDown", "stabilizationWindowSeconds"), -1),),
                 ["'spec.behavior.scaleDown.stabilizationWindowSeconds': got -1, expected an integer in [0, 3600] "
                  "(seconds) in hpa.yaml; raise it to at least 0"], id="3.4-window-range"),
]


@pytest.mark.parametrize(("edits", "problems"), BAD_HPAS)
def test_bad_cpu_hpa(edits: tuple, problems: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_cpu_hpa(edited(HPA, *edits), source="hpa.yaml")
    assert info.value.problems == problems


@pytest.mark.parametrize(("doc", "up", "down"), [
    pytest.param({}, DEFAULT_SCALE_UP, DEFAULT_SCALE_DOWN, id="3.4-empty-behavior-all-defaults"),
    pytest.param({"scaleDown": {"selectPolicy": "Min"}}, DEFAULT_SCALE_UP,
                 ScalingRules(None, "Min", DEFAULT_SCALE_DOWN.policies), id="3.4-partial-direction-keeps-defaults"),
    pytest.param({"scaleUp": {"stabilizationWindowSeconds": 60}}, ScalingRules(60, "Max", DEFAULT_SCALE_UP.policies),
                 DEFAULT_SCALE_DOWN, id="3.4-window-overrides-only-window"),
])
def test_3_4_behavior_defaults(doc: dict, up: ScalingRules, down: ScalingRules) -> None:
    parsed = parse_behavior(doc)
    assert (parsed.scale_up, parsed.scale_down) == (up, down)


def test_committed_manifests_agree() -> None:
    manifests = load_manifests(K8S / "consumer-deployment.yaml", K8S / "scaledobject-ci.yaml", K8S / "hpa-cpu-ci.yaml")
    assert manifests.scaled_object is not None and manifests.cpu_hpa is not None


def test_cross_file_disagreements() -> None:
    manifests = load_manifests(K8S / "consumer-deployment.yaml", K8S / "scaledobject.yaml")
    deployment = parse_deployment(edited(DEPLOYMENT, (("metadata", "name"), "other"), ((*ARGS, 1), "--topic=orders"),
                                         ((*CONTAINER, "resources"), DELETE)), source="d.yaml")
    so = manifests.scaled_object
    assert so is not None
    with pytest.raises(ConfigError) as info:
        check_manifests(type(manifests)(deployment=deployment, scaled_object=so))
    source = so.source
    assert info.value.problems == [
        f"'spec.scaleTargetRef.name': got 'lagscale-consumer', expected the Deployment's name ('other', d.yaml) in "
        f"{source}; set it to 'other'",
        f"'spec.triggers[0].metadata.topic': got 'events', expected the Deployment's --topic ('orders', d.yaml) in "
        f"{source}; use the same topic in both files",
    ]


@pytest.mark.parametrize(("scale", "suffix"), [pytest.param("ci", "-ci", id="ci"), pytest.param("full", "", id="full")])
def test_manifest_paths_per_scale(scale: str, suffix: str) -> None:
    paths = manifest_paths(scale)
    assert paths["scaled_object"].name == f"scaledobject{suffix}.yaml"
    assert paths["deployment"].name == f"consumer-deployment{suffix}.yaml"
    assert all(path.is_file() for path in paths.values())
    assert load_manifests(**paths).scaled_object is not None


def test_manifest_paths_unknown_scale() -> None:
    with pytest.raises(ConfigError) as info:
        manifest_paths("huge")
    assert str(info.value) == "'--lagscale-scale': got 'huge', expected one of ci, full in the command line; use ci or full"
