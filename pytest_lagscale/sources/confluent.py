"""The ``confluent`` lag source: the Confluent Cloud Metrics API's ``consumer_lag_offsets``, queried
the way the recipe "Kafka Lag Autoscaler" queries it.

One ``POST /v2/metrics/cloud/query`` per read with the recipe's body::

    {"aggregations": [{"metric": "io.confluent.kafka.server/consumer_lag_offsets", "agg": "SUM"}],
     "filter": {"op": "AND", "filters": [
         {"field": "resource.kafka.id", "op": "EQ", "value": "<cluster id>"},
         {"field": "metric.consumer_group_id", "op": "EQ", "value": "<group>"}]},
     "granularity": "PT1M",
     "intervals": ["<now - 5 min>/<now>"]}

HTTP basic auth with a Cloud API key and secret read from the environment (``CONFLUENT_API_KEY``
and ``CONFLUENT_API_SECRET``, or the variables ``api_key_env`` / ``api_secret_env`` name); they
are sent in the ``Authorization`` header only, never logged, never in a message. The answer's
``data`` is a list of points (``timestamp``, ``value``); the reading is the sum of the values
of the newest timestamp (one point without ``group_by``), as the recipe sums ``data[].value``.
No point gives 0 records (``empty=unknown``: no value). An error answer
(``{"errors": [{"status": "400", "detail": "..."}]}``) becomes a :class:`LagSourceError` with the
status and the details.

Staleness: a point is dated at the start of its 1-minute bucket, and Confluent documents that
points are typically queryable within 5 minutes of their origin.

Source: confluentinc/ccloud-sdk-go-v2 metrics/v2/api/openapi.yaml (QueryRequest, Granularity,
FieldFilter, CompoundFilter, FlatQueryResponse, ErrorResponse, "Metric Data Latency");
the recipe "Kafka Lag Autoscaler" (docs/lag-sources.md)
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from ..config._problems import Problems
from ..contract.errors import ConfigError
from . import _options
from .base import EMPTY_POLICIES, LagSourceError, TotalLag, UtcNow, finite_lag, utc_now
from .credentials import Secret, secret_from_env

METRIC = "io.confluent.kafka.server/consumer_lag_offsets"
QUERY_PATH = "/v2/metrics/cloud/query"
DEFAULT_URL = "https://api.telemetry.confluent.cloud"
GRANULARITY = "PT1M"
API_KEY_ENV = "CONFLUENT_API_KEY"
API_SECRET_ENV = "CONFLUENT_API_SECRET"
OPTION_KEYS = ("cluster_id", "url", "window_s", "empty", "timeout_s", "api_key_env", "api_secret_env")


@dataclass(frozen=True)
class ConfluentSettings:
    """What the source asks the Metrics API.

    Attributes:
        cluster_id: the Kafka cluster (``resource.kafka.id``, ``lkc-...``).
        consumer_group: ``metric.consumer_group_id``.
        api_key: the Cloud API key (shown as ``***``).
        api_secret: the Cloud API secret (shown as ``***``).
        url: the API's base URL (the local service's in tests and runs).
        window_s: the query interval ends now and starts ``window_s`` earlier (300 s).
        empty: ``zero`` (recipe) or ``unknown`` when the answer has no point.
        timeout_s: seconds to wait for the answer.
    """

    cluster_id: str
    consumer_group: str
    api_key: Secret
    api_secret: Secret
    url: str = DEFAULT_URL
    window_s: float = 300.0
    empty: str = "zero"
    timeout_s: float = 10.0

    @classmethod
    def from_options(cls, group: str, options: Mapping[str, Any],
                     environ: Mapping[str, str] | None = None) -> ConfluentSettings:
        """Validate ``options`` (keys :data:`OPTION_KEYS`) for ``group``; the credentials come
        from the environment variables ``api_key_env`` and ``api_secret_env`` name.

        Raises:
            ConfigError: every invalid option and every unset variable, one line each (named,
                never shown).
        """
        p = Problems("confluent lag source options")
        _options.check_keys(options, OPTION_KEYS, p)
        fields: dict[str, Any] = {
            "cluster_id": _options.text(options, "cluster_id", p, example="lkc-abc123"),
            "url": _options.text(options, "url", p, default=DEFAULT_URL).rstrip("/"),
            "window_s": _options.seconds(options, "window_s", p, default=300.0, lo=60.0, hi=21_600.0),
            "empty": _options.choice(options, "empty", p, EMPTY_POLICIES),
            "timeout_s": _options.seconds(options, "timeout_s", p, default=10.0, lo=0.1, hi=300.0),
        }
        for key, name, default in (("api_key_env", "api_key", API_KEY_ENV),
                                   ("api_secret_env", "api_secret", API_SECRET_ENV)):
            variable = _options.text(options, key, p, default=default)
            try:
                fields[name] = secret_from_env(variable, key, p.source, environ)
            except ConfigError as exc:
                fields[name] = Secret("", origin=f"${variable}")
                p.lines.extend(exc.problems)
        p.raise_if_any()
        return cls(consumer_group=group, **fields)


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def query_body(settings: ConfluentSettings, now_utc: datetime) -> dict[str, Any]:
    """The recipe's request body for one read at ``now_utc`` (see the module docstring)."""
    start = now_utc - timedelta(seconds=settings.window_s)
    return {
        "aggregations": [{"metric": METRIC, "agg": "SUM"}],
        "filter": {"op": "AND", "filters": [
            {"field": "resource.kafka.id", "op": "EQ", "value": settings.cluster_id},
            {"field": "metric.consumer_group_id", "op": "EQ", "value": settings.consumer_group},
        ]},
        "granularity": GRANULARITY,
        "intervals": [f"{_iso(start)}/{_iso(now_utc)}"],
    }


def basic_auth(api_key: Secret, api_secret: Secret) -> str:
    """The ``Authorization`` header value: ``Basic base64(key:secret)``."""
    pair = f"{api_key.reveal()}:{api_secret.reveal()}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def parse_timestamp(text: Any, where: str) -> datetime:
    """An RFC 3339 timestamp (``2019-10-17T20:17:00Z``) as an aware UTC datetime.

    Raises:
        LagSourceError: it is not one.
    """
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError as exc:
        raise LagSourceError(f"{where}: got {text!r}, expected an RFC 3339 timestamp") from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def lag_from_query_response(response: Any, *, empty: str, read_utc: datetime) -> TotalLag:
    """The reading from a flat query response ``{"data": [{"timestamp": ..., "value": ...}]}``:
    the sum of the values dated at the newest timestamp.

    Raises:
        LagSourceError: no ``data`` list, or a point without an RFC 3339 ``timestamp`` or a
            numeric ``value``.
    """
    where = f"confluent lag source: {METRIC}"
    data = response.get("data") if isinstance(response, Mapping) else None
    if not isinstance(data, list):
        raise LagSourceError(f"{where}: got {str(response)[:120]!r}, expected a query response with a 'data' list")
    if not data:
        return TotalLag.empty(empty, read_utc, ConfluentLagSource.name)
    points = []
    for point in data:
        if not isinstance(point, Mapping):
            raise LagSourceError(f"{where}: got point {point!r}, expected an object with timestamp and value")
        points.append((parse_timestamp(point.get("timestamp"), f"{where} point timestamp"),
                       finite_lag(point.get("value"), f"{where} point value")))
    newest = max(stamp for stamp, _ in points)
    return TotalLag(sum(v for stamp, v in points if stamp == newest), newest, read_utc, ConfluentLagSource.name)


def error_details(body: bytes) -> str:
    """The ``detail`` lines of an ErrorResponse body, joined with ``; `` (or the body's start)."""
    try:
        errors = json.loads(body.decode("utf-8", "replace")).get("errors")
        details = [str(e.get("detail", "")) for e in errors if isinstance(e, Mapping)]
        if details:
            return "; ".join(details)
    except (ValueError, AttributeError, TypeError):
        pass
    return body[:200].decode("utf-8", "replace").strip() or "no body"


class ConfluentLagSource:
    """Total lag from the Confluent Cloud Metrics API (see the module docstring).

    Args:
        settings: what to ask, with the credentials.
        clock: the wall clock the query interval ends at.

    Raises:
        LagSourceError: from :meth:`total_lag` when the request fails or the answer is malformed.
    """

    name = "confluent"
    per_partition: ClassVar[bool] = False

    def __init__(self, settings: ConfluentSettings, *, clock: UtcNow = utc_now):
        self.settings = settings
        self.clock = clock

    @classmethod
    def from_options(cls, admin: Any, group: str, topic: str,
                     options: Mapping[str, Any] | None = None) -> ConfluentLagSource:
        """The registry's factory (see :class:`ConfluentSettings`); ``admin`` and ``topic`` are
        unused (the recipe filters on cluster and group only).

        Raises:
            ConfigError: every invalid option, one line each.
        """
        return cls(ConfluentSettings.from_options(group, options or {}))

    @property
    def query_url(self) -> str:
        """``<url>/v2/metrics/cloud/query``."""
        return self.settings.url + QUERY_PATH

    def __repr__(self) -> str:
        return f"ConfluentLagSource({self.settings!r})"

    def total_lag(self) -> TotalLag:
        """One query (:func:`query_body`) and its reading (:func:`lag_from_query_response`).

        Raises:
            LagSourceError: the API answered an error (its status and details), could not be
                reached, or answered something that is not a query response.
        """
        s = self.settings
        now = self.clock()
        request = urllib.request.Request(
            self.query_url, data=json.dumps(query_body(s, now)).encode(), method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json",
                     "Authorization": basic_auth(s.api_key, s.api_secret)})
        where = f"confluent lag source: POST {self.query_url}"
        try:
            with urllib.request.urlopen(request, timeout=s.timeout_s) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            raise LagSourceError(f"{where} answered {exc.code}: {error_details(exc.read())}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise LagSourceError(f"{where} failed: {getattr(exc, 'reason', exc)}; check the url") from exc
        try:
            response = json.loads(body)
        except ValueError as exc:
            raise LagSourceError(f"{where} answered {body[:120]!r}, expected JSON") from exc
        return lag_from_query_response(response, empty=s.empty, read_utc=now)
