"""The per-run PKI in real TLS handshakes on 127.0.0.1 (in-process servers, no control plane).

What the Go processes will do with these files, done with Python's ssl: the apiserver accepts
the admin's client certificate and refuses another CA's; KEDA's operator and adapter speak
mutual TLS with one certificate each used both ways; kube-aggregator reaches the adapter with
the TLS server name ``keda-metrics-apiserver.keda.svc`` and the front-proxy client certificate.
"""

from __future__ import annotations

import datetime as dt
import http.server
import socket
import ssl
import threading
from contextlib import contextmanager

import pytest

from pytest_lagscale.kube import certs
from pytest_lagscale.kube.commands import Readiness
from pytest_lagscale.kube.readiness import probe

pytestmark = pytest.mark.integration
pytest.importorskip("cryptography", reason="cryptography missing: pip install -e '.[kubernetes]'")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return certs.generate(tmp_path_factory.mktemp("pki"), dt.datetime.now(dt.timezone.utc))


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@contextmanager
def https_server(pki, stem, client_ca=None):
    """An HTTPS server on 127.0.0.1 serving ``stem``'s certificate (client certs required and
    verified against ``client_ca`` when given); yields its port."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pki.crt(stem)), str(pki.key(stem)))
    if client_ca:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(str(pki.crt(client_ca)))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_apiserver_readyz_with_the_admin_certificate(pki):
    with https_server(pki, "apiserver", client_ca="ca") as port:
        url = f"https://127.0.0.1:{port}/readyz"
        assert probe(Readiness(url, ca=pki.crt("ca"), client="admin", body="ok"), pki).ok
        # another CA's client certificate is refused, and so is no certificate
        refused = probe(Readiness(url, ca=pki.crt("ca"), client="front-proxy-client"), pki)
        assert not refused.ok
        assert not probe(Readiness(url, ca=pki.crt("ca")), pki).ok
        # the server is verified against the run's CA, by its 127.0.0.1 SAN
        assert not probe(Readiness(url, ca=pki.crt("front-proxy-ca"), client="admin"), pki).ok


def test_localhost_name_verifies_too(pki):
    with https_server(pki, "controller-manager") as port:
        assert probe(Readiness(f"https://localhost:{port}/healthz", ca=pki.crt("ca"), body="ok"), pki).ok


def _mtls_handshake(pki, server_stem, client_stem, server_hostname, client_ca="ca"):
    """One TLS handshake: server ``server_stem`` requiring a client cert of ``client_ca``;
    the client presents ``client_stem`` and checks ``server_hostname``."""
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(str(pki.crt(server_stem)), str(pki.key(server_stem)))
    sctx.verify_mode = ssl.CERT_REQUIRED
    sctx.load_verify_locations(str(pki.crt(client_ca)))
    cctx = ssl.create_default_context(cafile=str(pki.crt("ca")))
    cctx.load_cert_chain(str(pki.crt(client_stem)), str(pki.key(client_stem)))
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    errors = []

    def serve():
        conn, _ = listener.accept()
        try:
            with sctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError) as exc:
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with cctx.wrap_socket(raw, server_hostname=server_hostname) as tls:
                tls.sendall(b"x")
    finally:
        thread.join(5)
        listener.close()
    if errors:
        raise errors[0]


def test_keda_grpc_link_is_mutual_tls_with_one_certificate_each(pki):
    # the adapter dials the operator's metrics service at 127.0.0.1:<grpc>
    _mtls_handshake(pki, "keda-operator", "keda-adapter", "127.0.0.1")


def test_aggregator_reaches_the_adapter_by_its_service_name(pki):
    # kube-aggregator: ServerName <service>.<namespace>.svc, front-proxy client certificate
    _mtls_handshake(pki, "keda-adapter", "front-proxy-client", "keda-metrics-apiserver.keda.svc",
                    client_ca="front-proxy-ca")
    with pytest.raises(ssl.SSLCertVerificationError):
        _mtls_handshake(pki, "keda-operator", "front-proxy-client",
                        "keda-metrics-apiserver.keda.svc", client_ca="front-proxy-ca")
