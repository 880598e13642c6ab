"""KEDA's ``kafka`` trigger (Sarama scaler): lag per partition, totals, caps, metric, activity.

Pure: the caller fetches offsets and passes them in; the only state is the
excludePersistentLag map of previous committed offsets, updated on every evaluation. The
metadata is read by :mod:`pytest_lagscale.config.trigger_metadata.kafka`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from pytest_lagscale.control.keda.base import MetricTarget, TriggerError, TriggerResult, external_metric_proposal
from pytest_lagscale.config.trigger_metadata.kafka import KafkaTriggerMetadata, parse_kafka_trigger_metadata
from pytest_lagscale.contract.errors import ConfigError

if TYPE_CHECKING:
    from pytest_lagscale.config.triggers import TriggerConfig
    from pytest_lagscale.control.observation import Observation

INVALID_OFFSET = -1
_NORMALIZED = str.maketrans({c: "-" for c in "/.:%()"})

Offsets = Mapping[int, tuple[int, "int | None"]]


@dataclass(frozen=True)
class PartitionLag:
    """Lag of one partition: counted for scaling, and including persistent lag (offsets)."""

    lag: int
    lag_with_persistent: int


def metric_name(trigger_index: int, topic: str, consumer_group: str) -> str:
    """``s<index>-kafka-<topic>`` (or ``s<index>-kafka-<group>-topics`` without topic).

    Characters ``/ . : % ( )`` become ``-``.

    Source: kedacore/keda pkg/scalers/kafka_scaler.go GetMetricSpecForScaling and
    pkg/util/normalize_string.go NormalizeString v2.20.2; docs/semantics.md §1.5, §4.6
    """
    name = f"kafka-{topic}" if topic else f"kafka-{consumer_group}-topics"
    return f"s{trigger_index}-{name.translate(_NORMALIZED)}"


def find_factors(n: int) -> list[int]:
    """Every factor of ``n``, ascending; empty for n < 1.

    Source: kedacore/keda pkg/scalers/kafka_scaler.go FindFactors v2.20.2;
    docs/semantics.md §4.6
    """
    if n < 1:
        return []
    small = [i for i in range(1, math.isqrt(n) + 1) if n % i == 0]
    return sorted(set(small + [n // i for i in small]))


def next_balancing_factor(total_lag: int, partition_count: int, lag_threshold: int) -> int:
    """Smallest factor f of P with ``f * lagThreshold >= totalLag``, else P.

    Source: kedacore/keda pkg/scalers/kafka_scaler.go
    getNextFactorThatBalancesConsumersToTopicPartitions v2.20.2; docs/semantics.md §1.4, §4.6
    """
    for factor in find_factors(partition_count):
        if factor * lag_threshold >= total_lag:
            return factor
    return partition_count


def _trunc_div(a: int, b: int) -> int:
    """Go integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class KafkaLagTrigger:
    """The ``kafka`` trigger built from its ScaledObject metadata strings.

    Args:
        metadata: the trigger's ``metadata`` (string values, KEDA defaults applied).
        trigger_index: position in ``spec.triggers`` (the ``s<i>-`` metric-name prefix).
        metric_type: ``AverageValue`` (default) or ``Value``.

    Raises:
        ConfigError: (a ValueError) every invalid field, each line naming it.

    Attributes:
        meta: the parsed metadata.
        metric_name: ``s<i>-kafka-<topic>``.
        metric_target: ``lagThreshold`` as an AverageValue (or Value) target.

    Source: kedacore/keda pkg/scalers/kafka_scaler.go NewKafkaScaler v2.20.2;
    docs/semantics.md §1
    """

    metric_types: ClassVar[tuple[str, ...]] = ("AverageValue", "Value")
    resource_metric: ClassVar[bool] = False
    needs_lag: ClassVar[bool] = True
    needs_cpu: ClassVar[bool] = False

    @classmethod
    def from_config(cls, config: TriggerConfig) -> KafkaLagTrigger:
        """Build from a validated ``spec.triggers[i]`` (its settings are the parsed metadata)."""
        return cls.from_metadata(config.settings, trigger_index=config.index, metric_type=config.metric_type)

    def __init__(self, metadata: Mapping[str, str], *, trigger_index: int = 0, metric_type: str = "AverageValue"):
        self._init(parse_kafka_trigger_metadata(metadata), trigger_index, metric_type)

    @classmethod
    def from_metadata(cls, meta: KafkaTriggerMetadata, *, trigger_index: int = 0,
                      metric_type: str = "AverageValue") -> KafkaLagTrigger:
        """Build from already-validated metadata (e.g. from a loaded ScaledObject)."""
        trigger = cls.__new__(cls)
        trigger._init(meta, trigger_index, metric_type)
        return trigger

    def _init(self, meta: KafkaTriggerMetadata, trigger_index: int, metric_type: str) -> None:
        if metric_type not in ("AverageValue", "Value"):
            raise ConfigError(f"'metricType': got {metric_type!r}, expected one of {{'AverageValue', 'Value'}} "
                              f"in kafka trigger; use 'AverageValue'")
        self.meta = meta
        self.trigger_index = trigger_index
        self.metric_name = metric_name(trigger_index, meta.topic, meta.consumer_group)
        self.metric_target = MetricTarget(metric_type, float(meta.lag_threshold))
        self._previous: dict[int, int] = {}

    @property
    def lag_threshold_records(self) -> int:
        """``lagThreshold``: the per-replica lag target in records (offsets)."""
        return self.meta.lag_threshold

    @property
    def previous_offsets(self) -> Mapping[int, int]:
        """excludePersistentLag state: partition -> committed offset seen last time."""
        return MappingProxyType(dict(self._previous))

    def partition_lag(self, partition: int, committed: int, log_end: int | None) -> PartitionLag:
        """Lag of one partition (§1.3), updating the excludePersistentLag state.

        Args:
            partition: partition id.
            committed: the group's committed offset, -1 when none.
            log_end: the log-end offset, None when missing from the latest-offset response.

        Source: kedacore/keda pkg/scalers/kafka_scaler.go getLagForPartition v2.20.2;
        docs/semantics.md §1.3, §4.6
        Quirk: with policy earliest and no commit the lag is the full log-end offset, not
        log-end minus log-start; test id 1.3-quirk-earliest-lag-is-log-end.
        """
        m = self.meta
        if committed == INVALID_OFFSET:
            if m.offset_reset_policy == "latest":
                lag = 0 if m.scale_to_zero_on_invalid_offset else 1
                return PartitionLag(lag, lag)
            if m.scale_to_zero_on_invalid_offset:
                return PartitionLag(0, 0)
        if log_end is None:
            return PartitionLag(0, 0)
        if committed == INVALID_OFFSET:
            return PartitionLag(log_end, log_end)
        if m.exclude_persistent_lag:
            previous = self._previous.get(partition)
            if previous is not None and previous == committed:
                return PartitionLag(0, log_end - committed)
            self._previous[partition] = committed
        return PartitionLag(log_end - committed, log_end - committed)

    def evaluate(self, observation: Observation, now_s: float) -> TriggerResult:
        """The trigger's step: :meth:`evaluate_offsets` on the observed offsets.

        Args:
            observation: ``offsets`` is None when reading lag failed.
            now_s: time of the step in seconds (unused: the scaler keeps no time).

        Raises:
            TriggerError: lag could not be read, or see :meth:`evaluate_offsets`.
        """
        if observation.offsets is None:
            raise TriggerError("consumer lag could not be read")
        return self.evaluate_offsets(observation.offsets)

    def proposal(self, metric_value: float | None, observation: Observation, tolerance: float) -> int | None:
        """The HPA's proposal for this External metric (None when the value is missing)."""
        return external_metric_proposal(self.metric_target, metric_value, observation, tolerance)

    def evaluate_offsets(self, offsets: Offsets) -> TriggerResult:
        """Metric value and activity from the group's offsets (§1.2-§1.5).

        Args:
            offsets: ``offsets[partition] = (committed_offset, log_end_offset)`` for every
                partition of the topic; committed -1 = no commit; log_end None = missing from the
                latest-offset response.

        Returns:
            The metric value (total lag after caps, never negative) and ``active`` =
            total lag including persistent lag > activationLagThreshold.

        Raises:
            TriggerError: no partition left after partitionLimitation, or a committed offset of
                None (offset-fetch block missing).

        Source: kedacore/keda pkg/scalers/kafka_scaler.go getTopicPartitions, getTotalLag,
        GetMetricsAndActivity v2.20.2; docs/semantics.md §1.2-§1.5
        """
        considered = self._considered(offsets)
        counted: dict[int, int] = {}
        with_persistent: dict[int, int] = {}
        for partition in considered:
            committed, log_end = offsets[partition]
            if log_end is None:
                continue
            lag = self.partition_lag(partition, committed, log_end)
            counted[partition], with_persistent[partition] = lag.lag, lag.lag_with_persistent
        total_lag = self._capped_total(sum(counted.values()), len(counted),
                                       sum(1 for v in counted.values() if v > 0))
        total_with_persistent = sum(with_persistent.values())
        return TriggerResult(
            metric_value=float(max(total_lag, 0)),
            active=total_with_persistent > self.meta.activation_lag_threshold,
            total_lag=total_lag, total_lag_with_persistent=total_with_persistent,
            partition_lag=counted, partition_lag_with_persistent=with_persistent,
            partition_count=len(counted), partitions_with_lag=sum(1 for v in counted.values() if v > 0),
            missing_partitions=tuple(p for p in considered if offsets[p][1] is None))

    def _considered(self, offsets: Offsets) -> list[int]:
        """Partitions after partitionLimitation; none left, or a missing offset block, is an error.

        Source: kedacore/keda pkg/scalers/kafka_scaler.go getTopicPartitions/isActivePartition
        v2.20.2; docs/semantics.md §1.2, §1.3 rule 1
        """
        limitation = self.meta.partition_limitation
        partitions = sorted(p for p in offsets if limitation is None or p in limitation)
        if not partitions:
            raise TriggerError(f"expected at least one active partition within the topic {self.meta.topic!r}")
        for p in partitions:
            committed, log_end = offsets[p]
            if committed is None and log_end is not None:
                raise TriggerError(f"error finding offset block for topic {self.meta.topic!r} and partition {p}")
        return partitions

    def _capped_total(self, total_lag: int, partition_count: int, partitions_with_lag: int) -> int:
        """The partition caps of §1.4 (allowIdleConsumers, limitToPartitionsWithLag, even distribution).

        Source: kedacore/keda pkg/scalers/kafka_scaler.go getTotalLag v2.20.2;
        docs/semantics.md §1.4
        Quirk: the cap compares floor(totalLag / lagThreshold) with P, so T=10, P=3, lag 35 stays
        35 and the HPA may ask for 4 > P replicas; test id 1.4-quirk-floor-cap-35.
        """
        m = self.meta
        if m.allow_idle_consumers and not m.limit_to_partitions_with_lag \
                and not m.ensure_even_distribution_of_partitions:
            return total_lag
        threshold = m.lag_threshold
        upper = partition_count
        if m.ensure_even_distribution_of_partitions:
            total_lag = next_balancing_factor(total_lag, partition_count, threshold) * threshold
        if m.limit_to_partitions_with_lag:
            upper = partitions_with_lag
        if _trunc_div(total_lag, threshold) > upper:
            total_lag = upper * threshold
        return total_lag
