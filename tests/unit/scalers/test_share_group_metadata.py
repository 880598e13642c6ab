"""The share-group scaler's metadata: required keys, ranges, KEDA's own keys, consumer-group keys
refused with a fix, every problem at once."""

from __future__ import annotations

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.scalers import SCALER_KINDS, metadata_parser, servicer_class
from pytest_lagscale.scalers.share_group import ShareGroupSettings, parse_metadata

SRC = "ScaledObject default/c scalerMetadata"
GOOD = {"bootstrapServers": "kafka:9092", "shareGroup": "enrich-share", "topic": "my.topic_1", "lagThreshold": "500"}


def test_defaults_keda_keys_and_the_metric_name() -> None:
    got = parse_metadata({**GOOD, "scalerAddress": "share-scaler:6000", "enableTLS": "false"}, source=SRC)
    assert got == ShareGroupSettings("kafka:9092", "enrich-share", "my.topic_1", 500, 0)
    assert got.metric_name == "share-group-lag-my-topic-1"
    assert parse_metadata({**GOOD, "activationLagThreshold": "20"}).activation_lag_threshold == 20


def test_every_problem_at_once_each_naming_key_value_and_range() -> None:
    with pytest.raises(ConfigError) as info:
        parse_metadata({"bootstrapServers": "kafka:9092", "lagThreshold": "0", "activationLagThreshold": "-1",
                        "consumerGroup": "enrich"}, source=SRC)
    problems = info.value.problems
    assert len(problems) == 5, problems
    text = "\n".join(problems)
    assert "'shareGroup'" in text and "'topic'" in text
    assert f"'lagThreshold': got '0', expected an integer > 0 (records of share-group lag per replica) in {SRC}" \
        in text
    assert "'activationLagThreshold': got '-1'" in text
    assert "consumerGroup" in text and "shareGroup" in text.split("consumerGroup", 1)[1]


@pytest.mark.parametrize("value", ["1.5", "1e3", "ten", "01"])
def test_lag_threshold_is_a_json_integer(value: str) -> None:
    with pytest.raises(ConfigError, match="'lagThreshold'"):
        parse_metadata({**GOOD, "lagThreshold": value})


def test_the_kind_registry_names_both_servicers() -> None:
    pytest.importorskip("grpc")
    assert list(SCALER_KINDS) == ["persistent-lag", "share-group"]
    assert [servicer_class(k).__name__ for k in SCALER_KINDS] == ["PersistentLagServicer", "ShareGroupServicer"]
    assert [metadata_parser(k).__module__ for k in SCALER_KINDS] == [
        "pytest_lagscale.scalers.persistent_lag.metadata", "pytest_lagscale.scalers.share_group.metadata"]


def test_the_committed_scaledobject_is_valid_share_group_metadata() -> None:
    import yaml

    from pytest_lagscale.config.bundled import data_path

    doc = yaml.safe_load(data_path("k8s", "scaledobject-share-group.yaml").read_text())
    (trigger,) = doc["spec"]["triggers"]
    assert trigger["type"] == "external"
    got = parse_metadata(trigger["metadata"])
    assert (got.share_group, got.topic, got.lag_threshold, got.activation_lag_threshold) == \
        ("enrich-share", "events", 10_000, 100)
    assert doc["spec"]["maxReplicaCount"] > 24, "a share group's point: more replicas than partitions"
    assert trigger["metadata"]["scalerAddress"].startswith("lagscale-share-group-scaler.")


def test_the_harness_annotation_names_every_scaler_kind_and_a_run_sends_the_kinds_group_key() -> None:
    from pytest_lagscale.config.harness import LOCAL_SCALER_KINDS
    from pytest_lagscale.scalers import run_metadata

    assert LOCAL_SCALER_KINDS == tuple(SCALER_KINDS)
    assert run_metadata("share-group", "b:9092", "g", "t") == {"bootstrapServers": "b:9092", "shareGroup": "g",
                                                               "topic": "t"}
    assert run_metadata("persistent-lag", "b:9092", "g", "t")["consumerGroup"] == "g"
