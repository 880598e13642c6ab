"""The ``aws-cloudwatch`` trigger's ``metadata``, read with KEDA's rules (pure).

Keys, defaults and meaning: ``control/keda/aws_cloudwatch.py`` (which builds the
GetMetricData query and evaluates its answer); docs/lag-sources.md "KEDA triggers for the same
sources".

Source: kedacore/keda pkg/scalers/aws_cloudwatch_scaler.go (awsCloudwatchMetadata, Validate,
checkMetricStatPeriod, checkMetricUnit) v2.20.2; pkg/scalers/aws/aws_common.go
GetAwsAuthorization v2.20.2
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_lagscale.config._problems import MISSING, Problems, join
from pytest_lagscale.config.trigger_metadata import typed as tm
from pytest_lagscale.config.trigger_metadata.typed import check_target

KNOWN_KEYS = ("namespace", "metricName", "dimensionName", "dimensionValue", "expression", "targetMetricValue",
              "activationTargetMetricValue", "minMetricValue", "ignoreNullValues", "metricCollectionTime",
              "metricStat", "metricUnit", "metricStatPeriod", "metricEndTimeOffset", "awsAccountId", "awsRegion",
              "awsEndpoint", "identityOwner", "awsAccessKeyID", "awsAccessKeyIDFromEnv", "awsSecretAccessKeyFromEnv",
              "awsSessionToken")
#: CloudWatch's StandardUnit values.
STANDARD_UNITS = ("Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes",
                  "Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
                  "Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
                  "Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second",
                  "Count/Second", "None")
@dataclass(frozen=True)
class CloudWatchTriggerMetadata:
    """Validated ``aws-cloudwatch`` trigger metadata with KEDA's defaults.

    Attributes:
        target_metric_value: the metric target.
        min_metric_value: the value when there is no datapoint (ignoreNullValues true).
        aws_region: the region.
        namespace, metric_name: the metric (empty with ``expression``).
        dimensions: ``(name, value)`` pairs.
        expression: a metric math query instead ('' when unset).
        activation_target_metric_value: the value must exceed it to be active.
        ignore_null_values: no datapoint reads as ``min_metric_value`` (false: an error).
        metric_collection_time_s, metric_stat_period_s, metric_end_time_offset_s: the window.
        metric_stat: the statistic.
        metric_unit: a StandardUnit, '' when unset.
        aws_endpoint: another endpoint ('' when unset).
        aws_account_id: a cross-account id ('' when unset).
        identity_owner: ``pod`` (default) or ``operator``.
        credentials_from_env: the variable ``awsSecretAccessKeyFromEnv`` names (not the secret).
    """

    target_metric_value: float
    min_metric_value: float
    aws_region: str
    namespace: str = ""
    metric_name: str = ""
    dimensions: tuple[tuple[str, str], ...] = ()
    expression: str = ""
    activation_target_metric_value: float = 0.0
    ignore_null_values: bool = True
    metric_collection_time_s: int = 300
    metric_stat: str = "Average"
    metric_stat_period_s: int = 300
    metric_end_time_offset_s: int = 0
    metric_unit: str = ""
    aws_endpoint: str = ""
    aws_account_id: str = ""
    identity_owner: str = "pod"
    credentials_from_env: str = field(default="", repr=False)


def parse_cloudwatch_metadata(metadata: Any, *, path: str = "", source: str = "trigger metadata",
                              has_authentication_ref: bool = False) -> CloudWatchTriggerMetadata:
    """Parse ``metadata`` with KEDA's rules.

    Raises:
        ConfigError: every invalid field, one line each.
    """
    return tm.parse(collect_cloudwatch_metadata, metadata, path=path, source=source,
                    has_authentication_ref=has_authentication_ref)


def collect_cloudwatch_metadata(metadata: Any, path: str, p: Problems,
                                has_authentication_ref: bool = False) -> CloudWatchTriggerMetadata | None:
    """Like :func:`parse_cloudwatch_metadata`, recording problems in ``p``; None when invalid."""
    before = len(p.lines)
    raw = tm.strings(metadata, path, p, KNOWN_KEYS)
    if raw is None:
        return None
    fields: dict[str, Any] = {
        "target_metric_value": tm.float64(raw, "targetMetricValue", path, p, is_required=True),
        "activation_target_metric_value": tm.float64(raw, "activationTargetMetricValue", path, p, default=0.0),
        "min_metric_value": tm.float64(raw, "minMetricValue", path, p, is_required=True),
        "ignore_null_values": tm.boolean(raw, "ignoreNullValues", path, p, default=True),
        "metric_collection_time_s": tm.int64(raw, "metricCollectionTime", path, p, default=300, unit="seconds"),
        "metric_stat": raw.get("metricStat", "Average"),
        "metric_stat_period_s": tm.int64(raw, "metricStatPeriod", path, p, default=300, unit="seconds"),
        "metric_end_time_offset_s": tm.int64(raw, "metricEndTimeOffset", path, p, default=0, unit="seconds"),
        "aws_region": tm.required(raw, "awsRegion", path, p, "an AWS region", "us-east-1"),
        "aws_endpoint": raw.get("awsEndpoint", ""), "aws_account_id": raw.get("awsAccountId", ""),
        "identity_owner": raw.get("identityOwner", "pod"),
        "credentials_from_env": raw.get("awsSecretAccessKeyFromEnv", ""),
        **_metric(raw, path, p),
    }
    check_target(fields["target_metric_value"], "targetMetricValue", path, p)
    _window(raw, fields, path, p)
    _credentials(raw, path, p, has_authentication_ref)
    if len(p.lines) != before:
        return None
    return CloudWatchTriggerMetadata(**fields)


def _metric(raw: Mapping[str, str], path: str, p: Problems) -> dict[str, Any]:
    """namespace, metricName, dimensions and metricUnit: required unless ``expression`` is set."""
    expression = raw.get("expression", "")
    names = tm.string_list(raw, "dimensionName", ";")
    values = tm.string_list(raw, "dimensionValue", ";")
    if not expression:
        for key, what, example in (("namespace", "a CloudWatch namespace", "AWS/Kafka"),
                                   ("metricName", "a metric name", "SumOffsetLag"),
                                   ("dimensionName", "';'-separated dimension names", "Cluster Name;Consumer Group"),
                                   ("dimensionValue", "';'-separated dimension values", "my-msk;enrich")):
            if key not in raw:
                p.add(join(path, key), MISSING, f"{what} (or an expression)", f"add {key}: '{example}'")
        if names is not None and values is not None and len(names) != len(values):
            p.add(join(path, "dimensionValue"), raw["dimensionValue"],
                  f"as many ';'-separated values as dimensionName has names ({len(names)})",
                  "give one value per dimension name")
        if raw.get("metricUnit") and raw["metricUnit"] not in STANDARD_UNITS:
            p.add(join(path, "metricUnit"), raw["metricUnit"], "a CloudWatch StandardUnit ('Count', 'Seconds', ...)",
                  "use 'Count' or remove metricUnit")
    return {"namespace": raw.get("namespace", ""), "metric_name": raw.get("metricName", ""),
            "dimensions": tuple(zip(names or (), values or ())), "expression": expression,
            "metric_unit": raw.get("metricUnit", "")}


def is_cloudwatch_period(seconds: float) -> bool:
    """True for a CloudWatch statistics period: 1, 5, 10, 30 or a whole multiple of 60 seconds
    (GetMetricStatistics' Period; KEDA's metricStatPeriod check, aws_cloudwatch_scaler.go)."""
    return seconds == int(seconds) and (seconds in (1, 5, 10, 30) or (seconds >= 60
                                                                     and seconds % 60 == 0))


def _window(raw: Mapping[str, str], fields: Mapping[str, Any], path: str, p: Problems) -> None:
    """metricStatPeriod in {1, 5, 10, 30, 60} or a multiple of 60; metricCollectionTime >= 0 and a
    multiple of it (checked only when the period is valid, as KEDA's Validate returns first)."""
    period, collection = fields["metric_stat_period_s"], fields["metric_collection_time_s"]
    if not is_cloudwatch_period(period):
        p.add(join(path, "metricStatPeriod"), raw.get("metricStatPeriod", str(period)),
              "1, 5, 10, 30, 60 or a multiple of 60 (seconds)", "set metricStatPeriod: '60'")
    elif collection < 0 or collection % period:
        p.add(join(path, "metricCollectionTime"), raw.get("metricCollectionTime", str(collection)),
              f"seconds >= 0 and a multiple of metricStatPeriod ({period})", f"set metricCollectionTime: '{period * 5}'")


def _credentials(raw: Mapping[str, str], path: str, p: Problems, has_auth: bool) -> None:
    """KEDA's GetAwsAuthorization without pod identity: identityOwner ``operator`` needs nothing;
    ``pod`` (or unset) needs an authenticationRef, or ``awsAccessKeyID`` (or ...FromEnv) and
    ``awsSecretAccessKeyFromEnv`` in the metadata.

    Quirk: another identityOwner value skips the check, as KEDA's switch has no default case;
    test id aws-cloudwatch-quirk-identity-owner-other.
    """
    owner = raw.get("identityOwner", "")
    if owner not in ("", "pod") or has_auth:
        return
    if not (raw.get("awsAccessKeyID") or raw.get("awsAccessKeyIDFromEnv")):
        p.add(join(path, "awsAccessKeyID"), MISSING, "an access key id (KEDA: 'awsAccessKeyID not found'), an "
              "authenticationRef, or identityOwner: 'operator'", "add authenticationRef naming a TriggerAuthentication "
              "with awsAccessKeyID and awsSecretAccessKey")
    elif not raw.get("awsSecretAccessKeyFromEnv"):
        p.add(join(path, "awsSecretAccessKeyFromEnv"), MISSING, "the name of the variable holding the secret access "
              "key (KEDA: 'awsSecretAccessKey not found')", "add awsSecretAccessKeyFromEnv: 'AWS_SECRET_ACCESS_KEY'")


def with_lag_threshold(settings: CloudWatchTriggerMetadata, lag_threshold: int) -> CloudWatchTriggerMetadata:
    """``settings`` with ``targetMetricValue`` = ``lag_threshold`` (the metric is lag in records)."""
    return replace(settings, target_metric_value=float(lag_threshold))
