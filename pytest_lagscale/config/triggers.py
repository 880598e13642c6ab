"""ScaledObject ``spec.triggers[i]``: the ``kafka`` and ``cpu`` triggers lagscale simulates.

Source: kedacore/keda apis/keda/v1alpha1/scaletriggers_types.go ScaleTriggers v2.20.2,
pkg/scalers/cpu_memory_scaler.go v2.20.2; specs/keda-hpa-semantics.md §1.1, §2.3
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import MISSING, Problems, join, nearest
from pytest_lagscale.config.kafka_trigger import KafkaTriggerMetadata, collect_kafka_trigger_metadata

TRIGGER_KEYS = ("type", "name", "metadata", "authenticationRef", "metricType", "useCachedMetrics")
METRIC_TYPES = {"kafka": ("AverageValue", "Value"), "cpu": ("Utilization",)}
_OTHER_KEDA_TYPES = ("apache-kafka", "memory", "prometheus", "cron", "kafka-streams", "external")
_CPU_KEYS = ("value", "containerName")
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class TriggerConfig:
    """One validated trigger.

    Attributes:
        index: position in ``spec.triggers`` (the ``s<index>-`` metric-name prefix).
        type: ``kafka`` or ``cpu``.
        name: the trigger's ``name`` (``''`` when unset).
        metric_type: ``AverageValue`` (kafka default) or ``Value``; ``Utilization`` for cpu.
        use_cached_metrics: the HPA reads the value stored by the last polling-loop run.
        metadata: the metadata strings as written.
        kafka: parsed kafka metadata (kafka triggers only).
        cpu_utilization_percent: target average CPU utilization in percent of requests (cpu only).
        container_name: cpu ``containerName`` (None = whole pod).
    """

    index: int
    type: str
    name: str = ""
    metric_type: str = "AverageValue"
    use_cached_metrics: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    kafka: KafkaTriggerMetadata | None = None
    cpu_utilization_percent: int | None = None
    container_name: str | None = None


def collect_triggers(spec: Mapping[str, Any], path: str, p: Problems) -> tuple[TriggerConfig, ...]:
    """Validate ``spec.triggers`` (non-empty list; unique names)."""
    items = _read.sequence(spec, "triggers", path, p, required=True)
    if items is not None and not items:
        p.add(join(path, "triggers"), items, "a non-empty list", "add a kafka trigger")
    out = []
    names: set[str] = set()
    for i, item in enumerate(items or ()):
        sub = f"{join(path, 'triggers')}[{i}]"
        trigger = _collect_trigger(item, i, sub, p)
        if trigger is None:
            continue
        if trigger.name and trigger.name in names:
            p.add(join(sub, "name"), trigger.name, "a name unique among the triggers", "rename one of them")
        names.add(trigger.name)
        out.append(trigger)
    return tuple(out)


def _collect_trigger(node: Any, i: int, path: str, p: Problems) -> TriggerConfig | None:
    data = _read.mapping(node, path, p)
    if data is None:
        return None
    before = len(p.lines)
    p.unknown_keys(data, path, TRIGGER_KEYS)
    kind = data.get("type", MISSING)
    if kind not in METRIC_TYPES:
        _bad_type(kind, join(path, "type"), p)
        return None
    name = _read.string(data, "name", path, p, default="")
    metric_type = _read.string(data, "metricType", path, p, default=METRIC_TYPES[kind][0],
                               choices=METRIC_TYPES[kind])
    cached = _read.boolean(data, "useCachedMetrics", path, p, default=False)
    if cached and kind == "cpu":
        p.add(join(path, "useCachedMetrics"), True, "false for a cpu trigger",
              "remove useCachedMetrics (the HPA reads cpu from the metrics API)")
    auth = _auth_ref(data, path, p)
    metadata = data.get("metadata", MISSING)
    common = dict(index=i, type=kind, name=name or "", metric_type=metric_type or METRIC_TYPES[kind][0],
                  use_cached_metrics=cached,
                  metadata=MappingProxyType(dict(metadata) if isinstance(metadata, Mapping) else {}))
    if kind == "kafka":
        meta = collect_kafka_trigger_metadata(metadata, join(path, "metadata"), p, auth)
        return TriggerConfig(**common, kafka=meta) if len(p.lines) == before else None
    percent, container = _cpu_metadata(metadata, join(path, "metadata"), p)
    if len(p.lines) != before:
        return None
    return TriggerConfig(**common, cpu_utilization_percent=percent, container_name=container)


def _bad_type(kind: Any, path: str, p: Problems) -> None:
    allowed = "one of {'kafka', 'cpu'}"
    if kind is MISSING:
        p.add(path, kind, allowed, "add type: kafka")
    elif kind in _OTHER_KEDA_TYPES:
        p.add(path, kind, allowed + " (the triggers lagscale simulates)", "use a kafka or cpu trigger")
    else:
        guess = nearest(str(kind), METRIC_TYPES) if isinstance(kind, str) else None
        p.add(path, kind, allowed, f"use {guess!r}" if guess else "use 'kafka'")


def _auth_ref(data: Mapping[str, Any], path: str, p: Problems) -> bool:
    if "authenticationRef" not in data:
        return False
    sub = join(path, "authenticationRef")
    ref = _read.mapping(data["authenticationRef"], sub, p)
    if ref is None:
        return False
    p.unknown_keys(ref, sub, ("name", "kind"))
    _read.string(ref, "name", sub, p)
    _read.string(ref, "kind", sub, p, default="TriggerAuthentication",
                 choices=("TriggerAuthentication", "ClusterTriggerAuthentication"))
    return True


def _cpu_metadata(metadata: Any, path: str, p: Problems) -> tuple[int | None, str | None]:
    data = _read.mapping(metadata, path, p, "a mapping with 'value'")
    if data is None:
        return None, None
    p.unknown_keys(data, path, _CPU_KEYS, unsupported={"type": "remove it and set the trigger's metricType"})
    value = data.get("value", MISSING)
    sub = join(path, "value")
    allowed = "a string holding an integer > 0 (percent of CPU requests)"
    if not isinstance(value, str) or not _DIGITS.fullmatch(value.strip()) or int(value) <= 0:
        fix = f"quote it: '{value}'" if isinstance(value, int) and value > 0 else "set it to e.g. '70'"
        p.add(sub, value, allowed, fix)
        return None, None
    container = data.get("containerName")
    if container is not None and (not isinstance(container, str) or not container):
        p.add(join(path, "containerName"), container, "a container name", "write the container's name")
    return int(value), container
