"""The autoscaler's I/O side of KEDA's value-reading triggers: each service asked as KEDA asks it.

Before each step, for every ``prometheus``, ``aws-cloudwatch`` and ``metrics-api`` trigger of the
policy, the service is asked once and its answer becomes a
:class:`~pytest_lagscale.control.observation.ValueReading` (``observation.values``); the trigger
parses it with KEDA's rules in ``control`` (pure). A failed call is the reading's ``error`` (a
trigger error in ``control``, counted toward ``fallback``).

Addresses, as for the kafka trigger's ``bootstrapServers`` (always the run's broker) and the
external trigger's ``scalerAddress: lagscale://local`` (the run's scaler): a run stands in for
the cluster's services, so

* ``prometheus``: ``serverAddress`` -> the run's Prometheus (:attr:`RunServices.prometheus_url`);
  in ``query``, the manifest's group and topic in double quotes (``"enrich"``, ``"events"``)
  -> the run's (a shared broker suffixes both);
* ``aws-cloudwatch``: ``awsEndpoint`` (or AWS's own, when unset) -> the run's moto server
  (:attr:`RunServices.aws_endpoint`); the dimensions ``Cluster Name`` / ``Consumer Group`` /
  ``Topic`` -> the run's publisher's (:mod:`pytest_lagscale.counterparts.lag_publisher`);
  credentials: ``identityOwner: operator`` or an ``authenticationRef`` -> moto's dummy keys; an
  access key id with ``awsSecretAccessKeyFromEnv`` -> the named variable's value (moto accepts
  any key);
* ``metrics-api``: ``url`` as written (a run has no stand-in for a user's endpoint).

:meth:`RunServices.mapping` is what the run records (``run_info.trigger_addresses``).

Source: kedacore/keda pkg/scalers/prometheus_scaler.go ExecutePromQuery,
aws_cloudwatch_scaler.go GetCloudwatchMetrics, metrics_api_scaler.go getMetricValue v2.20.2
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..control.observation import ValueReading
from ..sources.base import UtcNow, utc_now
from ..sources.cloudwatch import DIMENSIONS

#: Seconds per call when the trigger sets no ``timeout`` (KEDA's global HTTP timeout, 3 s).
DEFAULT_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RunServices:
    """The run's stand-ins for the cluster's services.

    Attributes:
        prometheus_url: the run's Prometheus (``http://127.0.0.1:<port>``), None before it runs.
        aws_endpoint: the run's moto server, None when the run started none.
        aws_credentials: ``{aws_access_key_id, aws_secret_access_key}`` of moto (not logged).
        cluster_name: the ``Cluster Name`` dimension the run's publisher writes.
        group, topic: the run's consumer group and topic.
        manifest_group, manifest_topic: the names the manifests use (the run's without suffix).
    """

    prometheus_url: str | None = None
    aws_endpoint: str | None = None
    aws_credentials: Mapping[str, str] | None = None
    cluster_name: str = ""
    group: str = ""
    topic: str = ""
    manifest_group: str = ""
    manifest_topic: str = ""

    def query(self, promql: str) -> str:
        """``promql`` with the manifest's quoted group and topic replaced by the run's."""
        for old, new in ((self.manifest_group, self.group), (self.manifest_topic, self.topic)):
            if old and new and old != new:
                promql = promql.replace(f'"{old}"', f'"{new}"')
        return promql

    def dimensions(self, pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
        """CloudWatch dimensions with MSK's three names set to the run's values."""
        run = dict(zip(DIMENSIONS, (self.cluster_name, self.group, self.topic)))
        return [{"Name": name, "Value": run.get(name) or value} for name, value in pairs]

    def mapping(self, triggers: Sequence[Any]) -> list[dict[str, Any]]:
        """One row per value trigger: its type, the address the manifest names and the one the
        run asks (what ``run_info.trigger_addresses`` records)."""
        rows = []
        for trigger in triggers:
            meta = trigger.meta
            kind = trigger.type_name
            manifest, run = {"prometheus": (getattr(meta, "server_address", None), self.prometheus_url),
                             "aws-cloudwatch": (getattr(meta, "aws_endpoint", "") or "aws", self.aws_endpoint),
                             }.get(kind, (getattr(meta, "url", None), getattr(meta, "url", None)))
            rows.append({"trigger_index": trigger.trigger_index, "type": kind, "manifest": manifest, "run": run})
        return rows


class ValueTriggerReader:
    """Asks each value trigger's service (see the module docstring).

    Args:
        services: the run's stand-ins.
        utc_clock: the wall clock (CloudWatch's query window ends at it).
    """

    def __init__(self, services: RunServices, *, utc_clock: UtcNow = utc_now):
        self.services = services
        self.utc_clock = utc_clock
        self._clients: dict[tuple[str, str], Any] = {}

    def read(self, triggers: Sequence[Any]) -> dict[int, ValueReading]:
        """One reading per trigger, by trigger index (never raises for a failed call)."""
        readings = {}
        for trigger in triggers:
            read = {"prometheus": self._prometheus, "aws-cloudwatch": self._cloudwatch,
                    "metrics-api": self._metrics_api}[trigger.type_name]
            try:
                readings[trigger.trigger_index] = read(trigger.meta)
            except Exception as exc:  # transport, HTTP, boto3: KEDA's scaler error
                readings[trigger.trigger_index] = ValueReading(error=f"{type(exc).__name__}: {exc}")
        return readings

    # -- one service each ---------------------------------------------------------------------
    def _prometheus(self, meta: Any) -> ValueReading:
        base = self.services.prometheus_url
        if not base:
            return ValueReading(error="the run has no Prometheus yet")
        now = self.utc_clock()
        params = {**meta.query_parameters, "query": self.services.query(meta.query),
                  "time": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
        if meta.namespace:
            params["namespace"] = meta.namespace
        body = _get(f"{base}/api/v1/query?{urllib.parse.urlencode(params)}", meta.timeout_s)
        response = json.loads(body)
        result = (response.get("data") or {}).get("result") or []
        stamp = None
        if len(result) == 1 and result[0].get("value"):
            stamp = datetime.fromtimestamp(float(result[0]["value"][0]), timezone.utc)
        return _reading(response, stamp, now)

    def _cloudwatch(self, meta: Any) -> ValueReading:
        from ..control.keda.aws_cloudwatch import get_metric_data_request

        now = self.utc_clock()
        request = get_metric_data_request(now, meta)
        for query in request["MetricDataQueries"]:
            if "MetricStat" in query:
                metric = query["MetricStat"]["Metric"]
                metric["Dimensions"] = self.services.dimensions(
                    [(d["Name"], d["Value"]) for d in metric["Dimensions"]])
        response = self._cloudwatch_client(meta).get_metric_data(**request)
        results = response.get("MetricDataResults") or []
        stamps = (results[0].get("Timestamps") or []) if results else []
        stamp = stamps[0] if stamps else None
        if stamp is not None and stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        return _reading(response, stamp, now)

    def _cloudwatch_client(self, meta: Any) -> Any:
        endpoint = self.services.aws_endpoint
        if not endpoint:
            raise RuntimeError("the run started no CloudWatch stand-in (moto); a policy with an "
                               "aws-cloudwatch trigger starts one")
        key = (meta.aws_region, meta.credentials_from_env)
        if key not in self._clients:
            import boto3

            credentials = dict(self.services.aws_credentials or {})
            if meta.credentials_from_env and meta.identity_owner in ("", "pod"):
                secret = os.environ.get(meta.credentials_from_env)
                if not secret:
                    raise RuntimeError(f"awsSecretAccessKeyFromEnv: the variable {meta.credentials_from_env!r} "
                                       "is not set")
                credentials["aws_secret_access_key"] = secret
            self._clients[key] = boto3.client("cloudwatch", region_name=meta.aws_region, endpoint_url=endpoint,
                                              **credentials)
        return self._clients[key]

    def _metrics_api(self, meta: Any) -> ValueReading:
        """The body of ``GET url`` (undated: the endpoint's JSON carries no standard time)."""
        return ValueReading(response=_get(meta.url, meta.timeout_s))


def _get(url: str, timeout_s: float | None) -> bytes:
    """``GET url``'s body.

    Raises:
        RuntimeError: an HTTP error status (with the start of the body), or no connection.
    """
    try:
        with urllib.request.urlopen(url, timeout=timeout_s or DEFAULT_TIMEOUT_S) as resp:
            return resp.read()
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"GET {url.split('?')[0]} answered {exc.code}: {exc.read()[:200]!r}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise RuntimeError(f"GET {url.split('?')[0]} failed: {getattr(exc, 'reason', exc)}") from exc


def _reading(response: Any, stamp: datetime | None, now: datetime) -> ValueReading:
    """A reading dated at ``stamp`` (staleness = now - stamp, never negative)."""
    if stamp is None:
        return ValueReading(response=response)
    return ValueReading(response=response, datapoint_utc=stamp.astimezone(timezone.utc).isoformat(),
                        staleness_s=round(max(0.0, (now - stamp).total_seconds()), 3))


__all__ = ["RunServices", "ValueTriggerReader"]
