"""The persistent-lag scaler's trigger metadata (``ScaledObjectRef.scalerMetadata``), validated.

Pure: strings in, a frozen :class:`PersistentLagSettings` or every problem at once out. KEDA
sends the trigger's whole ``metadata`` map (its own ``scalerAddress``, ``enableTLS`` and
``unsafeSsl`` included), so those keys are accepted and ignored here. Keys are read through the
trigger-metadata reader :mod:`pytest_lagscale.config.trigger_metadata.typed` (trimmed, empty =
absent, unknown keys named, integers as JSON integers); seconds are this scaler's own decimals.

Keys (camelCase, as KEDA metadata; values are strings):

================= ======== ============================================================
key               default  meaning
================= ======== ============================================================
bootstrapServers  required Kafka ``host:port[,host:port]``
consumerGroup     required the group whose committed offsets define lag
topic             required the topic (lag is summed over its partitions)
lagThreshold      required total lag per replica in records: the AverageValue target, and
                           the level lag must stay above for ``sustainSeconds``
activationLagThreshold 0   the reported value must exceed it for IsActive (0 <-> 1)
sustainSeconds    120      seconds lag must stay above lagThreshold before a scale-up
samplingInterval  10       seconds between lag samples (decimals allowed, >= 0.1)
windowSize        30       samples kept (must span sustainSeconds)
scaleUpStabilization 0     seconds after a reported rise before the next rise is reported
lagSource         broker   where lag is read (one of ``pytest_lagscale.sources.PARTITION_LAG_SOURCES``)
================= ======== ============================================================

``scaleDownStabilization`` (in the README this scaler comes from) is refused: the HPA's
``behavior.scaleDown.stabilizationWindowSeconds`` already does it (see :mod:`.window`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_lagscale.config._problems import MISSING, Problems
from pytest_lagscale.config.trigger_metadata import typed as tm

#: Keys KEDA itself puts into every external trigger's metadata; accepted and unused.
KEDA_KEYS = ("scalerAddress", "enableTLS", "unsafeSsl")
KNOWN_KEYS = ("bootstrapServers", "consumerGroup", "topic", "lagThreshold", "activationLagThreshold",
              "sustainSeconds", "samplingInterval", "windowSize", "scaleUpStabilization", "lagSource",
              *KEDA_KEYS)
UNSUPPORTED_KEYS = {
    "scaleDownStabilization": "remove it and set spec.advanced.horizontalPodAutoscalerConfig.behavior."
                              "scaleDown.stabilizationWindowSeconds (the HPA already delays scale-down)",
}
_DECIMAL = re.compile(r"([0-9]+(\.[0-9]*)?|\.[0-9]+)")
_NORMALIZED = str.maketrans({c: "-" for c in "/.:%()_"})
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class PersistentLagSettings:
    """Validated metadata of one ScaledObject trigger.

    Attributes:
        bootstrap_servers: ``host:port[,...]`` as given (whitespace trimmed).
        consumer_group: the consumer group.
        topic: the topic.
        lag_threshold: records of total lag per replica (> 0).
        activation_lag_threshold: records the reported value must exceed to be active (>= 0).
        sustain_s: seconds lag must stay above ``lag_threshold`` (0..86400).
        sampling_interval_s: seconds between samples (0.1..3600).
        window_size: samples kept (2..100000).
        scale_up_stabilization_s: seconds a reported rise holds the value from rising again
            (0 = off, ..86400).
        lag_source: the lag source kind (``broker``).
    """

    bootstrap_servers: str
    consumer_group: str
    topic: str
    lag_threshold: int
    activation_lag_threshold: int = 0
    sustain_s: float = 120.0
    sampling_interval_s: float = 10.0
    window_size: int = 30
    scale_up_stabilization_s: float = 0.0
    lag_source: str = "broker"

    @property
    def metric_name(self) -> str:
        """``persistent-kafka-lag-<topic>`` (``/ . : % ( ) _`` as ``-``); KEDA prefixes ``sN-``."""
        return f"persistent-kafka-lag-{self.topic}".translate(_NORMALIZED)

    @property
    def window_span_s(self) -> float:
        """Seconds a full window covers at the sampling interval: (windowSize - 1) x interval."""
        return (self.window_size - 1) * self.sampling_interval_s


def parse_metadata(metadata: Mapping[str, Any], *, source: str = "scalerMetadata",
                   lag_sources: tuple[str, ...] = ("broker",)) -> PersistentLagSettings:
    """Validate ``metadata`` (a ScaledObjectRef's ``scalerMetadata``).

    Args:
        metadata: key -> string value, as KEDA sends it.
        source: the label messages name (e.g. ``ScaledObject default/consumer scalerMetadata``).
        lag_sources: the lag source kinds allowed for ``lagSource`` (the first is the default).

    Raises:
        ConfigError: every problem, one line each:
            ``'<key>': got <value>, expected <allowed> in <source>; <fix>``.
    """
    p = Problems(source)
    raw = tm.strings(metadata, "", p, KNOWN_KEYS, unsupported=UNSUPPORTED_KEYS) or {}
    fields: dict[str, Any] = {}
    for key, name, example in (("bootstrapServers", "bootstrap_servers", "kafka:9092"),
                               ("consumerGroup", "consumer_group", "enrich"), ("topic", "topic", "events")):
        if not raw.get(key):
            p.add(key, metadata.get(key, MISSING), "a non-empty string", f"add {key}: '{example}'")
        fields[name] = raw.get(key, "")
    fields["lag_threshold"] = _integer(raw, "lagThreshold", p, lo=1, hi=None, default=None,
                                       allowed="an integer > 0 (records of total lag per replica)")
    fields["activation_lag_threshold"] = _integer(raw, "activationLagThreshold", p, lo=0, hi=None, default=0,
                                                  allowed="an integer >= 0 (records)")
    fields["sustain_s"] = _seconds(raw, "sustainSeconds", p, lo=0.0, default=120.0)
    fields["sampling_interval_s"] = _seconds(raw, "samplingInterval", p, lo=0.1, hi=3600.0, default=10.0)
    fields["window_size"] = _integer(raw, "windowSize", p, lo=2, hi=100_000, default=30,
                                     allowed="an integer in [2, 100000] (samples)")
    fields["scale_up_stabilization_s"] = _seconds(raw, "scaleUpStabilization", p, lo=0.0, default=0.0)
    fields["lag_source"] = raw.get("lagSource", lag_sources[0])
    if fields["lag_source"] not in lag_sources:
        p.add("lagSource", fields["lag_source"], "one of {" + ", ".join(map(repr, lag_sources)) + "}",
              f"use {lag_sources[0]!r}")
    if not p.lines:
        settings = PersistentLagSettings(**fields)
        if settings.sustain_s > settings.window_span_s:
            p.add("sustainSeconds", raw.get("sustainSeconds", "120"),
                  f"at most (windowSize - 1) x samplingInterval = {settings.window_span_s:g} s (the window "
                  "must span it)", "raise windowSize or samplingInterval, or lower sustainSeconds")
    p.raise_if_any()
    return PersistentLagSettings(**fields)


def _integer(raw: Mapping[str, str], key: str, p: Problems, *, lo: int, hi: int | None,
             default: int | None, allowed: str) -> Any:
    text = raw.get(key)
    if text is None:
        if default is None:
            p.add(key, MISSING, allowed, f"add {key}: '{max(lo, 1) * 500}'")
        return default
    value = tm.json_int(text)
    if value is None or value < lo or (hi is not None and value > hi):
        p.add(key, text, allowed, f"set it to e.g. '{max(lo, 1) * 500 if hi is None else max(lo, 30)}'")
        return default
    return value


def _seconds(raw: Mapping[str, str], key: str, p: Problems, *, lo: float, default: float,
             hi: float = MAX_SECONDS) -> float:
    text = raw.get(key)
    if text is None:
        return default
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not lo <= value <= hi:
        p.add(key, text, f"a number of seconds in [{lo:g}, {hi:g}]", f"set it to e.g. '{default:g}'")
        return default
    return value
