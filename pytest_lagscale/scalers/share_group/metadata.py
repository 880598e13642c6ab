"""The share-group scaler's trigger metadata (``ScaledObjectRef.scalerMetadata``), validated.

Pure: strings in, a frozen :class:`ShareGroupSettings` or every problem at once out. KEDA sends
the trigger's whole ``metadata`` map (its own ``scalerAddress``, ``enableTLS`` and
``unsafeSsl`` included), so those keys are accepted and ignored. Keys are read through the
trigger-metadata reader :mod:`pytest_lagscale.config.trigger_metadata.typed` (trimmed, empty =
absent, unknown keys named with the nearest known one, integers as JSON integers).

Keys (camelCase, as KEDA metadata; values are strings):

====================== ======== ============================================================
key                    default  meaning
====================== ======== ============================================================
bootstrapServers       required Kafka ``host:port[,host:port]``
shareGroup             required the share group whose lag (KIP-1226) is read
topic                  required the topic (lag is summed over its partitions)
lagThreshold           required share-group lag per replica in records: the AverageValue target
activationLagThreshold 0        the lag must exceed it for IsActive (0 <-> 1)
====================== ======== ============================================================

``consumerGroup`` is refused with a fix (a share group is not a consumer group: its members
share partitions, so KEDA's kafka trigger's cap of one replica per partition does not apply,
and neither do ``allowIdleConsumers`` or ``limitToPartitionsWithLag``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_lagscale.config._problems import Problems
from pytest_lagscale.config.trigger_metadata import typed as tm

#: Keys KEDA itself puts into every external trigger's metadata; accepted and unused.
KEDA_KEYS = ("scalerAddress", "enableTLS", "unsafeSsl")
KNOWN_KEYS = ("bootstrapServers", "shareGroup", "topic", "lagThreshold", "activationLagThreshold", *KEDA_KEYS)
UNSUPPORTED_KEYS = {
    "consumerGroup": "name the share group with shareGroup (a share group is not a consumer group)",
    "allowIdleConsumers": "remove it: share-group members share partitions, there is no per-partition cap",
    "limitToPartitionsWithLag": "remove it: share-group members share partitions, there is no per-partition cap",
}
_NORMALIZED = str.maketrans({c: "-" for c in "/.:%()_"})


@dataclass(frozen=True)
class ShareGroupSettings:
    """Validated metadata of one ScaledObject trigger.

    Attributes:
        bootstrap_servers: ``host:port[,...]`` as given (whitespace trimmed).
        share_group: the share group id.
        topic: the topic.
        lag_threshold: records of share-group lag per replica (> 0).
        activation_lag_threshold: records the lag must exceed to be active (>= 0).
    """

    bootstrap_servers: str
    share_group: str
    topic: str
    lag_threshold: int
    activation_lag_threshold: int = 0

    @property
    def metric_name(self) -> str:
        """``share-group-lag-<topic>`` (``/ . : % ( ) _`` as ``-``); KEDA prefixes ``sN-``."""
        return f"share-group-lag-{self.topic}".translate(_NORMALIZED)


def parse_metadata(metadata: Mapping[str, Any], *, source: str = "scalerMetadata") -> ShareGroupSettings:
    """Validate ``metadata`` (a ScaledObjectRef's ``scalerMetadata``).

    Args:
        metadata: key -> string value, as KEDA sends it.
        source: the label messages name (e.g. ``ScaledObject default/consumer scalerMetadata``).

    Raises:
        ConfigError: every problem, one line each:
            ``'<key>': got <value>, expected <allowed> in <source>; <fix>``.
    """
    p = Problems(source)
    raw = tm.strings(metadata, "", p, KNOWN_KEYS, unsupported=UNSUPPORTED_KEYS) or {}
    fields: dict[str, Any] = {
        "bootstrap_servers": tm.required(raw, "bootstrapServers", "", p, "a non-empty string", "kafka:9092"),
        "share_group": tm.required(raw, "shareGroup", "", p, "a non-empty string", "enrich-share"),
        "topic": tm.required(raw, "topic", "", p, "a non-empty string", "events"),
    }
    if "lagThreshold" not in raw:
        tm.required(raw, "lagThreshold", "", p, "an integer > 0 (records of share-group lag per replica)", "500")
    fields["lag_threshold"] = tm.int64(raw, "lagThreshold", "", p, default=0, lo=1, example=500,
                                       allowed="an integer > 0 (records of share-group lag per replica)")
    fields["activation_lag_threshold"] = tm.int64(raw, "activationLagThreshold", "", p, default=0, lo=0,
                                                  allowed="an integer >= 0 (records)")
    p.raise_if_any()
    return ShareGroupSettings(**fields)
