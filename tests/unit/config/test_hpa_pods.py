"""The Pods-metric HPA manifests (hpa-pods-lag*.yaml): committed values, quantities, and every
problem at once with field, value and allowed range."""

from __future__ import annotations

import pytest

from pytest_lagscale.config.hpa import load_hpa, parse_hpa, quantity_milli
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.config.bundled import data_path
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.load.profiles import load_profile

from ._helpers import DELETE, K8S, committed, edited

HPA = committed("hpa-pods-lag-ci.yaml")
M = ("spec", "metrics", 0)
TARGET = "a quantity > 0 (e.g. '2000', '100k', '1500m'; records of lag per pod for consumer_records_lag)"
NAME = "a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"


@pytest.mark.parametrize(("name", "max_replicas", "milli", "profile"), [
    pytest.param("hpa-pods-lag.yaml", 24, 100_000_000, "spike", id="article-targetAverageValue-100000-P24"),
    pytest.param("hpa-pods-lag-ci.yaml", 8, 2_000_000, "spike-ci", id="ci-2000-P8"),
])
def test_committed_pods_hpas(name: str, max_replicas: int, milli: int, profile: str) -> None:
    config = load_policy_manifest(K8S / name)
    assert config.kind == "HorizontalPodAutoscaler" and config.metric_type == "Pods"
    assert config.pods_metric is not None and config.target_utilization_percent is None
    assert (config.pods_metric.metric_name, config.pods_metric.target_average_milli) == ("consumer_records_lag", milli)
    partitions = load_profile(data_path("profiles", f"{profile}.yaml")).partitions
    assert config.max_replicas == max_replicas == partitions  # maxReplicas = P
    assert load_hpa(K8S / "hpa-cpu-ci.yaml").metric_type == "Resource"


@pytest.mark.parametrize(("text", "milli"), [
    pytest.param("2000", 2_000_000, id="plain"),
    pytest.param(2000, 2_000_000, id="yaml-int"),
    pytest.param("100k", 100_000_000, id="decimal-suffix"),
    pytest.param("1500m", 1500, id="milli"),
    pytest.param("1Ki", 1_024_000, id="binary-suffix"),
    pytest.param("1e3", 1_000_000, id="exponent"),
    pytest.param("0.5m", 1, id="MilliValue-rounds-up"),
    pytest.param("lots", None, id="not-a-quantity"),
    pytest.param(True, None, id="bool"),
])
def test_quantity_milli(text, milli) -> None:
    assert quantity_milli(text) == milli


BAD = [
    pytest.param(((M + ("type",), "External"),),
                 ["'spec.metrics[0].type': got 'External', expected one of {'Resource', 'Pods'} in hpa.yaml; "
                  "use one of {'Resource', 'Pods'}"], id="metric-type"),
    pytest.param(((M + ("pods", "target", "averageValue"), "0"),),
                 [f"'spec.metrics[0].pods.target.averageValue': got '0', expected {TARGET} in hpa.yaml; "
                  "write a positive number, quoted, e.g. '2000'"], id="average-value-positive"),
    pytest.param(((M + ("pods", "target", "averageValue"), "lots"),),
                 [f"'spec.metrics[0].pods.target.averageValue': got 'lots', expected {TARGET} in hpa.yaml; "
                  "write a positive number, quoted, e.g. '2000'"], id="average-value-quantity"),
    pytest.param(((M + ("pods", "target", "averageValue"), DELETE),),
                 [f"'spec.metrics[0].pods.target.averageValue': got no value, expected {TARGET} in hpa.yaml; "
                  "add 'spec.metrics[0].pods.target.averageValue', e.g. '2000'"], id="average-value-required"),
    pytest.param(((M + ("pods", "target", "type"), "Value"),),
                 ["'spec.metrics[0].pods.target.type': got 'Value', expected one of {'AverageValue'} in hpa.yaml; "
                  "use one of {'AverageValue'}"], id="average-value-only"),
    pytest.param(((M + ("pods", "metric", "selector"), {"matchLabels": {"topic": "events"}}),),
                 ["'spec.metrics[0].pods.metric.selector': got {'matchLabels': {'topic': 'events'}}, expected a key "
                  "lagscale simulates (not 'selector') under 'spec.metrics[0].pods.metric' in hpa.yaml; remove it: "
                  "the local platform reads every series of the metric per pod"], id="selector-not-simulated"),
    pytest.param(((M + ("resource",), {"name": "cpu"}),),
                 ["'spec.metrics[0].resource': got {'name': 'cpu'}, expected a known key of 'spec.metrics[0]' in "
                  "hpa.yaml; remove it (known keys: pods, type)"], id="resource-beside-pods"),
    pytest.param(((M + ("pods", "target", "averageValue"), 0), (("spec", "maxReplicas"), DELETE),
                  (M + ("pods", "metric", "name"), "consumer-records-lag")),
                 ["'spec.maxReplicas': got no value, expected an integer >= 1 (replicas) in hpa.yaml; "
                  "add 'spec.maxReplicas', e.g. 1",
                  f"'spec.metrics[0].pods.metric.name': got 'consumer-records-lag', expected {NAME} in hpa.yaml; "
                  "use the series name the replicas export, e.g. 'consumer_records_lag'",
                  f"'spec.metrics[0].pods.target.averageValue': got 0, expected {TARGET} in hpa.yaml; "
                  "write a positive number, quoted, e.g. '2000'"], id="every-problem-at-once"),
]


@pytest.mark.parametrize(("edits", "problems"), BAD)
def test_bad_pods_hpa(edits: tuple, problems: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse_hpa(edited(HPA, *edits), source="hpa.yaml")
    assert info.value.problems == problems
