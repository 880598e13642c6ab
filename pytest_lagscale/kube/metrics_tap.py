"""The metrics tap: a TLS reverse proxy between kube-aggregator and the KEDA metrics adapter.

The ExternalName Service ``keda/keda-metrics-apiserver`` points at the tap's port on 127.0.0.1
instead of the adapter's, so every external-metrics call the HPA controller makes passes
through it. The tap stands in for the adapter on both TLS legs, as kube-aggregator expects:

* **aggregator -> tap.** kube-aggregator dials the APIService backend with ServerName
  ``<service>.<namespace>.svc``, verifies it against the APIService ``caBundle`` (the run CA),
  presents the front-proxy client certificate and passes the user in ``X-Remote-User``,
  ``X-Remote-Group`` and ``X-Remote-Extra-*`` headers (k8s.io/kube-aggregator
  pkg/apiserver/handler_proxy.go ``proxyHandler.ServeHTTP``, ``updateAPIService``). The tap
  serves the adapter's own certificate (``keda-adapter/tls.crt``, which names that service),
  requires a client certificate of ``front-proxy-ca`` and offers only ``http/1.1`` in ALPN, so
  Go's transport speaks HTTP/1.1 to it.
* **tap -> adapter.** Each request is forwarded to ``https://127.0.0.1:<adapter port>`` with the
  same method, path, query, body and headers (``X-Remote-*`` included, hop-by-hop headers
  dropped, RFC 9110 §7.6.1), presenting ``front-proxy-client`` and verifying the adapter against
  ``ca.crt`` with the same server name. Status, headers and body come back unchanged (the body
  is read whole: the external metrics API has no watch or streaming responses; a chunked answer
  is returned with a Content-Length). Both legs keep connections alive; one thread per
  downstream connection, each with its own upstream connection.

Every ``GET /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=...``
is recorded as a :class:`~.metric_reads.MetricRead` (:mod:`.metric_reads` reads the request and
the answer); discovery and OpenAPI paths are proxied, not recorded.

Source: docs/kubernetes.md "Conformance: the shadow controller"; the request shape
is k8s.io/metrics pkg/client/external_metrics/client.go ``namespacedMetrics.List``.
"""

from __future__ import annotations

import bisect
import http.client
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from ..contract.clock import Clock, RealClock
from ..contract.errors import LagscaleError
from ..lifecycle import StartStop
from ..sources.base import UtcNow, utc_now
from .certs import LOOPBACK_IP, Pki, adapter_service_name
from .metric_reads import MetricRead, parse_metric_path, parse_metric_values

log = logging.getLogger(__name__)

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "proxy-connection", "te", "trailer", "trailers", "transfer-encoding",
                        "upgrade"})
HANDSHAKE_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 120.0  # longer than Go's 90 s IdleConnTimeout: the client closes first


class EventSink(Protocol):
    """What the tap needs of :class:`pytest_lagscale.contract.eventlog.EventLog`."""

    def emit(self, event: str, **fields: Any) -> Any: ...


def forward_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers to forward: all but hop-by-hop ones, those named in ``Connection`` and
    ``Content-Length`` (set again from the body that is sent). Order and repeats are kept."""
    headers = list(headers)
    named = {token.strip().lower() for name, value in headers if name.lower() == "connection"
             for token in value.split(",")}
    return [(name, value) for name, value in headers
            if name.lower() not in HOP_BY_HOP | named | {"content-length"}]


class UpstreamError(LagscaleError):
    """The adapter could not be reached or did not answer (the tap answers 502)."""


class _AdapterConnection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1:<port>, verifying the certificate for ``server_name`` (not the IP)."""

    def __init__(self, port: int, context: ssl.SSLContext, server_name: str, timeout_s: float):
        super().__init__(LOOPBACK_IP, port, timeout=timeout_s, context=context)
        self.tls_context, self.server_name = context, server_name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # TCP, TCP_NODELAY
        self.sock = self.tls_context.wrap_socket(self.sock, server_hostname=self.server_name)


class _Upstream:
    """One kept-alive HTTPS connection to the adapter (per downstream connection)."""

    def __init__(self, port: int, context: ssl.SSLContext, server_name: str, timeout_s: float):
        self.port = port
        self._conn = _AdapterConnection(port, context, server_name, timeout_s)

    def exchange(self, method: str, target: str, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send one request; ``(status, reason, headers, body)``. A kept-alive connection the
        adapter closed meanwhile is retried once on a new one.

        Raises:
            UpstreamError: connecting, the TLS handshake or the exchange failed.
        """
        for attempt in (1, 2):
            reused = self._conn.sock is not None
            try:
                self._conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    self._conn.putheader(name, value)
                if body or method in ("POST", "PUT", "PATCH"):
                    self._conn.putheader("Content-Length", str(len(body)))
                self._conn.endheaders(body or None)
                resp = self._conn.getresponse()
                data = resp.read()
                return resp.status, resp.reason, resp.getheaders(), data
            except (OSError, http.client.HTTPException) as exc:
                self._conn.close()
                if not (reused and attempt == 1):
                    raise UpstreamError(f"adapter at {LOOPBACK_IP}:{self.port}: "
                                        f"{type(exc).__name__}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self._conn.close()


class _Handler(BaseHTTPRequestHandler):
    """Proxies every request of one downstream connection (HTTP/1.1, kept alive)."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_TIMEOUT_S
    disable_nagle_algorithm = True  # headers and body are two writes
    server: _TapServer

    def setup(self) -> None:
        super().setup()
        self.upstream = self.server.tap._new_upstream()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.upstream.close()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._proxy()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET  # noqa: N815

    def _proxy(self) -> None:
        tap = self.server.tap
        t_s, wall = tap.clock.now(), tap.utc_now().isoformat()
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self._reply(411, "Length Required", [("Content-Type", "text/plain; charset=utf-8")],
                        b"metrics tap: chunked request bodies are not forwarded; send Content-Length\n")
            self.close_connection = True
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = forward_headers(self.headers.items())
        if "Host" not in self.headers:  # an HTTP/1.0 client; the adapter (Go) requires one
            headers.append(("Host", tap.server_name))
        try:
            status, reason, resp_headers, resp_body = self.upstream.exchange(
                self.command, self.path, headers, body)
        except UpstreamError as exc:
            log.debug("metrics tap: %s %s: %s", self.command, self.path, exc)
            status, reason, resp_body = 502, "Bad Gateway", f"metrics tap: {exc}\n".encode()
            resp_headers = [("Content-Type", "text/plain; charset=utf-8")]
        self._reply(status, reason, resp_headers, resp_body)
        if self.command == "GET":
            tap._observe(self.path, t_s, wall, status, resp_body, self.headers.get("X-Remote-User", ""))

    def _reply(self, status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response_only(status, reason)
        keep_length = self.command == "HEAD"
        for name, value in forward_headers(headers) if not keep_length else headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if not keep_length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        log.debug("metrics tap: %s " + format, self.client_address[0], *args)


class _TapServer(ThreadingHTTPServer):
    """A thread per connection; the TLS handshake runs on that thread (a stalled client cannot
    block accept()); live connections are tracked so stop() can close them."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], tap: MetricsTap, context: ssl.SSLContext):
        self.tap, self.tls = tap, context
        self._live: set[ssl.SSLSocket] = set()
        self._conn_threads: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._closing = False
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._connection, args=(request, client_address),
                                  name="lagscale-metrics-tap-conn", daemon=True)
        with self._lock:
            self._conn_threads.add(thread)
        thread.start()

    def _connection(self, request: socket.socket, client_address: Any) -> None:
        try:
            try:
                request.settimeout(HANDSHAKE_TIMEOUT_S)
                conn = self.tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
            except OSError:  # the client is gone already
                request.close()
                return
            with self._lock:
                if self._closing:
                    conn.close()
                    return
                self._live.add(conn)  # from here stop() can shut it down, handshake included
            try:
                conn.do_handshake()
            except (ssl.SSLError, OSError) as exc:
                log.info("metrics tap: TLS handshake with %s refused: %s", client_address[0], exc)
            else:
                self._serve(conn, client_address)
            finally:
                with self._lock:
                    self._live.discard(conn)
                conn.close()
        finally:
            with self._lock:
                self._conn_threads.discard(threading.current_thread())

    def _serve(self, conn: ssl.SSLSocket, client_address: Any) -> None:
        try:
            self.RequestHandlerClass(conn, client_address, self)
        except (ssl.SSLError, OSError) as exc:
            log.debug("metrics tap: connection from %s ended: %s", client_address[0], exc)
        except Exception:
            self.handle_error(conn, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.exception("metrics tap: error serving %s", client_address)

    def close_connections(self, timeout_s: float) -> None:
        """Shut every live connection down (a blocked read returns) and join the threads."""
        with self._lock:
            self._closing = True
            live, threads = list(self._live), list(self._conn_threads)
        for conn in live:
            try:
                socket.socket.shutdown(conn, socket.SHUT_RDWR)  # the TCP socket, not TLS state
            except OSError:
                pass
        for thread in threads:
            thread.join(timeout_s)


class MetricsTap(StartStop):
    """The tap on ``127.0.0.1:<port>`` (see the module docstring).

    Args:
        pki: the run's certificates (:func:`pytest_lagscale.kube.certs.generate`).
        upstream_port: the adapter's secure port on 127.0.0.1.
        port: the tap's port; 0 picks a free one (read :attr:`port` after :meth:`start`).
        events: an EventLog (anything with ``emit(event, **fields)``): each read is written as a
            ``metric_read`` event with the :class:`MetricRead` fields; or None.
        on_read: called with each :class:`MetricRead` on the connection's thread; or None.
        clock: the source of ``MetricRead.t_s`` (monotonic seconds; ``RealClock`` by default).
        utc_now: the source of ``MetricRead.wall_utc`` (aware UTC datetime).
        server_name: the adapter's TLS server name (``<service>.<namespace>.svc``).
        upstream_timeout_s: seconds to connect to and read from the adapter.

    Raises:
        LagscaleError: from :meth:`start`, the port cannot be bound or a certificate not read.

    Example:
        >>> tap = MetricsTap(pki, upstream_port=ports.keda_adapter)  # doctest: +SKIP
        >>> with tap:                                                # doctest: +SKIP
        ...     apply(adapter_service("keda", tap.port))
    """

    def __init__(self, pki: Pki, upstream_port: int, *, port: int = 0, events: EventSink | None = None,
                 on_read: Callable[[MetricRead], None] | None = None, clock: Clock | None = None,
                 utc_now: UtcNow = utc_now, server_name: str = adapter_service_name("keda-metrics-apiserver", "keda"),
                 upstream_timeout_s: float = 10.0):
        self.pki, self.upstream_port, self.requested_port = pki, upstream_port, port
        self.events, self.on_read = events, on_read
        self.clock, self.utc_now = clock or RealClock(), utc_now
        self.server_name, self.upstream_timeout_s = server_name, upstream_timeout_s
        self._reads: list[MetricRead] = []
        self._reads_lock = threading.Lock()
        self._server: _TapServer | None = None
        self._thread: threading.Thread | None = None
        self._upstream_context: ssl.SSLContext | None = None

    @property
    def port(self) -> int:
        """The bound port; raises before :meth:`start`."""
        if self._server is None:
            raise LagscaleError("metrics tap: not started; call start() first")
        return self._server.server_address[1]

    def reads(self) -> list[MetricRead]:
        """Every recorded read so far, in arrival order (``t_s``); a copy."""
        with self._reads_lock:
            return list(self._reads)

    def start(self) -> MetricsTap:
        """Load the certificates, bind and serve on a daemon thread; returns self. Idempotent."""
        if self._server is not None:
            return self
        try:
            downstream, self._upstream_context = self._contexts()
        except (OSError, ssl.SSLError) as exc:
            raise LagscaleError(f"metrics tap: certificates in {self.pki.dir} cannot be loaded: {exc}; "
                                "generate the run's PKI first (kube.certs.generate)") from exc
        try:
            self._server = _TapServer((LOOPBACK_IP, self.requested_port), self, downstream)
        except OSError as exc:
            raise LagscaleError(f"metrics tap: cannot bind {LOOPBACK_IP}:{self.requested_port}: {exc}; "
                                "pick another port or 0") from exc
        self._thread = threading.Thread(target=self._server.serve_forever, name="lagscale-metrics-tap",
                                        daemon=True)
        self._thread.start()
        log.info("metrics tap: %s:%d -> adapter %s:%d", LOOPBACK_IP, self.port, LOOPBACK_IP, self.upstream_port)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop accepting, close every connection and join the threads. Idempotent."""
        server, self._server = self._server, None
        thread, self._thread = self._thread, None
        if server is not None:
            if thread is not None and thread.is_alive():
                server.shutdown()  # returns once serve_forever has left its loop
            server.server_close()
            server.close_connections(timeout_s)
        if thread is not None:
            thread.join(timeout_s)

    def _contexts(self) -> tuple[ssl.SSLContext, ssl.SSLContext]:
        adapter = self.pki.keda_dir("keda-adapter")
        down = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        down.load_cert_chain(str(adapter / "tls.crt"), str(adapter / "tls.key"))
        down.verify_mode = ssl.CERT_REQUIRED
        down.load_verify_locations(str(self.pki.crt("front-proxy-ca")))
        down.set_alpn_protocols(["http/1.1"])
        up = ssl.create_default_context(cafile=str(self.pki.crt("ca")))
        up.load_cert_chain(str(self.pki.crt("front-proxy-client")), str(self.pki.key("front-proxy-client")))
        up.set_alpn_protocols(["http/1.1"])
        return down, up

    def _new_upstream(self) -> _Upstream:
        assert self._upstream_context is not None
        return _Upstream(self.upstream_port, self._upstream_context, self.server_name, self.upstream_timeout_s)

    def _observe(self, target: str, t_s: float, wall_utc: str, status: int, body: bytes, remote_user: str) -> None:
        """Record one GET if it is an external-metrics read (called after the answer is sent)."""
        parsed = parse_metric_path(target)
        if parsed is None:
            return
        values, total, error = parse_metric_values(status, body)
        read = MetricRead(t_s, wall_utc, *parsed, status=status, values=values, total=total,
                          remote_user=remote_user, error=error)
        with self._reads_lock:
            bisect.insort(self._reads, read, key=lambda r: r.t_s)
        if self.events is not None:
            self.events.emit("metric_read", **asdict(read))
        if self.on_read is not None:
            try:
                self.on_read(read)
            except Exception:  # the caller's bug must not cut the aggregator's connection
                log.exception("metrics tap: on_read callback failed for %s", read)
