"""The persistent-lag scaler's metadata: defaults, ranges, KEDA's own keys, every problem at once."""

from __future__ import annotations

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.scalers.persistent_lag import PersistentLagSettings, parse_metadata

SRC = "ScaledObject default/c scalerMetadata"
GOOD = {"bootstrapServers": "kafka:9092", "consumerGroup": "enrich", "topic": "events", "lagThreshold": "500"}


def test_defaults_and_keda_keys() -> None:
    got = parse_metadata({**GOOD, "scalerAddress": "lag-scaler:6000", "enableTLS": "false"}, source=SRC)
    assert got == PersistentLagSettings("kafka:9092", "enrich", "events", 500, activation_lag_threshold=0,
                                        sustain_s=120.0, sampling_interval_s=10.0, window_size=30,
                                        scale_up_stabilization_s=0.0, lag_source="broker")
    assert got.metric_name == "persistent-kafka-lag-events"
    assert got.window_span_s == 290.0


def test_every_key_parsed() -> None:
    got = parse_metadata({**GOOD, "activationLagThreshold": "50", "sustainSeconds": "30",
                          "samplingInterval": "0.5", "windowSize": "61", "scaleUpStabilization": "15",
                          "topic": "my.topic_1"}, source=SRC)
    assert (got.activation_lag_threshold, got.sustain_s, got.sampling_interval_s, got.window_size,
            got.scale_up_stabilization_s) == (50, 30.0, 0.5, 61, 15.0)
    assert got.metric_name == "persistent-kafka-lag-my-topic-1"


@pytest.mark.parametrize(("extra", "message"), [
    pytest.param({"lagThreshold": "-5"},
                 f"'lagThreshold': got '-5', expected an integer > 0 (records of total lag per replica) in "
                 f"{SRC}; set it to e.g. '500'", id="lag-threshold-negative"),
    pytest.param({"lagThreshold": "0"},
                 f"'lagThreshold': got '0', expected an integer > 0 (records of total lag per replica) in "
                 f"{SRC}; set it to e.g. '500'", id="lag-threshold-zero"),
    pytest.param({"sustainSeconds": "abc"},
                 f"'sustainSeconds': got 'abc', expected a number of seconds in [0, 86400] in {SRC}; "
                 "set it to e.g. '120'", id="sustain-not-a-number"),
    pytest.param({"samplingInterval": "0.01"},
                 f"'samplingInterval': got '0.01', expected a number of seconds in [0.1, 3600] in {SRC}; "
                 "set it to e.g. '10'", id="sampling-too-fast"),
    pytest.param({"windowSize": "1"},
                 f"'windowSize': got '1', expected an integer in [2, 100000] (samples) in {SRC}; "
                 "set it to e.g. '30'", id="window-too-small"),
    pytest.param({"sustainSeconds": "300", "windowSize": "10"},
                 f"'sustainSeconds': got '300', expected at most (windowSize - 1) x samplingInterval = 90 s "
                 f"(the window must span it) in {SRC}; raise windowSize or samplingInterval, or lower "
                 "sustainSeconds", id="window-shorter-than-sustain"),
    pytest.param({"scaleDownStabilization": "300"},
                 f"'scaleDownStabilization': got '300', expected a key lagscale simulates (not "
                 f"'scaleDownStabilization') under the document root in {SRC}; remove it and set "
                 "spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds "
                 "(the HPA already delays scale-down)", id="scale-down-stabilization-is-the-hpas"),
    pytest.param({"lagTreshold": "5"},
                 f"'lagTreshold': got '5', expected a known key of the document root in {SRC}; "
                 "rename it to 'lagThreshold'", id="typo-suggests-key"),
    pytest.param({"lagSource": "prometheus"},
                 f"'lagSource': got 'prometheus', expected one of {{'broker'}} in {SRC}; use 'broker'",
                 id="lag-source-unknown"),
])
def test_bad_metadata_one_line_naming_key_value_and_range(extra: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_metadata({**GOOD, **extra}, source=SRC)
    assert info.value.problems == [message]


def test_missing_required_keys_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        parse_metadata({"topic": "events"}, source=SRC)
    assert info.value.problems == [
        f"'bootstrapServers': got no value, expected a non-empty string in {SRC}; add bootstrapServers: "
        "'kafka:9092'",
        f"'consumerGroup': got no value, expected a non-empty string in {SRC}; add consumerGroup: 'enrich'",
        f"'lagThreshold': got no value, expected an integer > 0 (records of total lag per replica) in {SRC}; "
        "add lagThreshold: '500'",
    ]
