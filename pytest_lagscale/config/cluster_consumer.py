"""The replica program as a cluster with kubelets runs it: a command consumer writing its output topic.

On a ``--kubeconfig`` cluster with Ready nodes (``--replica-image``), the pods run on other
machines: they share no disk with the harness (no store, no event log, no port file), so the
run measures them from the broker (docs/byo-consumer.md "What is measured, and from where").
:func:`as_cluster_consumer` turns a Deployment of the replica program into that command
consumer: its flags take the run's broker, topic, group and output topic from the env
(``$(KAFKA_BOOTSTRAP)``, ``$(KAFKA_TOPIC)``, ``$(KAFKA_GROUP)``, ``$(KAFKA_OUTPUT_TOPIC)``), it
writes each processed record to the output topic (``--sink topic``, the output-topic contract)
instead of the store (its ``--store`` stays, required and unused), and it serves its metrics and probes on every address of the pod
(``--metrics-host 0.0.0.0``: the kubelet probes the pod's IP and the apiserver's pod proxy
connects to it). A command consumer's Deployment is returned as it is.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

from .deployment import OUTPUT_TOPIC_ENV, CommandConsumer, DeploymentConfig
from .replica_args import program_end, without_flags

#: The replica program's flags the cluster form sets (a given value is replaced).
REPLACED_FLAGS = ("--bootstrap", "--topic", "--group", "--sink", "--output-topic",
                  "--metrics-host")
#: The output topic's name: the input topic's + this suffix.
OUTPUT_SUFFIX = "-processed"


def cluster_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """``argv`` of the replica program with :data:`REPLACED_FLAGS` dropped (``--flag=value``
    and ``--flag value`` forms) and the cluster's flags added.

    Raises:
        ValueError: ``argv`` does not run the replica program.

    Example:
        >>> cluster_argv(("python", "-m", "spark_consumer", "--topic=events", "--sink", "parquet",
        ...               "--inflight=10"))[3:]
        ('--inflight=10', '--bootstrap=$(KAFKA_BOOTSTRAP)', '--topic=$(KAFKA_TOPIC)', \
'--group=$(KAFKA_GROUP)', '--sink=topic', '--output-topic=$(KAFKA_OUTPUT_TOPIC)', \
'--metrics-host=0.0.0.0')
    """
    if program_end(argv) is None:
        raise ValueError(f"{' '.join(argv)!r} does not run spark_consumer")
    return (*without_flags(argv, REPLACED_FLAGS), "--bootstrap=$(KAFKA_BOOTSTRAP)",
            "--topic=$(KAFKA_TOPIC)", "--group=$(KAFKA_GROUP)", "--sink=topic",
            f"--output-topic=$({OUTPUT_TOPIC_ENV})", "--metrics-host=0.0.0.0")


def as_cluster_consumer(deployment: DeploymentConfig) -> DeploymentConfig:
    """The Deployment as a cluster with kubelets runs it (module docstring).

    Returns:
        ``deployment`` itself for a command consumer; for the replica program, a copy of kind
        ``command`` whose env names the manifest's topic and group and the output topic
        ``<topic>-processed``.
    """
    replica = deployment.replica
    if replica is None:
        return deployment
    argv = cluster_argv(deployment.argv)
    env = {**deployment.env, "KAFKA_TOPIC": replica.topic, "KAFKA_GROUP": replica.group,
           OUTPUT_TOPIC_ENV: f"{replica.topic}{OUTPUT_SUFFIX}"}
    env.setdefault("KAFKA_BOOTSTRAP", "lagscale-kafka:9092")
    command = CommandConsumer(topic=replica.topic, group=replica.group, raw_args=argv,
                              output_topic=env[OUTPUT_TOPIC_ENV])
    return dataclasses.replace(deployment, replica=None, command=command, argv=argv,
                               env=MappingProxyType(env))


__all__ = ["OUTPUT_SUFFIX", "REPLACED_FLAGS", "as_cluster_consumer", "cluster_argv"]
