"""docs/semantics.md §1 and §4.6: the kafka trigger's lag, caps, metric and activity."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pytest

from pytest_lagscale.config.trigger_metadata.kafka import parse_partition_limitation
from pytest_lagscale.control import keda
from pytest_lagscale.control.keda import KafkaLagTrigger, MetricTarget, TriggerError
from pytest_lagscale.contract.errors import ConfigError

BASE = {"bootstrapServers": "kafka:9092", "consumerGroup": "my-group", "topic": "my-topic"}


def trigger(**metadata: str) -> KafkaLagTrigger:
    return KafkaLagTrigger({**BASE, **metadata})


@dataclass(frozen=True)
class LagCase:
    committed: int
    log_end: int | None
    policy: str
    scale_to_zero: bool
    expected: tuple[int, int]


LAG = [
    pytest.param(LagCase(-1, None, "earliest", True, (0, 0)), id="4.6-invalid-missing-earliest-scale-to-zero"),
    pytest.param(LagCase(-1, None, "earliest", False, (0, 0)), id="4.6-invalid-missing-earliest"),
    pytest.param(LagCase(100, None, "earliest", False, (0, 0)), id="4.6-committed-missing-earliest"),
    pytest.param(LagCase(100, 150, "earliest", False, (50, 50)), id="4.6-committed-present-earliest"),
    pytest.param(LagCase(-1, 150, "latest", True, (0, 0)), id="4.6-invalid-latest-scale-to-zero"),
    pytest.param(LagCase(-1, 150, "latest", False, (1, 1)), id="1.3-invalid-latest-counts-1"),
    pytest.param(LagCase(-1, None, "latest", False, (1, 1)), id="1.3-invalid-latest-before-missing-check"),
    pytest.param(LagCase(-1, 150, "earliest", False, (150, 150)), id="1.3-quirk-earliest-lag-is-log-end"),
    pytest.param(LagCase(200, 150, "latest", False, (-50, -50)), id="1.3-negative-lag-not-clamped"),
]


@pytest.mark.parametrize("case", LAG)
def test_4_6_partition_lag(case: LagCase) -> None:
    t = trigger(offsetResetPolicy=case.policy, scaleToZeroOnInvalidOffset=str(case.scale_to_zero).lower())
    lag = t.partition_lag(0, case.committed, case.log_end)
    assert (lag.lag, lag.lag_with_persistent) == case.expected


def test_1_3_exclude_persistent_lag_state_across_calls() -> None:
    t = trigger(excludePersistentLag="true", lagThreshold="100")
    first = t.evaluate_offsets({0: (100, 150), 1: (10, 20)})
    second = t.evaluate_offsets({0: (100, 170), 1: (15, 20)})
    third = t.evaluate_offsets({0: (120, 170), 1: (15, 20)})
    assert (first.total_lag, first.total_lag_with_persistent) == (60, 60)
    assert (second.total_lag, second.total_lag_with_persistent, second.partitions_with_lag) == (5, 75, 1)
    assert (third.total_lag, third.total_lag_with_persistent) == (50, 55)
    assert dict(t.previous_offsets) == {0: 120, 1: 15}
    assert second.active


@pytest.mark.parametrize(("total_lag", "partitions", "threshold", "factor"), [
    pytest.param(10, 100, 10, 1, id="4.6-even-10-100-10"),
    pytest.param(20, 100, 10, 2, id="4.6-even-20-100-10"),
    pytest.param(40, 100, 10, 4, id="4.6-even-40-100-10"),
    pytest.param(50, 100, 10, 5, id="4.6-even-50-100-10"),
    pytest.param(99, 100, 10, 10, id="4.6-even-99-100-10"),
    pytest.param(100, 100, 10, 10, id="4.6-even-100-100-10"),
    pytest.param(101, 100, 10, 20, id="4.6-even-101-100-10"),
    pytest.param(5000, 100, 10, 100, id="1.4-even-beyond-all-factors-is-P"),
])
def test_4_6_next_balancing_factor(total_lag: int, partitions: int, threshold: int, factor: int) -> None:
    assert keda.next_balancing_factor(total_lag, partitions, threshold) == factor


@pytest.mark.parametrize(("n", "factors"), [
    pytest.param(10, [1, 2, 5, 10], id="4.6-factors-10"),
    pytest.param(13, [1, 13], id="4.6-factors-13"),
    pytest.param(25, [1, 5, 25], id="4.6-factors-25"),
    pytest.param(100, [1, 2, 4, 5, 10, 20, 25, 50, 100], id="4.6-factors-100"),
    pytest.param(0, [], id="4.6-factors-0-none"),
])
def test_4_6_find_factors(n: int, factors: list[int]) -> None:
    assert keda.find_factors(n) == factors


@pytest.mark.parametrize(("index", "topic", "group", "name"), [
    pytest.param(0, "my-topic", "my-group", "s0-kafka-my-topic", id="4.6-metric-name-index0"),
    pytest.param(1, "my-topic", "my-group", "s1-kafka-my-topic", id="4.6-metric-name-index1"),
    pytest.param(1, "", "my-group", "s1-kafka-my-group-topics", id="4.6-metric-name-no-topic"),
    pytest.param(0, "a.b/c:d", "g", "s0-kafka-a-b-c-d", id="1.5-metric-name-normalized"),
])
def test_4_6_metric_name(index: int, topic: str, group: str, name: str) -> None:
    assert keda.metric_name(index, topic, group) == name


def test_1_5_metric_target_and_index() -> None:
    t = KafkaLagTrigger({**BASE, "lagThreshold": "50"}, trigger_index=2, metric_type="Value")
    assert (t.metric_name, t.metric_target) == ("s2-kafka-my-topic", MetricTarget("Value", 50.0))
    assert trigger().metric_target == MetricTarget("AverageValue", 10.0)


@pytest.mark.parametrize(("text", "parsed"), [
    pytest.param("1", (1,), id="4.6-limitation-single"),
    pytest.param(" 1 , 2 , 3 ", (1, 2, 3), id="4.6-limitation-list-trimmed"),
    pytest.param("3-3", (3,), id="4.6-limitation-range-of-one"),
    pytest.param(" 1 - 4 ", (1, 2, 3, 4), id="4.6-limitation-range-trimmed"),
    pytest.param("1-4,8,10-12", (1, 2, 3, 4, 8, 10, 11, 12), id="4.6-limitation-mixed"),
])
def test_4_6_partition_limitation(text: str, parsed: tuple[int, ...]) -> None:
    assert parse_partition_limitation(text) == parsed


@pytest.mark.parametrize("text", [
    pytest.param("a,b,c", id="4.6-limitation-error-letters"),
    pytest.param("1-2-3", id="4.6-limitation-error-double-range"),
    pytest.param("a-3", id="4.6-limitation-error-range-start"),
    pytest.param("1-b", id="4.6-limitation-error-range-end"),
])
def test_4_6_partition_limitation_errors(text: str) -> None:
    with pytest.raises(ValueError):
        parse_partition_limitation(text)


def test_4_6_limitation_filters_partitions() -> None:
    t = trigger(partitionLimitation="1,2,3", lagThreshold="100")
    result = t.evaluate_offsets({p: (0, 10 * p) for p in range(1, 7)})
    assert (sorted(result.partition_lag), result.partition_count, result.total_lag) == ([1, 2, 3], 3, 60)


def test_1_1_limitation_ignored_without_topic() -> None:
    t = KafkaLagTrigger({"bootstrapServers": "k:9092", "consumerGroup": "g", "partitionLimitation": "1"})
    assert t.meta.partition_limitation is None


@pytest.mark.parametrize(("offsets", "message"), [
    pytest.param({7: (0, 5)}, "expected at least one active partition within the topic 'my-topic'",
                 id="1.2-no-partition-after-limitation"),
    pytest.param({1: (None, 5)}, "error finding offset block for topic 'my-topic' and partition 1",
                 id="1.3-offset-block-missing"),
])
def test_1_2_scaler_errors(offsets: dict, message: str) -> None:
    with pytest.raises(TriggerError) as info:
        trigger(partitionLimitation="1,2").evaluate_offsets(offsets)
    assert str(info.value) == message


@dataclass(frozen=True)
class CapCase:
    metadata: dict
    lags: tuple[int, ...]
    total_lag: int
    metric_value: float


CAPS = [
    pytest.param(CapCase({}, (20, 15, 0), 35, 35.0), id="1.4-quirk-floor-cap-35"),
    pytest.param(CapCase({}, (10, 5), 15, 15.0), id="1.4-under-cap"),
    pytest.param(CapCase({}, (20, 15, 5), 30, 30.0), id="1.4-lag40-P3-capped-at-30"),
    pytest.param(CapCase({}, (50, 0, 0), 30, 30.0), id="1.4-lag50-P3-capped-at-30"),
    pytest.param(CapCase({"allowIdleConsumers": "true"}, (50, 0, 0), 50, 50.0), id="1.4-allow-idle-no-cap"),
    pytest.param(CapCase({"limitToPartitionsWithLag": "true"}, (50, 0, 0), 10, 10.0),
                 id="1.4-limit-to-partitions-with-lag"),
    pytest.param(CapCase({"ensureEvenDistributionOfPartitions": "true"}, (25, 0, 0, 0), 40, 40.0),
                 id="1.4-even-rounds-up-to-factor"),
    pytest.param(CapCase({"ensureEvenDistributionOfPartitions": "true", "allowIdleConsumers": "true"},
                         (100, 0, 0, 0), 40, 40.0), id="1.4-even-caps-even-with-allow-idle"),
    pytest.param(CapCase({}, (-30, 5, 0), -25, 0.0), id="1.5-negative-total-reported-as-0"),
]


@pytest.mark.parametrize("case", CAPS)
def test_1_4_totals_and_caps(case: CapCase) -> None:
    t = trigger(lagThreshold="10", **case.metadata)
    offsets = {p: (1000, 1000 + lag) for p, lag in enumerate(case.lags)}
    result = t.evaluate_offsets(offsets)
    assert (result.total_lag, result.metric_value) == (case.total_lag, case.metric_value)
    assert result.total_lag_with_persistent == sum(case.lags)


def test_1_4_cap_counts_only_partitions_in_latest_response() -> None:
    result = trigger(lagThreshold="10").evaluate_offsets({0: (0, 100), 1: (0, None), 2: (0, None)})
    assert (result.partition_count, result.total_lag, result.missing_partitions) == (1, 10, (1, 2))


@pytest.mark.parametrize(("lags", "activation", "active"), [
    pytest.param((1,), "1", False, id="1.5-activation-equal-is-inactive"),
    pytest.param((2,), "1", True, id="1.5-activation-strictly-greater"),
    pytest.param((0,), "0", False, id="1.5-activation-default-0-needs-lag"),
])
def test_1_5_activity(lags: tuple[int, ...], activation: str, active: bool) -> None:
    result = trigger(activationLagThreshold=activation).evaluate_offsets({p: (0, lag) for p, lag in enumerate(lags)})
    assert result.active is active


def test_1_5_persistent_lag_still_activates() -> None:
    t = trigger(excludePersistentLag="true")
    t.evaluate_offsets({0: (5, 10)})
    result = t.evaluate_offsets({0: (5, 10)})
    assert (result.metric_value, result.active) == (0.0, True)


def test_trigger_result_is_json_friendly() -> None:
    assert asdict(trigger().evaluate_offsets({0: (0, 3)}))["partition_lag"] == {0: 3}


@pytest.mark.parametrize(("metadata", "message"), [
    pytest.param({"consumerGroup": "g"},
                 "'bootstrapServers': got no value, expected a comma-separated list of host:port in trigger "
                 "metadata; add bootstrapServers: 'host:9092'", id="1.1-bootstrap-required"),
    pytest.param({**BASE, "lagThreshold": "0"},
                 "'lagThreshold': got '0', expected an integer > 0 (offsets of lag per replica) in trigger metadata; "
                 "set it to a positive integer, e.g. '1000'", id="1.1-lag-threshold-positive"),
    pytest.param({**BASE, "lagThreshold": "10.5"},
                 "'lagThreshold': got '10.5', expected an integer > 0 (offsets of lag per replica) in trigger "
                 "metadata; write digits only, e.g. '1000'", id="1.1-lag-threshold-integer"),
    pytest.param({**BASE, "activationLagThreshold": "-1"},
                 "'activationLagThreshold': got '-1', expected an integer >= 0 (offsets) in trigger metadata; "
                 "set it to zero or more, e.g. '1000'", id="1.1-activation-non-negative"),
    pytest.param({**BASE, "excludePersistentLag": "True"},
                 "'excludePersistentLag': got 'True', expected 'true' or 'false' in trigger metadata; "
                 "write 'true' or 'false' in lower case", id="1.1-quirk-bool-json-only"),
    pytest.param({**BASE, "allowIdleConsumers": "true", "limitToPartitionsWithLag": "true"},
                 "'limitToPartitionsWithLag': got 'true', expected 'false' while allowIdleConsumers is 'true' in "
                 "trigger metadata; set one of allowIdleConsumers and limitToPartitionsWithLag to 'false'",
                 id="1.1-idle-and-limit-exclusive"),
])
def test_1_1_metadata_errors_name_the_field(metadata: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        KafkaLagTrigger(metadata)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_1_1_metric_type_utilization_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        KafkaLagTrigger(BASE, metric_type="Utilization")
    assert str(info.value) == ("'metricType': got 'Utilization', expected one of {'AverageValue', 'Value'} in "
                               "kafka trigger; use 'AverageValue'")


def test_trigger_satisfies_protocol() -> None:
    assert isinstance(trigger(), keda.Trigger)
    assert isinstance(keda.CpuTrigger(70), keda.Trigger)
