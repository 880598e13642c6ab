"""The ``cloudwatch`` lag source: Amazon MSK's ``SumOffsetLag`` from AWS CloudWatch, read the way the
recipe "Kafka Lag Autoscaler" reads it.

One ``GetMetricStatistics`` call per read: namespace ``AWS/Kafka``, metric ``SumOffsetLag``,
dimensions ``Cluster Name`` / ``Consumer Group`` / ``Topic``, ``Period`` 60, ``Statistics``
``["Maximum"]``, from 5 minutes ago to now. The value is the ``Maximum`` of the newest datapoint
(``datapoint=max``: the largest over the window); no datapoint gives 0 records, as the recipe
does (``empty=unknown``: no value). boto3 is imported at the first read; ``endpoint_url`` points
the client at moto's server (:mod:`pytest_lagscale.counterparts.moto_server`) in tests and runs.

Staleness: MSK publishes the metric once a minute, and a datapoint is dated at the start of its
period, so a reading is at least the time since the newest period began and up to period +
CloudWatch's ingestion delay old.

Credentials: boto3's default chain (``AWS_ACCESS_KEY_ID`` ...), or the environment variables
named by ``access_key_id_env`` / ``secret_access_key_env``; they are never logged.

Source: the recipe "Kafka Lag Autoscaler" (docs/lag-sources.md); AWS CloudWatch API GetMetricStatistics;
Amazon MSK metric SumOffsetLag (consumer-lag metrics, dimensions Cluster Name, Consumer Group,
Topic)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from ..config._problems import Problems
from ..config.trigger_metadata.aws_cloudwatch import is_cloudwatch_period
from ..contract.errors import ConfigError
from . import _options
from .base import EMPTY_POLICIES, LagSourceError, TotalLag, UtcNow, finite_lag, utc_now
from .credentials import Secret, secret_from_env

NAMESPACE = "AWS/Kafka"
METRIC_NAME = "SumOffsetLag"
STATISTIC = "Maximum"
#: The dimension names of MSK's consumer-lag metrics, in the recipe's order.
DIMENSIONS = ("Cluster Name", "Consumer Group", "Topic")
DATAPOINT_PICKS = ("latest", "max")
OPTION_KEYS = ("cluster_name", "region", "endpoint_url", "period_s", "window_s", "empty", "datapoint",
               "access_key_id_env", "secret_access_key_env")


@dataclass(frozen=True)
class CloudWatchSettings:
    """What the source asks CloudWatch.

    Attributes:
        cluster_name: the MSK cluster (dimension ``Cluster Name``).
        consumer_group: dimension ``Consumer Group``.
        topic: dimension ``Topic``.
        region: the AWS region of the client.
        endpoint_url: the CloudWatch endpoint (None: AWS's; moto's server in tests and runs).
        period_s: ``Period`` in seconds (60 as the recipe; a multiple of 60, or 1, 5, 10, 30).
        window_s: how far back the query starts, seconds (300: 5 minutes, as the recipe).
        empty: ``zero`` (recipe) or ``unknown`` when no datapoint is in the window.
        datapoint: ``latest`` (the newest datapoint's Maximum) or ``max`` (the window's largest).
        access_key_id: from ``access_key_id_env`` (None: boto3's default chain).
        secret_access_key: from ``secret_access_key_env`` (None: boto3's default chain).
    """

    cluster_name: str
    consumer_group: str
    topic: str
    region: str = "us-east-1"
    endpoint_url: str | None = None
    period_s: float = 60.0
    window_s: float = 300.0
    empty: str = "zero"
    datapoint: str = "latest"
    access_key_id: Secret | None = None
    secret_access_key: Secret | None = None

    @classmethod
    def from_options(cls, group: str, topic: str, options: Mapping[str, Any],
                     environ: Mapping[str, str] | None = None) -> CloudWatchSettings:
        """Validate ``options`` (keys :data:`OPTION_KEYS`) for ``group`` on ``topic``.

        Raises:
            ConfigError: every invalid option, one line each (credentials named, never shown).
        """
        p = Problems("cloudwatch lag source options")
        _options.check_keys(options, OPTION_KEYS, p)
        fields: dict[str, Any] = {
            "cluster_name": _options.text(options, "cluster_name", p, example="lagscale-msk"),
            "region": _options.text(options, "region", p, default="us-east-1"),
            "endpoint_url": _options.optional_text(options, "endpoint_url", p, example="http://127.0.0.1:5000"),
            "period_s": _options.seconds(options, "period_s", p, default=60.0, lo=1.0, hi=86_400.0),
            "window_s": _options.seconds(options, "window_s", p, default=300.0, lo=1.0, hi=86_400.0),
            "empty": _options.choice(options, "empty", p, EMPTY_POLICIES),
            "datapoint": _options.choice(options, "datapoint", p, DATAPOINT_PICKS),
        }
        period = fields["period_s"]
        if not is_cloudwatch_period(period):
            p.add("period_s", options.get("period_s"), "1, 5, 10, 30 or a multiple of 60 (CloudWatch's periods)",
                  "set period_s=60")
        for key, name in (("access_key_id_env", "access_key_id"), ("secret_access_key_env", "secret_access_key")):
            variable = _options.optional_text(options, key, p, example="AWS_SECRET_ACCESS_KEY")
            if variable:
                try:
                    fields[name] = secret_from_env(variable, key, p.source, environ)
                except ConfigError as exc:
                    p.lines.extend(exc.problems)
        if ("access_key_id_env" in options) != ("secret_access_key_env" in options):
            given, missing = (("access_key_id_env", "secret_access_key_env") if "access_key_id_env" in options
                              else ("secret_access_key_env", "access_key_id_env"))
            p.add(missing, None, f"set together with {given}", f"set {missing} too, or neither (boto3's default "
                  "credential chain)")
        p.raise_if_any()
        return cls(consumer_group=group, topic=topic, **fields)


def get_metric_statistics_request(settings: CloudWatchSettings, now_utc: datetime) -> dict[str, Any]:
    """The keyword arguments of boto3's ``get_metric_statistics`` for one read at ``now_utc``:
    the recipe's call (namespace, metric, the three dimensions, window, ``Period``, ``Maximum``).
    """
    return {
        "Namespace": NAMESPACE,
        "MetricName": METRIC_NAME,
        "Dimensions": [{"Name": name, "Value": value} for name, value in
                       zip(DIMENSIONS, (settings.cluster_name, settings.consumer_group, settings.topic))],
        "StartTime": now_utc - timedelta(seconds=settings.window_s),
        "EndTime": now_utc,
        "Period": int(settings.period_s),
        "Statistics": [STATISTIC],
    }


def lag_from_statistics(response: Mapping[str, Any], *, empty: str, datapoint: str,
                        read_utc: datetime) -> TotalLag:
    """The reading from a ``GetMetricStatistics`` response (``Datapoints``: ``Timestamp`` and
    ``Maximum`` each; any order).

    Raises:
        LagSourceError: the response has no ``Datapoints`` list, or a datapoint lacks its
            ``Timestamp`` or ``Maximum``.
    """
    where = f"cloudwatch lag source: {NAMESPACE} {METRIC_NAME}"
    points = response.get("Datapoints")
    if not isinstance(points, list):
        raise LagSourceError(f"{where}: got a response without 'Datapoints', expected a GetMetricStatistics answer")
    if not points:
        return TotalLag.empty(empty, read_utc, CloudWatchLagSource.name)
    parsed = []
    for point in points:
        stamp = point.get("Timestamp") if isinstance(point, Mapping) else None
        if not isinstance(stamp, datetime):
            raise LagSourceError(f"{where}: got datapoint {point!r}, expected a 'Timestamp'")
        stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
        parsed.append((stamp, finite_lag(point.get(STATISTIC), f"{where} datapoint {STATISTIC!r}")))
    if datapoint == "max":
        stamp, value = max(parsed, key=lambda sv: (sv[1], sv[0]))
    else:
        stamp, value = max(parsed, key=lambda sv: sv[0])
    return TotalLag(value, stamp.astimezone(timezone.utc), read_utc, CloudWatchLagSource.name)


class CloudWatchLagSource:
    """Total lag from CloudWatch's ``SumOffsetLag`` (see the module docstring).

    Args:
        settings: what to ask.
        client: a boto3 CloudWatch client (default: made at the first read from ``settings``).
        clock: the wall clock the query window ends at.

    Raises:
        LagSourceError: from :meth:`total_lag` when the call fails or the answer is malformed.
    """

    name = "cloudwatch"
    per_partition: ClassVar[bool] = False

    def __init__(self, settings: CloudWatchSettings, *, client: Any = None, clock: UtcNow = utc_now):
        self.settings = settings
        self._client = client
        self.clock = clock

    @classmethod
    def from_options(cls, admin: Any, group: str, topic: str,
                     options: Mapping[str, Any] | None = None) -> CloudWatchLagSource:
        """The registry's factory (see :class:`CloudWatchSettings`); ``admin`` is unused.

        Raises:
            ConfigError: every invalid option, one line each.
        """
        return cls(CloudWatchSettings.from_options(group, topic, options or {}))

    @property
    def client(self) -> Any:
        """The boto3 CloudWatch client, made on first use."""
        if self._client is None:
            import boto3

            s = self.settings
            kwargs: dict[str, Any] = {"region_name": s.region}
            if s.endpoint_url:
                kwargs["endpoint_url"] = s.endpoint_url
            if s.access_key_id is not None and s.secret_access_key is not None:
                kwargs["aws_access_key_id"] = s.access_key_id.reveal()
                kwargs["aws_secret_access_key"] = s.secret_access_key.reveal()
            self._client = boto3.client("cloudwatch", **kwargs)
        return self._client

    def __repr__(self) -> str:
        return f"CloudWatchLagSource({self.settings!r})"

    def total_lag(self) -> TotalLag:
        """One ``GetMetricStatistics`` call (:func:`get_metric_statistics_request`) and its reading.

        Raises:
            LagSourceError: the call failed (AWS's error code and message, the endpoint), or the
                answer is malformed.
        """
        now = self.clock()
        request = get_metric_statistics_request(self.settings, now)
        try:
            response = self.client.get_metric_statistics(**request)
        except Exception as exc:  # botocore ClientError, EndpointConnectionError, NoCredentialsError
            endpoint = self.settings.endpoint_url or f"AWS {self.settings.region}"
            raise LagSourceError(f"cloudwatch lag source: GetMetricStatistics {NAMESPACE} {METRIC_NAME} at "
                                 f"{endpoint} failed: {type(exc).__name__}: {exc}; check the endpoint, region "
                                 "and credentials") from exc
        return lag_from_statistics(response, empty=self.settings.empty, datapoint=self.settings.datapoint,
                                   read_utc=now)
