"""The metrics tap's pure parts: request targets, ExternalMetricValueList bodies, headers."""

from __future__ import annotations

import json

import pytest

from pytest_lagscale.kube.metric_reads import parse_metric_path, parse_metric_values
from pytest_lagscale.kube.metrics_tap import forward_headers

BASE = "/apis/external.metrics.k8s.io/v1beta1/namespaces"


@pytest.mark.parametrize("target, expected", [
    pytest.param(f"{BASE}/default/s0-kafka-events?labelSelector=scaledobject.keda.sh%2Fname%3Dlagscale-consumer",
                 ("default", "s0-kafka-events", "scaledobject.keda.sh/name=lagscale-consumer"), id="keda-read"),
    pytest.param(f"{BASE}/run-1/s0-kafka-events?labelSelector=a%3Db%2Cc+in+%28x%2Cy%29",
                 ("run-1", "s0-kafka-events", "a=b,c in (x,y)"), id="selector-decoded-plus-is-space"),
    pytest.param(f"{BASE}/default/s0-kafka-events", ("default", "s0-kafka-events", ""), id="no-selector"),
    pytest.param(f"{BASE}/default/s0-kafka-events?labelSelector=", ("default", "s0-kafka-events", ""),
                 id="empty-selector"),
    pytest.param("/apis/external.metrics.k8s.io/v1beta1", None, id="discovery"),
    pytest.param("/openapi/v2", None, id="openapi"),
    pytest.param(f"{BASE}/default", None, id="namespace-only"),
    pytest.param(f"{BASE}/default/", None, id="empty-metric"),
    pytest.param(f"{BASE}/default/m/extra", None, id="too-deep"),
    pytest.param("/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/m", None, id="custom-metrics-api"),
])
def test_parse_metric_path(target, expected):
    assert parse_metric_path(target) == expected


def _body(*values):
    return json.dumps({"kind": "ExternalMetricValueList", "items": [{"value": v} for v in values]}).encode()


@pytest.mark.parametrize("status, body, expected", [
    pytest.param(200, _body("52338", "1500m", "2k"), ((52338.0, 1.5, 2000.0), 54339.5, None), id="quantities"),
    pytest.param(200, _body("1Ki"), ((1024.0,), 1024.0, None), id="binary-suffix"),
    pytest.param(200, _body(), ((), None, "no items"), id="no-items"),
    pytest.param(503, b"service unavailable", ((), None, "HTTP 503"), id="error-status"),
])
def test_parse_metric_values(status, body, expected):
    pytest.importorskip("kubernetes", reason="kubernetes client missing: pip install -e '.[kubernetes]'")
    assert parse_metric_values(status, body) == expected


@pytest.mark.parametrize("body", [
    pytest.param(b"not json", id="not-json"),
    pytest.param(b'{"kind": "Status"}', id="no-items-key"),
    pytest.param(_body("12 apples"), id="bad-quantity"),
])
def test_parse_metric_values_refuses_other_bodies(body):
    pytest.importorskip("kubernetes", reason="kubernetes client missing: pip install -e '.[kubernetes]'")
    values, total, error = parse_metric_values(200, body)
    assert (values, total) == ((), None) and error.startswith("not an ExternalMetricValueList: ")


def test_forward_headers_drops_hop_by_hop_and_keeps_remote_user():
    headers = [("Host", "keda-metrics-apiserver.keda.svc:443"), ("Connection", "keep-alive, X-Private"),
               ("Keep-Alive", "timeout=5"), ("X-Private", "1"), ("Transfer-Encoding", "chunked"),
               ("Content-Length", "0"), ("X-Remote-User", "hpa"), ("X-Remote-Group", "a"),
               ("X-Remote-Group", "b"), ("X-Remote-Extra-Scopes", "s"), ("Upgrade", "h2c")]
    assert forward_headers(headers) == [
        ("Host", "keda-metrics-apiserver.keda.svc:443"), ("X-Remote-User", "hpa"), ("X-Remote-Group", "a"),
        ("X-Remote-Group", "b"), ("X-Remote-Extra-Scopes", "s")]
