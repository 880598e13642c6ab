"""The trigger registry: ``spec.triggers[i].type`` -> the :class:`~.base.TriggerType` handling it.

A new trigger's logic is one module beside :mod:`.kafka_lag` (evaluation, proposal) and one
line here; its metadata is read by a module of :mod:`pytest_lagscale.config.trigger_metadata`,
registered in its ``TRIGGER_TYPES`` under the same key (the config loader reads it there and
never imports ``control``). The controller builds triggers from here and has no type switches.

Example:
    >>> from pytest_lagscale.control.keda.registry import TRIGGERS
    >>> sorted(TRIGGERS)
    ['aws-cloudwatch', 'cpu', 'external', 'kafka', 'metrics-api', 'prometheus']
    >>> TRIGGERS["kafka"].metric_types
    ('AverageValue', 'Value')
"""

from __future__ import annotations

from pytest_lagscale.control.keda.aws_cloudwatch import CloudWatchTrigger
from pytest_lagscale.control.keda.base import TriggerType
from pytest_lagscale.control.keda.cpu import CpuTrigger
from pytest_lagscale.control.keda.external import ExternalTrigger
from pytest_lagscale.control.keda.kafka_lag import KafkaLagTrigger
from pytest_lagscale.control.keda.metrics_api import MetricsApiTrigger
from pytest_lagscale.control.keda.prometheus import PrometheusTrigger

#: Trigger types lagscale simulates, in the order error messages list them.
TRIGGERS: dict[str, TriggerType] = {
    "kafka": KafkaLagTrigger,
    "cpu": CpuTrigger,
    "external": ExternalTrigger,
    # value-reading triggers: the runner fetches their answer (platform/value_triggers.py)
    "prometheus": PrometheusTrigger,
    "aws-cloudwatch": CloudWatchTrigger,
    "metrics-api": MetricsApiTrigger,
}
