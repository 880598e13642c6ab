"""KEDA's ``aws-cloudwatch`` trigger: metadata with KEDA's rules, its GetMetricData query and the
answer -> metric, activity, proposal (pure).

Metadata (strings): the keys, their defaults and meanings are tabled in docs/lag-sources.md,
"KEDA triggers for the same sources"; the reader is
:mod:`pytest_lagscale.config.trigger_metadata`.

The metric is ``s<i>-aws-cloudwatch``; its value is the newest value of the query's first
result (ScanBy TimestampDescending), ``minMetricValue`` when there is none.

Registered in :data:`~pytest_lagscale.control.keda.registry.TRIGGERS`; the runner fetches the
answer (:mod:`pytest_lagscale.platform.value_triggers`) into ``observation.values`` and
:meth:`~.value_trigger.ValueTrigger.evaluate` parses it here.

Source: kedacore/keda pkg/scalers/aws_cloudwatch_scaler.go (awsCloudwatchMetadata, Validate,
checkMetricStatPeriod, checkMetricUnit, computeQueryWindow, createCloudwatchMetricDataInput,
GetCloudwatchMetrics) v2.20.2; pkg/scalers/aws/aws_common.go GetAwsAuthorization v2.20.2
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from pytest_lagscale.config.trigger_metadata.aws_cloudwatch import CloudWatchTriggerMetadata
from pytest_lagscale.control.keda.base import TriggerError, TriggerResult
from pytest_lagscale.control.keda.value_trigger import ValueTrigger


#: Go's zero time (0001-01-01 UTC) in Unix seconds: time.Truncate rounds relative to it.
_GO_ZERO_TIME_UNIX_S = -62_135_596_800


def query_window(now_utc: datetime, meta: CloudWatchTriggerMetadata) -> tuple[datetime, datetime]:
    """``(start, end)`` of one query: end = (now - metricEndTimeOffset) truncated to a multiple of
    metricStatPeriod, start = end - metricCollectionTime.

    Quirk: Go's time.Truncate counts multiples from year 1, not from the Unix epoch, so a period
    that does not divide a day (420 s) truncates to other instants; test id
    aws-cloudwatch-quirk-truncate-from-year-one.

    Source: kedacore/keda pkg/scalers/aws_cloudwatch_scaler.go computeQueryWindow v2.20.2
    """
    shifted = (now_utc - timedelta(seconds=meta.metric_end_time_offset_s)).timestamp()
    since_zero = shifted - _GO_ZERO_TIME_UNIX_S
    end_unix = shifted - (since_zero % meta.metric_stat_period_s)
    end = datetime.fromtimestamp(end_unix, timezone.utc)
    return end - timedelta(seconds=meta.metric_collection_time_s), end


def get_metric_data_request(now_utc: datetime, meta: CloudWatchTriggerMetadata) -> dict[str, Any]:
    """boto3 ``get_metric_data`` keyword arguments for the query KEDA sends at ``now_utc``.

    Source: kedacore/keda pkg/scalers/aws_cloudwatch_scaler.go createCloudwatchMetricDataInput v2.20.2
    """
    start, end = query_window(now_utc, meta)
    if meta.expression:
        query: dict[str, Any] = {"Id": "q1", "Expression": meta.expression, "Period": meta.metric_stat_period_s}
    else:
        stat: dict[str, Any] = {"Metric": {"Namespace": meta.namespace, "MetricName": meta.metric_name,
                                           "Dimensions": [{"Name": n, "Value": v} for n, v in meta.dimensions]},
                                "Period": meta.metric_stat_period_s, "Stat": meta.metric_stat}
        if meta.metric_unit:
            stat["Unit"] = meta.metric_unit
        query = {"Id": "c1", "MetricStat": stat, "ReturnData": True}
    if meta.aws_account_id:
        query["AccountId"] = meta.aws_account_id
    return {"StartTime": start, "EndTime": end, "ScanBy": "TimestampDescending", "MetricDataQueries": [query]}


def value_from_metric_data(response: Mapping[str, Any], meta: CloudWatchTriggerMetadata) -> float:
    """The number KEDA takes from a ``GetMetricData`` answer: the first result's first value (the
    newest), ``minMetricValue`` when there is none.

    Raises:
        TriggerError: the first result has no value and ``ignoreNullValues`` is false (KEDA's message).

    Source: kedacore/keda pkg/scalers/aws_cloudwatch_scaler.go GetCloudwatchMetrics v2.20.2
    Quirk: an answer without any result is ``minMetricValue`` even with ``ignoreNullValues: false``
    (KEDA checks only a first result without values); test id
    aws-cloudwatch-quirk-no-result-at-all-is-minMetricValue-even-without-ignoreNullValues.
    """
    results = response.get("MetricDataResults") or []
    values = (results[0].get("Values") or []) if results else []
    if results and not values and not meta.ignore_null_values:
        raise TriggerError("empty metric data received, ignoreNullValues is false, returning error")
    return float(values[0]) if values else meta.min_metric_value


class CloudWatchTrigger(ValueTrigger):
    """A ``type: aws-cloudwatch`` trigger.

    Args:
        meta: the validated metadata.
        trigger_index: position in ``spec.triggers``.
        metric_type: ``AverageValue`` (default) or ``Value``.
    """

    metric_types: ClassVar[tuple[str, ...]] = ("AverageValue", "Value")

    def __init__(self, meta: CloudWatchTriggerMetadata, *, trigger_index: int = 0, metric_type: str = "AverageValue"):
        super().__init__("aws-cloudwatch", meta.target_metric_value, meta.activation_target_metric_value,
                         trigger_index=trigger_index, metric_type=metric_type)
        self.meta = meta

    def evaluate_response(self, response: Mapping[str, Any]) -> TriggerResult:
        """The metric and activity for one GetMetricData answer (:func:`value_from_metric_data`).

        Raises:
            TriggerError: as :func:`value_from_metric_data`.
        """
        return self.result(value_from_metric_data(response, self.meta))
