"""The HPA's protobuf external-metrics answers, decoded as the metrics tap reads them."""

from __future__ import annotations

import pytest

from pytest_lagscale.kube.metric_proto import (ENVELOPE_PREFIX, encode_external_metric_values,
                                               external_metric_values)
from pytest_lagscale.kube.metric_reads import parse_metric_values


def test_a_list_round_trips_through_the_envelope():
    body = encode_external_metric_values([("s0-kafka-events", "52338"), ("s1", "1500m")])
    assert body.startswith(ENVELOPE_PREFIX)
    assert external_metric_values(body) == [("s0-kafka-events", "52338"), ("s1", "1500m")]


def test_the_tap_parses_protobuf_and_json_alike():
    proto = encode_external_metric_values([("s0-kafka-events", "2k"), ("s0-kafka-events", "500m")])
    json_body = b'{"kind":"ExternalMetricValueList","items":[{"value":"2k"},{"value":"500m"}]}'
    assert parse_metric_values(200, proto) == ((2000.0, 0.5), 2000.5, None)
    assert parse_metric_values(200, json_body) == ((2000.0, 0.5), 2000.5, None)


def test_an_empty_list_has_no_total():
    assert parse_metric_values(200, encode_external_metric_values([])) == ((), None, "no items")


@pytest.mark.parametrize("body", [b"{}", b"k8s"])
def test_a_body_without_the_envelope_is_refused(body):
    with pytest.raises(ValueError, match="not a Kubernetes protobuf body"):
        external_metric_values(body)


def test_a_truncated_message_is_refused():
    body = encode_external_metric_values([("s0-kafka-events", "52338")])
    with pytest.raises(ValueError, match="not an ExternalMetricValueList"):
        external_metric_values(body[:-3])
