"""A local Confluent Cloud Metrics API: ``POST /v2/metrics/cloud/query`` answered from Prometheus.

The run's Prometheus holds kafka_exporter's ``kafka_consumergroup_lag{consumergroup, topic,
partition}`` (the lag exporter, 1 s scrapes). This service serves it as the metric
``io.confluent.kafka.server/consumer_lag_offsets`` of one Kafka cluster (``cluster_id``), the way
Confluent Cloud does: per time bucket of the granularity (aligned to UTC), each series averaged
over the bucket (a GAUGE is averaged over time), then summed over the series that pass the
filter (the FLAT format: the query the ``confluent`` lag source sends, :mod:`.confluent_query`);
a point is dated at its bucket's start; a bucket is served once it has ended and ``latency_s`` more seconds passed (Confluent documents points as queryable
"typically within 5 minutes"; 0 by default). Points come newest first.

Requests are checked as the API documents (:mod:`.confluent_query`): HTTP basic auth with the
service's API key and secret (401 otherwise), the query body (400 with one detail per
problem), the cluster in the resource filter (403 when it is not this one), the dataset
(``cloud``; 404 otherwise). Errors use the API's ErrorResponse shape. No request is logged with
its headers; the credentials never appear in a log line or an answer.

Source: confluentinc/ccloud-sdk-go-v2 metrics/v2/api/openapi.yaml (query endpoint, ErrorResponse,
Object Model: GAUGE metrics are averaged over time, "Metric Data Latency", api-key security
scheme)
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..contract.errors import LagscaleError
from ..lifecycle import StartStop
from ..sources.base import UtcNow, utc_now
from ..sources.credentials import Secret
from .confluent_query import METRICS, ApiError, MetricsQuery, buckets, matches, parse_query

log = logging.getLogger(__name__)

QUERY_PATH = "/v2/metrics/{dataset}/query"
_MAX_BODY_BYTES = 1 << 20

#: ``{query labels}, {bucket start: value}`` of one series read from Prometheus.
Series = tuple[dict[str, str], dict[datetime, float]]


class PrometheusReader:
    """Bucket averages of kafka_exporter's lag series from a Prometheus HTTP API.

    Args:
        url: Prometheus base URL.
        series: the per-partition lag series (``kafka_consumergroup_lag``).
        timeout_s: seconds per request.
    """

    def __init__(self, url: str, series: str = "kafka_consumergroup_lag", timeout_s: float = 5.0):
        self.url, self.series, self.timeout_s = url.rstrip("/"), series, timeout_s

    def bucket_means(self, spans: list[tuple[datetime, datetime]]) -> list[tuple[dict[str, str], dict[datetime, float]]]:
        """Per series (its Prometheus labels) the mean of its samples in each ``(start, end)`` span.

        Raises:
            LagscaleError: Prometheus could not be queried.
        """
        out: dict[tuple[tuple[str, str], ...], tuple[dict[str, str], dict[datetime, float]]] = {}
        for (start, end) in spans:  # few spans (<= 360 for 6 h of PT1M); one instant query each
            seconds = max(1, int((end - start).total_seconds()))
            result = self._get("/api/v1/query", {"query": f"avg_over_time({self.series}[{seconds}s])",
                                                  "time": f"{end.timestamp():.3f}"})
            for item in result:
                labels = {k: v for k, v in item["metric"].items() if k != "__name__"}
                entry = out.setdefault(tuple(sorted(labels.items())), (labels, {}))
                entry[1][start] = float(item["value"][1])
        return list(out.values())

    def _get(self, path: str, params: Mapping[str, str]) -> list[dict[str, Any]]:
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as resp:
                answer = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise LagscaleError(f"confluent metrics service: Prometheus query {params['query']!r} at {self.url} "
                                f"failed: {exc}; check that Prometheus runs") from exc
        return answer.get("data", {}).get("result", [])


class ConfluentMetricsService(StartStop):
    """The local Metrics API (see the module docstring) on ``host:port``.

    Args:
        prometheus_url: where the lag series are.
        cluster_id: the Kafka cluster this service stands for (``lkc-...``).
        api_key: the Cloud API key clients must send.
        api_secret: its secret.
        host: address to bind.
        port: port to bind (0: a free one).
        latency_s: seconds after a bucket's end before it is served.
        reader: what reads Prometheus (default :class:`PrometheusReader`).
        clock: the wall clock (``now`` in intervals, bucket visibility).

    Raises:
        LagscaleError: from :meth:`start` when the address cannot be bound.
    """

    def __init__(self, prometheus_url: str, *, cluster_id: str, api_key: Secret, api_secret: Secret,
                 host: str = "127.0.0.1", port: int = 0, latency_s: float = 0.0,
                 reader: PrometheusReader | None = None, clock: UtcNow = utc_now):
        self.cluster_id, self.api_key, self.api_secret = cluster_id, api_key, api_secret
        self.host, self.requested_port, self.latency_s = host, port, latency_s
        self.reader = reader or PrometheusReader(prometheus_url)
        self.clock = clock
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port``; raises before :meth:`start`."""
        if self._server is None:
            raise LagscaleError("confluent metrics service: not started; call start() first")
        return f"http://{self.host}:{self._server.server_port}"

    def start(self) -> ConfluentMetricsService:
        """Bind and serve on a daemon thread; returns self."""
        if self._server is not None:
            return self
        service = self

        class Handler(_Handler):
            owner = service

        try:
            self._server = ThreadingHTTPServer((self.host, self.requested_port), Handler)
        except OSError as exc:
            raise LagscaleError(f"confluent metrics service: cannot bind {self.host}:{self.requested_port}: {exc}; "
                                "pick another port") from exc
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="lagscale-confluent-metrics",
                                        daemon=True)
        self._thread.start()
        log.info("confluent metrics service: serving %s for cluster %s on %s", QUERY_PATH, self.cluster_id, self.url)
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop serving and close the socket. Idempotent."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    # -- one request ----------------------------------------------------------------------
    def answer(self, method: str, path: str, authorization: str | None, body: bytes) -> tuple[int, dict[str, Any]]:
        """The status and JSON body for one request (what the HTTP handler sends).

        Never raises for a bad request: every refusal is an ErrorResponse with its status.
        """
        try:
            return 200, self._query(method, path, authorization, body)
        except ApiError as exc:
            return exc.status, exc.body()
        except LagscaleError as exc:
            log.warning("%s", exc)
            return 500, ApiError(500, ["the metrics backend (Prometheus) could not be read"]).body()

    def _query(self, method: str, path: str, authorization: str | None, body: bytes) -> dict[str, Any]:
        parts = urllib.parse.urlsplit(path).path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["v2", "metrics"] or parts[3] != "query":
            raise ApiError(404, [f"no endpoint {urllib.parse.urlsplit(path).path!r}; the query endpoint is "
                                 "POST /v2/metrics/cloud/query"])
        if method != "POST":
            raise ApiError(405, [f"method {method} is not allowed; use POST"])
        self._authenticate(authorization)
        if parts[2] != "cloud":
            raise ApiError(404, [f"dataset {parts[2]!r} not found; the only dataset is 'cloud'"])
        try:
            document = json.loads(body or b"null")
        except ValueError:
            raise ApiError(400, ["request body is not valid JSON"]) from None
        now = self.clock()
        query = parse_query(document)
        if self.cluster_id not in query.cluster_ids:
            raise ApiError(403, [f"not authorized for the resource(s) kafka.id:{','.join(query.cluster_ids)}"])
        return {"data": self._points(query, now)}

    def _authenticate(self, authorization: str | None) -> None:
        scheme, _, encoded = (authorization or "").partition(" ")
        try:
            key, sep, secret = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            key, sep, secret = "", "", ""
        ok = (scheme == "Basic" and sep == ":"
              and hmac.compare_digest(key.encode(), self.api_key.reveal().encode())
              and hmac.compare_digest(secret.encode(), self.api_secret.reveal().encode()))
        if not ok:
            raise ApiError(401, ["Unauthorized: send 'Authorization: Basic base64(<api key>:<api secret>)' with a "
                                 "Cloud API key"])

    def _points(self, query: MetricsQuery, now: datetime) -> list[dict[str, Any]]:
        spans = buckets(query, now - timedelta(seconds=self.latency_s))
        labels_of = METRICS[query.metric]
        values: dict[datetime, float] = {}
        for prom_labels, means in (self.reader.bucket_means(spans) if spans else []):
            labels = {name: (self.cluster_id if not prom else prom_labels.get(prom, ""))
                      for name, prom in labels_of.items()}
            if not matches(query.filter, labels):
                continue
            for start, mean in means.items():
                values[start] = values.get(start, 0.0) + mean
        return [{"timestamp": _iso(t), "value": v} for t, v in sorted(values.items(), reverse=True)]


class _Handler(BaseHTTPRequestHandler):
    owner: ConfluentMetricsService
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, _MAX_BODY_BYTES)) if length else b""
        status, document = self.owner.answer(self.command, self.path, self.headers.get("Authorization"), body)
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_GET = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        log.debug("confluent metrics service: %s %s", self.address_string(), format % args)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
