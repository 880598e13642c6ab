"""The run's Prometheus scrapes a cluster's pods through the apiserver's pod proxy.

On a cluster with kubelets the replicas' ``/metrics`` are on pod addresses the harness may not
reach, and no Prometheus need run in the cluster: the apiserver proxies
``/api/v1/namespaces/NS/pods/NAME:PORT/proxy/metrics`` to the pod. Prometheus cannot log in
the way a kubeconfig does (exec plugins, tokens, client certificates), so
:class:`PodProxyRelay` listens on 127.0.0.1 and forwards exactly those paths, for the run's
namespace only, through the kubernetes client with the kubeconfig's credentials
(``CoreV1Api.connect_get_namespaced_pod_proxy_with_path``). Prometheus's ``replicas`` job gets
one target group per pod (:func:`target_groups`): the relay's address, the pod's proxy path as
``__metrics_path__`` and the pod's name as ``instance``.

Source: kubernetes API reference, core/v1 Pod "connect GET requests to proxy of Pod"
(``/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}``, ``name`` may carry ``:port``);
prometheus docs, configuration, ``<file_sd_config>`` (``__metrics_path__`` per target group).
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable

from ..lifecycle import StartStop

#: Seconds one forwarded scrape may take (Prometheus's own timeout is shorter).
FORWARD_TIMEOUT_S = 5.0


def proxy_path(namespace: str, pod: str, port: int) -> str:
    """The apiserver's pod proxy path of a pod's ``/metrics``.

    Example:
        >>> proxy_path("lagscale-r1", "consumer-7c9-x2", 9400)
        '/api/v1/namespaces/lagscale-r1/pods/consumer-7c9-x2:9400/proxy/metrics'
    """
    return f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/metrics"


def target_groups(relay_address: str, namespace: str, pods: Iterable[str],
                  port: int) -> list[dict[str, Any]]:
    """Prometheus file_sd target groups: one per pod, scraped through the relay."""
    return [{"targets": [relay_address],
             "labels": {"__metrics_path__": proxy_path(namespace, pod, port), "instance": pod}}
            for pod in sorted(pods)]


class PodProxyRelay(StartStop):
    """A loopback HTTP server forwarding pod-proxy ``/metrics`` GETs of one namespace.

    Args:
        api: a ``kubernetes.client.ApiClient`` for the cluster.
        namespace: the only namespace whose pods are forwarded (others get 404).

    Attributes:
        address: ``127.0.0.1:<port>`` once started.
        forwarded_total, failed_total: scrapes forwarded, and those the apiserver refused or
            that failed (Prometheus sees a 502 with the reason).
    """

    def __init__(self, api: Any, namespace: str):
        self.api = api
        self.namespace = namespace
        self.address = ""
        self.forwarded_total = 0
        self.failed_total = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._path = re.compile(rf"^/api/v1/namespaces/{re.escape(namespace)}/pods/"
                                r"([a-z0-9.-]+):([0-9]{1,5})/proxy/metrics$")

    def start(self) -> "PodProxyRelay":
        if self._server is not None:
            return self
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                status, body, ctype = relay.forward(self.path)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # scrapes every second: not logged
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="lagscale-pod-proxy", daemon=True)
        self._thread.start()
        return self

    def forward(self, path: str) -> tuple[int, bytes, str]:
        """``(status, body, content type)`` of one GET of ``path`` through the apiserver."""
        from kubernetes import client

        match = self._path.match(path.split("?", 1)[0])
        if match is None:
            return 404, b"not a pod metrics path of the run's namespace\n", "text/plain"
        pod, port = match.group(1), match.group(2)
        try:
            resp = client.CoreV1Api(self.api).connect_get_namespaced_pod_proxy_with_path(
                f"{pod}:{port}", self.namespace, "metrics", _preload_content=False,
                _request_timeout=FORWARD_TIMEOUT_S)
            body = resp.data
            self.forwarded_total += 1
            return 200, body, resp.headers.get("Content-Type", "text/plain; version=0.0.4")
        except Exception as exc:  # the apiserver's refusal or a timeout: Prometheus records it
            self.failed_total += 1
            status = getattr(exc, "status", None)
            return 502, f"{pod}:{port}: {status or type(exc).__name__}: {exc}\n".encode()[:2000], \
                "text/plain"

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop serving. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


__all__ = ["FORWARD_TIMEOUT_S", "PodProxyRelay", "proxy_path", "target_groups"]
