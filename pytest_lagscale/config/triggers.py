"""ScaledObject ``spec.triggers[i]``: the keys every trigger shares, its type's metadata delegated.

Each ``type:`` is looked up in :data:`pytest_lagscale.config.trigger_metadata.TRIGGER_TYPES`,
whose entry validates that type's ``metadata`` into its settings object. ``control`` builds the
trigger's logic from the result (``TRIGGERS`` in ``control/keda/registry.py``); ``config``
never imports ``control``.

Source: kedacore/keda apis/keda/v1alpha1/scaletriggers_types.go ScaleTriggers v2.20.2,
pkg/scalers/cpu_memory_scaler.go v2.20.2; docs/semantics.md §1.1, §2.3
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import MISSING, Problems, join, nearest
from pytest_lagscale.config.trigger_metadata import TRIGGER_TYPES
from pytest_lagscale.config.trigger_metadata.kafka import KafkaTriggerMetadata

TRIGGER_KEYS = ("type", "name", "metadata", "authenticationRef", "metricType", "useCachedMetrics")
_OTHER_KEDA_TYPES = ("apache-kafka", "memory", "prometheus", "cron", "kafka-streams", "external-push")


@dataclass(frozen=True)
class TriggerConfig:
    """One validated trigger.

    Attributes:
        index: position in ``spec.triggers`` (the ``s<index>-`` metric-name prefix).
        type: the registry key (``kafka``, ``cpu``, ``external``).
        name: the trigger's ``name`` (``''`` when unset).
        metric_type: ``AverageValue`` (kafka default) or ``Value``; ``Utilization`` for cpu.
        use_cached_metrics: the HPA reads the value stored by the last polling-loop run.
        metadata: the metadata strings as written.
        settings: the type's validated metadata (``KafkaTriggerMetadata``,
            ``CpuTriggerMetadata``, ``ExternalTriggerMetadata``, ...), built by its
            :data:`~pytest_lagscale.config.trigger_metadata.TRIGGER_TYPES` entry.
        resource_metric: a Resource metric (cpu) the HPA reads from the metrics API.
    """

    index: int
    type: str
    name: str = ""
    metric_type: str = "AverageValue"
    use_cached_metrics: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)
    settings: Any = None
    resource_metric: bool = False

    @property
    def kafka(self) -> KafkaTriggerMetadata | None:
        """A kafka trigger's metadata (its :attr:`settings`), else None."""
        return self.settings if self.type == "kafka" else None

    @property
    def cpu_utilization_percent(self) -> int | None:
        """A cpu trigger's target utilization in percent of requests, else None."""
        return getattr(self.settings, "target_utilization_percent", None)

    @property
    def container_name(self) -> str | None:
        """A cpu trigger's ``containerName`` (None = whole pod, or not a cpu trigger)."""
        return getattr(self.settings, "container_name", None)


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
    entry = TRIGGER_TYPES.get(kind) if isinstance(kind, str) else None
    if entry is None:
        _bad_type(kind, join(path, "type"), tuple(TRIGGER_TYPES), p)
        return None
    name = _read.string(data, "name", path, p, default="")
    metric_type = _read.string(data, "metricType", path, p, default=entry.metric_types[0],
                               choices=entry.metric_types)
    cached = _read.boolean(data, "useCachedMetrics", path, p, default=False)
    if cached and entry.resource_metric:
        p.add(join(path, "useCachedMetrics"), True, f"false for a {kind} trigger",
              f"remove useCachedMetrics (the HPA reads {kind} from the metrics API)")
    auth = _auth_ref(data, path, p)
    metadata = data.get("metadata", MISSING)
    settings = entry.collect(metadata, join(path, "metadata"), p, auth)
    if len(p.lines) != before:
        return None
    return TriggerConfig(index=i, type=kind, name=name or "", metric_type=metric_type or entry.metric_types[0],
                         use_cached_metrics=cached,
                         metadata=MappingProxyType(dict(metadata) if isinstance(metadata, Mapping) else {}),
                         settings=settings, resource_metric=entry.resource_metric)


def _bad_type(kind: Any, path: str, known: tuple[str, ...], p: Problems) -> None:
    allowed = "one of {" + ", ".join(repr(k) for k in known) + "}"
    if kind is MISSING:
        p.add(path, kind, allowed, f"add type: {known[0]}")
    elif kind in _OTHER_KEDA_TYPES:
        p.add(path, kind, allowed + " (the triggers lagscale simulates)",
              "use a " + " or ".join(known) + " trigger")
    else:
        guess = nearest(str(kind), known) if isinstance(kind, str) else None
        p.add(path, kind, allowed, f"use {guess!r}" if guess else f"use {known[0]!r}")


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
