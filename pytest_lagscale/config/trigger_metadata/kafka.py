"""The ``kafka`` trigger's ``metadata`` (strings, as in the ScaledObject) parsed with KEDA's rules.

Pure: no I/O. The fields are read through :mod:`.typed` (KEDA's typed-config rules; bool fields
take only ``true``/``false``); :func:`collect_kafka_trigger_metadata` adds KEDA's checks between
fields. ``KafkaLagTrigger`` (``control/keda/kafka_lag.py``) evaluates the result.

Source: kedacore/keda pkg/scalers/kafka_scaler.go kafkaMetadata/Validate/parsePartitionLimitation
v2.20.2 and pkg/scalers/scalersconfig/typed_config.go setValue v2.20.2; docs/semantics.md §1.1
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_lagscale.config._problems import Problems, join
from pytest_lagscale.config.trigger_metadata import typed as tm

OFFSET_RESET_POLICIES = ("latest", "earliest")
TLS_MODES = ("enable", "disable")
SASL_MODES = ("none", "plaintext", "scram_sha256", "scram_sha512", "oauthbearer", "gssapi")
_SASL_NEEDS_AUTH = ("plaintext", "scram_sha256", "scram_sha512", "oauthbearer", "gssapi")
_BOOL_KEYS = {
    "allowIdleConsumers": "allow_idle_consumers",
    "excludePersistentLag": "exclude_persistent_lag",
    "scaleToZeroOnInvalidOffset": "scale_to_zero_on_invalid_offset",
    "limitToPartitionsWithLag": "limit_to_partitions_with_lag",
    "ensureEvenDistributionOfPartitions": "ensure_even_distribution_of_partitions",
}
KNOWN_KEYS = ("bootstrapServers", "consumerGroup", "topic", "partitionLimitation", "lagThreshold",
              "activationLagThreshold", "offsetResetPolicy", *_BOOL_KEYS, "version", "tls",
              "unsafeSsl", "sasl", "saslTokenProvider", "awsRegion")
UNSUPPORTED_KEYS = {
    f"{name}FromEnv": f"write '{name}' inline: lagscale does not resolve container env"
    for name in ("bootstrapServers", "consumerGroup", "topic")
}
_PART_INT = re.compile(r"[+-]?[0-9]+")
_INT32 = 2**31
_VERSION = re.compile(r"0\.\d+\.\d+\.\d+|[1-9]\d*\.\d+\.\d+")


@dataclass(frozen=True)
class KafkaTriggerMetadata:
    """Validated ``kafka`` trigger metadata with KEDA's defaults.

    Attributes:
        bootstrap_servers: broker ``host:port`` entries (whitespace trimmed).
        consumer_group: the group whose committed offsets define lag.
        topic: topic to watch; ``''`` means every topic the group has committed offsets for.
        lag_threshold: target lag per replica in offsets (> 0), default 10.
        activation_lag_threshold: lag in offsets the total must exceed to be active (>= 0).
        offset_reset_policy: ``latest`` (default) or ``earliest``.
        allow_idle_consumers: when true, no cap at the partition count.
        exclude_persistent_lag: ignore partitions whose committed offset did not move.
        scale_to_zero_on_invalid_offset: report lag 0 (not 1) for partitions with no commit.
        limit_to_partitions_with_lag: cap at the number of partitions with lag > 0.
        ensure_even_distribution_of_partitions: round the replica count up to a factor of P.
        partition_limitation: partition ids to consider; None = all (always None without topic).
        version: Kafka protocol version string (default ``1.0.0``).
        tls: ``enable`` or ``disable``.
        sasl: SASL mode (``none`` by default).
    """

    bootstrap_servers: tuple[str, ...]
    consumer_group: str
    topic: str = ""
    lag_threshold: int = 10
    activation_lag_threshold: int = 0
    offset_reset_policy: str = "latest"
    allow_idle_consumers: bool = False
    exclude_persistent_lag: bool = False
    scale_to_zero_on_invalid_offset: bool = False
    limit_to_partitions_with_lag: bool = False
    ensure_even_distribution_of_partitions: bool = False
    partition_limitation: tuple[int, ...] | None = None
    version: str = "1.0.0"
    tls: str = "disable"
    sasl: str = "none"


def parse_kafka_trigger_metadata(metadata: Any, *, path: str = "", source: str = "trigger metadata",
                                 has_authentication_ref: bool = False) -> KafkaTriggerMetadata:
    """Parse trigger metadata strings with KEDA's rules and defaults.

    Args:
        metadata: the trigger's ``metadata`` mapping (values must be strings).
        path: key path of ``metadata`` for messages (``''`` gives bare keys).
        source: file or label for messages.
        has_authentication_ref: the trigger names a TriggerAuthentication (SASL credentials).

    Raises:
        ConfigError: every invalid field, one line each (ConfigError is a ValueError).
    """
    return tm.parse(collect_kafka_trigger_metadata, metadata, path=path, source=source,
                    has_authentication_ref=has_authentication_ref)


def collect_kafka_trigger_metadata(metadata: Any, path: str, p: Problems,
                                   has_authentication_ref: bool = False) -> KafkaTriggerMetadata | None:
    """Like :func:`parse_kafka_trigger_metadata` but records problems in ``p``; None when invalid."""
    before = len(p.lines)
    raw = tm.strings(metadata, path, p, KNOWN_KEYS, unsupported=UNSUPPORTED_KEYS)
    if raw is None:
        return None
    fields = _scalar_fields(raw, path, p)
    _cross_checks(fields, raw, path, p, has_authentication_ref)
    if len(p.lines) != before:
        return None
    return KafkaTriggerMetadata(**fields)


def with_lag_threshold(settings: KafkaTriggerMetadata, lag_threshold: int) -> KafkaTriggerMetadata:
    """``settings`` with ``lagThreshold`` set to ``lag_threshold`` records."""
    return replace(settings, lag_threshold=lag_threshold)


def parse_partition_limitation(text: str) -> tuple[int, ...]:
    """Parse ``partitionLimitation`` (``"1,2,3"``, ``"1-4"``, ``"1-4,8,10-12"``; spaces trimmed).

    Source: kedacore/keda pkg/scalers/kafka_scaler.go parsePartitionLimitation v2.20.2;
    docs/semantics.md §1.1, §4.6

    Raises:
        ValueError: an element is not an int32 or a range ``a-b`` (message names the element).
    """
    out: list[int] = []
    for part in (piece.strip() for piece in text.split(",")):
        bounds = [b.strip() for b in part.split("-")] if "-" in part else [part]
        if len(bounds) > 2 or not all(_PART_INT.fullmatch(b) and -_INT32 <= int(b) < _INT32 for b in bounds):
            raise ValueError(f"invalid partition limitation {part!r}")
        start, end = int(bounds[0]), int(bounds[-1])
        out.extend(range(start, end + 1))
    return tuple(out)


def _scalar_fields(raw: Mapping[str, str], path: str, p: Problems) -> dict[str, Any]:
    servers = tm.required(raw, "bootstrapServers", path, p, "a comma-separated list of host:port", "host:9092")
    fields: dict[str, Any] = {
        "bootstrap_servers": tuple(s.strip() for s in servers.split(",")),
        "consumer_group": tm.required(raw, "consumerGroup", path, p, "a consumer group name", "enrich"),
        "topic": raw.get("topic", ""),
        "lag_threshold": tm.int64(raw, "lagThreshold", path, p, default=10, lo=1, example=1000,
                                  allowed="an integer > 0 (offsets of lag per replica)"),
        "activation_lag_threshold": tm.int64(raw, "activationLagThreshold", path, p, default=0, lo=0,
                                             example=1000, allowed="an integer >= 0 (offsets)"),
        "offset_reset_policy": tm.enum(raw, "offsetResetPolicy", path, p, OFFSET_RESET_POLICIES, "latest"),
    }
    for key, name in _BOOL_KEYS.items():
        fields[name] = tm.boolean(raw, key, path, p, json_only=True)
    tm.boolean(raw, "unsafeSsl", path, p, json_only=True)
    fields["version"] = raw.get("version", "1.0.0")
    if "version" in raw and not _VERSION.fullmatch(raw["version"]):
        p.add(join(path, "version"), raw["version"], "a Kafka version 'X.Y.Z' (or '0.X.Y.Z')",
              "use a version such as '3.7.0'")
    fields["tls"] = tm.enum(raw, "tls", path, p, TLS_MODES, "disable")
    fields["sasl"] = tm.enum(raw, "sasl", path, p, SASL_MODES, "none")
    fields["partition_limitation"] = _limitation(raw, path, p)
    return fields


def _cross_checks(fields: Mapping[str, Any], raw: Mapping[str, str], path: str, p: Problems,
                  has_auth: bool) -> None:
    """KEDA's Validate() rules between fields (docs/semantics.md §1.1)."""
    limit_key, even_key = join(path, "limitToPartitionsWithLag"), join(path, "ensureEvenDistributionOfPartitions")
    if fields["allow_idle_consumers"] and fields["limit_to_partitions_with_lag"]:
        p.add(limit_key, raw["limitToPartitionsWithLag"], "'false' while allowIdleConsumers is 'true'",
              "set one of allowIdleConsumers and limitToPartitionsWithLag to 'false'")
    if fields["limit_to_partitions_with_lag"] and fields["ensure_even_distribution_of_partitions"]:
        p.add(even_key, raw["ensureEvenDistributionOfPartitions"],
              "'false' while limitToPartitionsWithLag is 'true'",
              "set one of limitToPartitionsWithLag and ensureEvenDistributionOfPartitions to 'false'")
    if not fields["topic"]:
        for key, name in (("limitToPartitionsWithLag", "limit_to_partitions_with_lag"),
                          ("ensureEvenDistributionOfPartitions", "ensure_even_distribution_of_partitions")):
            if fields[name]:
                p.add(join(path, key), raw[key], "'false' when no topic is set", "add topic: 'events'")
    if fields["sasl"] in _SASL_NEEDS_AUTH and not has_auth:
        p.add(join(path, "sasl"), raw["sasl"], "'none' without an authenticationRef",
              "add authenticationRef naming a TriggerAuthentication with the credentials")


def _limitation(raw: Mapping[str, str], path: str, p: Problems) -> tuple[int, ...] | None:
    text = raw.get("partitionLimitation")
    if text is None:
        return None
    try:
        parts = parse_partition_limitation(text)
    except ValueError as exc:
        p.add(join(path, "partitionLimitation"), text,
              "partition ids and ranges such as '1,2,3', '1-4' or '1-4,8,10-12'",
              f"fix the {str(exc).removeprefix('invalid ')}")
        return None
    return parts if raw.get("topic") else None
