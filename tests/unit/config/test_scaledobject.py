"""Loading and validating the KEDA ScaledObject (docs/semantics.md §1.1, §2.1, §2.3, §2.5): exact messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.config.behavior import ScalingPolicy
from pytest_lagscale.config.harness import HarnessSettings
from pytest_lagscale.config.scaledobject import load_scaled_object, parse_scaled_object
from pytest_lagscale.contract.errors import ConfigError

from ._helpers import DELETE, K8S, committed, edited

SO = committed("scaledobject.yaml")
TRIGGER = ("spec", "triggers", 0)
META = ("spec", "triggers", 0, "metadata")


def test_committed_full_scale_manifest() -> None:
    config = load_scaled_object(K8S / "scaledobject.yaml")
    assert (config.name, config.scale_target_ref.name, config.hpa_name) == (
        "lagscale-consumer", "lagscale-consumer", "keda-hpa-lagscale-consumer")
    assert (config.min_replica_count, config.max_replica_count, config.hpa_min_replicas) == (1, 48, 1)
    assert (config.polling_interval_s, config.cooldown_period_s) == (15, 300)
    kafka = config.triggers[0].kafka
    assert kafka is not None
    assert (kafka.topic, kafka.consumer_group, kafka.lag_threshold, kafka.offset_reset_policy) == (
        "events", "enrich", 10000, "earliest")
    assert config.behavior is not None and config.fallback is not None
    assert config.behavior.scale_down.policies == (ScalingPolicy("Pods", 2, 60),)
    assert config.harness == HarnessSettings(15.0, 0.1, 300.0)


def test_committed_ci_manifest() -> None:
    config = load_scaled_object(K8S / "scaledobject-ci.yaml")
    assert (config.max_replica_count, config.polling_interval_s, config.triggers[0].kafka.lag_threshold) == (8, 2, 500)
    assert config.harness == HarnessSettings(3.0, 0.1, 30.0)


def test_2_1_defaults_when_fields_absent() -> None:
    doc = edited(SO, *[(("spec", key), DELETE) for key in
                      ("pollingInterval", "cooldownPeriod", "minReplicaCount", "maxReplicaCount", "fallback",
                       "advanced")], (("metadata", "annotations"), DELETE))
    config = parse_scaled_object(doc)
    assert (config.polling_interval_s, config.cooldown_period_s, config.min_replica_count,
            config.max_replica_count, config.hpa_min_replicas) == (30, 300, 0, 100, 1)
    assert (config.fallback, config.behavior, config.harness) == (None, None, HarnessSettings())


def _problems(doc: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_scaled_object(doc, source="so.yaml")
    return info.value.problems


BAD = [
    pytest.param(((("spec", "pollingIntervall"), 10),),
                 ["'spec.pollingIntervall': got 10, expected a known key of 'spec' in so.yaml; "
                  "rename it to 'spec.pollingInterval'"], id="unknown-key-suggests-nearest"),
    pytest.param(((("spec", "zzz"), 1),),
                 ["'spec.zzz': got 1, expected a known key of 'spec' in so.yaml; remove it (known keys: advanced, "
                  "cooldownPeriod, fallback, idleReplicaCount, initialCooldownPeriod, maxReplicaCount, "
                  "minReplicaCount, pollingInterval, scaleTargetRef, triggers)"], id="unknown-key-no-suggestion"),
    pytest.param(((("spec", "pollingInterval"), 0),),
                 ["'spec.pollingInterval': got 0, expected an integer >= 1 (seconds) in so.yaml; "
                  "raise it to at least 1"], id="2.1-polling-interval-min-1"),
    pytest.param(((("spec", "cooldownPeriod"), "300"),),
                 ["'spec.cooldownPeriod': got '300', expected an integer >= 0 (seconds) in so.yaml; "
                  "write a whole number without quotes, e.g. 0"], id="2.1-cooldown-is-an-integer"),
    pytest.param(((("spec", "minReplicaCount"), 50),),
                 ["'spec.minReplicaCount': got 50, expected <= spec.maxReplicaCount (48) in so.yaml; "
                  "lower minReplicaCount or raise maxReplicaCount"], id="2.1-min-le-max"),
    pytest.param(((("spec", "idleReplicaCount"), 1),),
                 ["'spec.idleReplicaCount': got 1, expected < spec.minReplicaCount (1) in so.yaml; "
                  "set idleReplicaCount to 0 and minReplicaCount to 1 or more, or remove idleReplicaCount"],
                 id="2.1-idle-lt-min"),
    pytest.param(((("spec", "maxReplicaCount"), True),),
                 ["'spec.maxReplicaCount': got True, expected an integer >= 1 (replicas) in so.yaml; "
                  "write a whole number without quotes, e.g. 1"], id="2.1-bool-is-not-an-integer"),
    pytest.param((((*META, "lagThreshold"), "-5"),),
                 ["'spec.triggers[0].metadata.lagThreshold': got '-5', expected an integer > 0 (offsets of lag per "
                  "replica) in so.yaml; set it to a positive integer, e.g. '1000'"], id="1.1-lag-threshold-positive"),
    pytest.param((((*META, "lagThreshold"), 1000),),
                 ["'spec.triggers[0].metadata.lagThreshold': got 1000, expected a string (KEDA trigger metadata "
                  "values are strings) in so.yaml; quote it: '1000'"], id="1.1-metadata-values-are-strings"),
    pytest.param((((*META, "offsetResetPolicy"), "earlist"),),
                 ["'spec.triggers[0].metadata.offsetResetPolicy': got 'earlist', expected one of {'latest', "
                  "'earliest'} in so.yaml; use 'earliest'"], id="1.1-offset-reset-policy-enum"),
    pytest.param((((*META, "partitionLimitation"), "1-b"),),
                 ["'spec.triggers[0].metadata.partitionLimitation': got '1-b', expected partition ids and ranges "
                  "such as '1,2,3', '1-4' or '1-4,8,10-12' in so.yaml; fix the partition limitation '1-b'"],
                 id="1.1-partition-limitation-syntax"),
    pytest.param((((*META, "topic"), DELETE), ((*META, "ensureEvenDistributionOfPartitions"), "true")),
                 ["'spec.triggers[0].metadata.ensureEvenDistributionOfPartitions': got 'true', expected 'false' when "
                  "no topic is set in so.yaml; add topic: 'events'"], id="1.1-even-needs-topic"),
    pytest.param((((*META, "topicFromEnv"), "TOPIC"),),
                 ["'spec.triggers[0].metadata.topicFromEnv': got 'TOPIC', expected a key lagscale simulates (not "
                  "'topicFromEnv') under 'spec.triggers[0].metadata' in so.yaml; write 'topic' inline: lagscale "
                  "does not resolve container env"], id="1.1-from-env-unsupported"),
    pytest.param((((*META, "sasl"), "plaintext"),),
                 ["'spec.triggers[0].metadata.sasl': got 'plaintext', expected 'none' without an authenticationRef "
                  "in so.yaml; add authenticationRef naming a TriggerAuthentication with the credentials"],
                 id="1.1-sasl-needs-credentials"),
    pytest.param((((*TRIGGER, "metricType"), "Utilization"),),
                 ["'spec.triggers[0].metricType': got 'Utilization', expected one of {'AverageValue', 'Value'} in "
                  "so.yaml; use one of {'AverageValue', 'Value'}"], id="1.1-kafka-utilization-rejected"),
    pytest.param((((*TRIGGER, "type"), "kafak"),),
                 ["'spec.triggers[0].type': got 'kafak', expected one of {'kafka', 'cpu', 'external', 'prometheus', 'aws-cloudwatch', 'metrics-api'} in so.yaml; "
                  "use 'kafka'"],
                 id="trigger-type-typo"),
    pytest.param(((("spec", "triggers"), []),),
                 ["'spec.triggers': got [], expected a non-empty list in so.yaml; add a kafka trigger"],
                 id="triggers-required"),
    pytest.param(((("spec", "fallback", "behavior"), "sticky"),),
                 ["'spec.fallback.behavior': got 'sticky', expected one of {'static', 'currentReplicas', "
                  "'currentReplicasIfHigher', 'currentReplicasIfLower'} in so.yaml; use 'static'"],
                 id="2.5-fallback-behavior-enum"),
    pytest.param(((("spec", "fallback", "replicas"), -1),),
                 ["'spec.fallback.replicas': got -1, expected an integer >= 0 (replicas) in so.yaml; "
                  "raise it to at least 0"], id="2.5-fallback-replicas-non-negative"),
    pytest.param(((("spec", "advanced", "scalingModifiers"), {"formula": "a"}),),
                 ["'spec.advanced.scalingModifiers': got {'formula': 'a'}, expected a key lagscale simulates (not "
                  "'scalingModifiers') under 'spec.advanced' in so.yaml; remove it: lagscale does not simulate "
                  "scalingModifiers"], id="2.3-scaling-modifiers-unsupported"),
    pytest.param(((("spec", "scaleTargetRef", "kind"), "StatefulSet"),),
                 ["'spec.scaleTargetRef.kind': got 'StatefulSet', expected one of {'Deployment'} in so.yaml; "
                  "use one of {'Deployment'}"], id="scale-target-deployment-only"),
    pytest.param(((("apiVersion",), "keda.sh/v1"),),
                 ["'apiVersion': got 'keda.sh/v1', expected 'keda.sh/v1alpha1' in so.yaml; "
                  "set apiVersion: keda.sh/v1alpha1"], id="api-version"),
    pytest.param(((("metadata", "annotations", "lagscale.dev/hpa-tolerance"), "10%"),),
                 ["'metadata.annotations[\"lagscale.dev/hpa-tolerance\"]': got '10%', expected a decimal number in "
                  "[0, 1) in so.yaml; set it to a value in range, e.g. '0.1'"], id="harness-tolerance-number"),
    pytest.param(((("metadata", "annotations", "lagscale.dev/hpa-sync-period"), "15"),),
                 ["'metadata.annotations[\"lagscale.dev/hpa-sync-period\"]': got '15', expected a known key of "
                  "'metadata.annotations' in so.yaml; rename it to "
                  "'metadata.annotations[\"lagscale.dev/hpa-sync-period-seconds\"]'"], id="harness-unknown-key"),
]


@pytest.mark.parametrize(("edits", "problems"), BAD)
def test_bad_scaled_object(edits: tuple, problems: list[str]) -> None:
    assert _problems(edited(SO, *edits)) == problems


def test_all_problems_reported_at_once_in_document_order() -> None:
    doc = edited(SO, (("spec", "pollingInterval"), -3), ((*META, "lagThreshold"), "x"),
                 (("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleUp",
                   "selectPolicy"), "Maximum"))
    assert _problems(doc) == [
        "'spec.pollingInterval': got -3, expected an integer >= 1 (seconds) in so.yaml; raise it to at least 1",
        "'spec.triggers[0].metadata.lagThreshold': got 'x', expected an integer > 0 (offsets of lag per replica) "
        "in so.yaml; write digits only, e.g. '1000'",
        "'spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.selectPolicy': got 'Maximum', expected one "
        "of {'Max', 'Min', 'Disabled'} in so.yaml; use 'Max'",
    ]


def test_cpu_only_needs_min_one_and_no_fallback() -> None:
    cpu = {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}
    doc = edited(SO, (("spec", "triggers"), [cpu]), (("spec", "minReplicaCount"), 0))
    assert _problems(doc) == [
        "'spec.fallback': got {'failureThreshold': 3, 'replicas': 6}, expected a fallback beside at least one "
        "non-cpu trigger in so.yaml; remove fallback (cpu triggers do not support it) or add a kafka trigger",
        "'spec.minReplicaCount': got 0, expected an integer >= 1 when every trigger is cpu (replicas) in so.yaml; "
        "set minReplicaCount: 1",
    ]


def test_cpu_trigger_parsed() -> None:
    cpu = {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "70"}}
    config = parse_scaled_object(edited(SO, (("spec", "triggers"), [SO["spec"]["triggers"][0], cpu])))
    assert (config.triggers[1].type, config.triggers[1].cpu_utilization_percent) == ("cpu", 70)


def test_duplicate_trigger_names() -> None:
    named = dict(SO["spec"]["triggers"][0], name="lag")
    assert _problems(edited(SO, (("spec", "triggers"), [named, named]))) == [
        "'spec.triggers[1].name': got 'lag', expected a name unique among the triggers in so.yaml; "
        "rename one of them"]


@pytest.mark.parametrize(("text", "problem"), [
    pytest.param("spec: [", "got invalid YAML at line 1 (expected the node content, but found '<stream end>'), "
                 "expected one YAML document in {path}; fix the syntax", id="invalid-yaml"),
    pytest.param("a: 1\n---\nb: 2\n", "got 2 YAML documents, expected exactly 1 in {path}; keep one object per file",
                 id="two-documents"),
])
def test_yaml_file_errors(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "so.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_scaled_object(path)
    assert str(info.value) == f"'{path}': " + problem.format(path=path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError) as info:
        load_scaled_object(path)
    assert str(info.value) == (f"'{path}': got 'No such file or directory', expected a readable YAML file in {path}; "
                               "check the path")
