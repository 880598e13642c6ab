"""The replica program as a cluster with kubelets runs it: a command consumer of its output topic."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.config.cluster_consumer import as_cluster_consumer, cluster_argv
from pytest_lagscale.config.deployment import load_deployment

K8S = Path(__file__).resolve().parents[3] / "k8s"


def test_the_ci_deployment_becomes_a_command_consumer_writing_its_output_topic() -> None:
    before = load_deployment(K8S / "consumer-deployment-ci.yaml")
    after = as_cluster_consumer(before)
    assert (before.kind, after.kind) == ("spark_consumer", "command")
    assert (after.topic, after.group) == ("events", "enrich")
    assert after.command.output_topic == "events-processed"
    assert dict(after.env)["KAFKA_OUTPUT_TOPIC"] == "events-processed"
    args = after.argv
    assert args[:3] == ("python", "-m", "spark_consumer")
    assert "--topic=events" not in args and "--group=enrich" not in args
    assert args.count("--store=/data/store") == 1  # required by the program, unused
    for flag in ("--sink=topic", "--output-topic=$(KAFKA_OUTPUT_TOPIC)",
                 "--metrics-host=0.0.0.0", "--bootstrap=$(KAFKA_BOOTSTRAP)",
                 "--topic=$(KAFKA_TOPIC)", "--group=$(KAFKA_GROUP)", "--metrics-port=9400",
                 "--engine=spark"):
        assert args.count(flag) == 1, flag
    assert after.readiness == before.readiness  # /ready on 9400, as the kubelet probes it
    assert after.command.raw_args == args


def test_a_command_consumer_is_returned_as_it_is() -> None:
    franz = load_deployment(K8S / "franz-go-consumer-deployment-ci.yaml")
    assert as_cluster_consumer(franz) is franz


def test_flags_in_the_separate_value_form_are_replaced_with_their_value() -> None:
    argv = cluster_argv(("spark-consumer", "--topic", "t", "--sink", "parquet", "--inflight",
                         "10"))
    assert argv[:3] == ("spark-consumer", "--inflight", "10")
    assert "t" not in argv and "parquet" not in argv


def test_an_argv_without_the_replica_program_is_refused() -> None:
    with pytest.raises(ValueError, match="does not run spark_consumer"):
        cluster_argv(("franz-go-consumer", "-balancer=range"))
