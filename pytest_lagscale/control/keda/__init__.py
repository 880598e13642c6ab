"""KEDA semantics (v2.20.2), pure: triggers, fallback and the activation step.

* :class:`KafkaLagTrigger` (:mod:`.kafka_lag`): lag per partition, caps, metric and activity;
* :class:`CpuTrigger` (:mod:`.cpu`): the Resource cpu metric the HPA decides on;
* :class:`ExternalTrigger` (:mod:`.external`): a gRPC external scaler's metric (``type: external``);
* :class:`Fallback` (:mod:`.fallback`): failure counting and the stand-in metric;
* :class:`ActivationLoop` (:mod:`.activation`): 0 <-> N, cooldownPeriod, idleReplicaCount;
* :data:`TRIGGERS` (:mod:`.registry`): ``type:`` -> trigger class (builds itself from a validated
  config; the metadata is read by :mod:`pytest_lagscale.config.trigger_metadata`);
* :mod:`.prometheus`, :mod:`.aws_cloudwatch`, :mod:`.metrics_api` (on :mod:`.value_trigger`):
  KEDA's value-reading triggers, reading -> metric, activity, proposal (docs/lag-sources.md).

Example:
    >>> from pytest_lagscale.control import keda
    >>> trigger = keda.KafkaLagTrigger({"bootstrapServers": "kafka:9092", "consumerGroup": "enrich",
    ...                                 "topic": "events", "lagThreshold": "10"})
    >>> trigger.metric_name
    's0-kafka-events'
    >>> result = trigger.evaluate_offsets({0: (100, 112), 1: (200, 205)})
    >>> result.metric_value, result.active, dict(result.partition_lag)
    (17.0, True, {0: 12, 1: 5})
"""

from pytest_lagscale.config.trigger_metadata.kafka import KafkaTriggerMetadata, parse_kafka_trigger_metadata
from pytest_lagscale.control.keda.activation import ActivationDecision, ActivationLoop, ActivationSpec
from pytest_lagscale.control.keda.base import (
    MetricTarget,
    Trigger,
    TriggerError,
    TriggerResult,
    TriggerType,
    external_metric_proposal,
)
from pytest_lagscale.control.keda.cpu import CpuTrigger, CpuTriggerMetadata
from pytest_lagscale.control.keda.external import (
    LOCAL_SCALER,
    ExternalScalerCall,
    ExternalTrigger,
    ExternalTriggerMetadata,
)
from pytest_lagscale.control.keda.fallback import Fallback, FallbackOutcome
from pytest_lagscale.control.keda.kafka_lag import (
    KafkaLagTrigger,
    PartitionLag,
    find_factors,
    metric_name,
    next_balancing_factor,
)
from pytest_lagscale.control.keda.registry import TRIGGERS

__all__ = [
    "LOCAL_SCALER", "TRIGGERS", "ActivationDecision", "ActivationLoop", "ActivationSpec", "CpuTrigger",
    "CpuTriggerMetadata", "ExternalScalerCall", "ExternalTrigger", "ExternalTriggerMetadata",
    "Fallback", "FallbackOutcome", "KafkaLagTrigger", "KafkaTriggerMetadata", "MetricTarget", "PartitionLag",
    "Trigger", "TriggerError", "TriggerResult", "TriggerType", "external_metric_proposal", "find_factors",
    "metric_name", "next_balancing_factor", "parse_kafka_trigger_metadata",
]
