"""The metrics tap in real TLS on 127.0.0.1: this test plays kube-aggregator, a fake plays the
KEDA adapter (Python ssl servers and clients with the run's PKI, no control plane).

Aggregator side: client certificate ``front-proxy-client``, the tap verified against ``ca.crt``
as ``keda-metrics-apiserver.keda.svc``. Adapter side: serves ``keda-adapter/tls.crt``, requires a
client certificate of ``front-proxy-ca``, answers an ExternalMetricValueList.
"""

from __future__ import annotations

import datetime as dt
import http.client
import http.server
import json
import socket
import ssl
import threading
import time
from contextlib import contextmanager

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.eventlog import EventLog, read_events
from pytest_lagscale.kube import certs
from pytest_lagscale.kube.metric_reads import MetricRead
from pytest_lagscale.kube.metrics_tap import MetricsTap

pytestmark = pytest.mark.integration
pytest.importorskip("cryptography", reason="cryptography missing: pip install -e '.[kubernetes]'")
pytest.importorskip("kubernetes", reason="kubernetes client missing: pip install -e '.[kubernetes]'")

SERVER_NAME = "keda-metrics-apiserver.keda.svc"
METRIC_PATH = ("/apis/external.metrics.k8s.io/v1beta1/namespaces/default/s0-kafka-events"
               "?labelSelector=scaledobject.keda.sh%2Fname%3Dlagscale-consumer")
VALUE_LIST = {
    "kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1", "metadata": {},
    "items": [{"metricName": "s0-kafka-events", "metricLabels": None,
               "timestamp": "2026-11-26T07:00:00Z", "value": v} for v in ("52338", "1500m", "2k")],
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return certs.generate(tmp_path_factory.mktemp("pki"), dt.datetime.now(dt.timezone.utc))


class _FakeAdapter(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list  # (path, headers) per request, set per server

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.seen.append((self.path, dict(self.headers.items()), self.connection.getpeercert()))
        if self.path.startswith("/apis/external.metrics.k8s.io/v1beta1/namespaces/"):
            body, ctype = json.dumps(VALUE_LIST).encode(), "application/json"
        else:
            body, ctype = b'{"kind":"APIResourceList"}', "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("X-Adapter", "fake")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextmanager
def fake_adapter(pki):
    """The adapter's TLS: ``keda-adapter`` certificate, client certificates of front-proxy-ca."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    adapter = pki.keda_dir("keda-adapter")
    ctx.load_cert_chain(str(adapter / "tls.crt"), str(adapter / "tls.key"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(str(pki.crt("front-proxy-ca")))
    seen: list = []
    handler = type("Handler", (_FakeAdapter,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def aggregator(pki, port, client="front-proxy-client"):
    """An HTTPS connection as kube-aggregator opens it to the tap."""
    ctx = ssl.create_default_context(cafile=str(pki.crt("ca")))
    if client:
        ctx.load_cert_chain(str(pki.crt(client)), str(pki.key(client)))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sock = ctx.wrap_socket(raw, server_hostname=SERVER_NAME)
    return conn


def get(conn, path, user="system:serviceaccount:kube-system:horizontal-pod-autoscaler"):
    conn.request("GET", path, headers={"X-Remote-User": user, "X-Remote-Group": "system:serviceaccounts",
                                       "Accept": "application/json"})
    resp = conn.getresponse()
    return resp.status, dict(resp.getheaders()), resp.read()


def test_reads_pass_through_unchanged_and_are_recorded(pki, tmp_path):
    clock, recorded = FakeClock(100.0), []
    events = EventLog(tmp_path / "tap.jsonl", "metrics_tap", clock)
    with fake_adapter(pki) as (adapter_port, seen), \
            MetricsTap(pki, adapter_port, events=events, on_read=recorded.append, clock=clock) as tap:
        conn = aggregator(pki, tap.port)
        assert conn.sock.selected_alpn_protocol() == "http/1.1"
        status, headers, body = get(conn, METRIC_PATH)
        clock.advance(3.0)
        status2, _, body2 = get(conn, "/apis/external.metrics.k8s.io/v1beta1")  # discovery, same connection
        conn.close()
    events.close()

    assert (status, json.loads(body)) == (200, VALUE_LIST)
    assert headers["X-Adapter"] == "fake" and headers["Content-Type"] == "application/json"
    assert (status2, body2) == (200, b'{"kind":"APIResourceList"}')
    path, adapter_headers, peer = seen[0]
    assert path == METRIC_PATH
    assert adapter_headers["X-Remote-User"] == "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
    assert adapter_headers["X-Remote-Group"] == "system:serviceaccounts"
    assert dict(x[0] for x in peer["subject"])["commonName"] == "front-proxy-client"
    assert len(seen) == 2  # discovery proxied too

    read = tap.reads()[0]
    assert tap.reads() == recorded == [read]  # discovery not recorded
    assert isinstance(read, MetricRead)
    assert (read.t_s, read.namespace, read.metric_name, read.label_selector, read.status) == (
        100.0, "default", "s0-kafka-events", "scaledobject.keda.sh/name=lagscale-consumer", 200)
    assert read.values == (52338.0, 1.5, 2000.0) and read.total == 54339.5 and read.error is None
    assert read.remote_user == "system:serviceaccount:kube-system:horizontal-pod-autoscaler"
    assert dt.datetime.fromisoformat(read.wall_utc).tzinfo is not None
    [event] = list(read_events(tmp_path / "tap.jsonl"))
    assert (event["event"], event["metric_name"], event["values"], event["total"]) == (
        "metric_read", "s0-kafka-events", [52338.0, 1.5, 2000.0], 54339.5)


def test_a_client_without_a_front_proxy_certificate_is_refused(pki):
    with fake_adapter(pki) as (adapter_port, seen), MetricsTap(pki, adapter_port) as tap:
        for client in (None, "admin"):  # no certificate; a certificate of the other CA
            with pytest.raises((ssl.SSLError, ConnectionError)):
                conn = aggregator(pki, tap.port, client=client)
                get(conn, METRIC_PATH)  # TLS 1.3: the refusal arrives at the first read
        ok = aggregator(pki, tap.port)
        assert get(ok, METRIC_PATH)[0] == 200  # still serving
        ok.close()
    assert len(seen) == 1 and tap.reads()[0].status == 200


def test_upstream_down_answers_502_and_keeps_serving(pki):
    with socket.create_server(("127.0.0.1", 0)) as probe:
        dead_port = probe.getsockname()[1]  # closed on exit: nothing listens there
    with MetricsTap(pki, dead_port, clock=FakeClock(7.0)) as tap:
        conn = aggregator(pki, tap.port)
        status, _, body = get(conn, METRIC_PATH)
        assert status == 502 and body.startswith(b"metrics tap: adapter at 127.0.0.1:")
        assert get(conn, METRIC_PATH)[0] == 502  # same connection, still alive
        conn.close()
    [read, _] = tap.reads()
    assert (read.t_s, read.status, read.values, read.total, read.error) == (7.0, 502, (), None, "HTTP 502")


def test_stop_closes_kept_alive_connections_and_is_idempotent(pki):
    with fake_adapter(pki) as (adapter_port, _):
        tap = MetricsTap(pki, adapter_port).start()
        conn = aggregator(pki, tap.port)
        assert get(conn, METRIC_PATH)[0] == 200
        tap.stop(timeout_s=5)
        tap.stop()
        with pytest.raises((ConnectionError, http.client.HTTPException, ssl.SSLError, OSError)):
            get(conn, METRIC_PATH)
        conn.close()
        assert tap._server is None


def test_a_stalled_handshake_blocks_neither_other_clients_nor_stop(pki):
    with fake_adapter(pki) as (adapter_port, _):
        tap = MetricsTap(pki, adapter_port).start()
        try:
            stalled = socket.create_connection(("127.0.0.1", tap.port), timeout=10)  # TCP only, no ClientHello
            conn = aggregator(pki, tap.port)
            assert get(conn, METRIC_PATH)[0] == 200
            conn.close()
        finally:
            started = time.monotonic()
            tap.stop(timeout_s=5)
            assert time.monotonic() - started < 2.0  # the stalled thread ended, not timed out
        assert stalled.recv(1) == b""  # the tap closed it
        stalled.close()
