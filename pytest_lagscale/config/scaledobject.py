"""Load and validate a KEDA ``ScaledObject`` (``keda.sh/v1alpha1``) into frozen dataclasses.

Every problem of a file is reported at once (see :mod:`._problems` for the line format).
Harness-only settings come from ``lagscale.dev/*`` annotations (:mod:`.harness`).

Source: kedacore/keda apis/keda/v1alpha1/scaledobject_types.go ScaledObjectSpec,
CheckReplicaCountBoundsAreValid, CheckFallbackValid v2.20.2; docs/semantics.md §2.1,
§2.3, §2.5
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pytest_lagscale.config import _read
from pytest_lagscale.config._objects import ObjectMeta, collect_envelope
from pytest_lagscale.config._problems import MISSING, Problems, join
from pytest_lagscale.config.behavior import Behavior, collect_behavior
from pytest_lagscale.config.harness import HarnessSettings, collect_harness_settings
from pytest_lagscale.config.triggers import TriggerConfig, collect_triggers

API_VERSION = "keda.sh/v1alpha1"
SPEC_KEYS = ("scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod",
             "idleReplicaCount", "minReplicaCount", "maxReplicaCount", "advanced", "triggers", "fallback")
FALLBACK_BEHAVIORS = ("static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower")
_ADVANCED_UNSUPPORTED = {"scalingModifiers": "remove it: lagscale does not simulate scalingModifiers"}


@dataclass(frozen=True)
class ScaleTargetRef:
    """``spec.scaleTargetRef``.

    Attributes:
        name: the Deployment's name.
        api_version: default ``apps/v1``.
        kind: default ``Deployment``.
        env_source_container_name: container whose env KEDA resolves (None = the first).
    """

    name: str
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    env_source_container_name: str | None = None


@dataclass(frozen=True)
class FallbackConfig:
    """``spec.fallback``.

    Attributes:
        failure_threshold: consecutive failures tolerated before the fallback value (>= 0).
        replicas: fallback replica count R (>= 0).
        behavior: ``static``, ``currentReplicas``, ``currentReplicasIfHigher`` or
            ``currentReplicasIfLower``.
    """

    failure_threshold: int
    replicas: int
    behavior: str = "static"


@dataclass(frozen=True)
class ScaledObjectConfig:
    """A validated ScaledObject with KEDA's defaults filled in.

    Attributes:
        source: the file it was read from.
        meta: name, namespace, labels and annotations.
        harness: the ``lagscale.dev/*`` controller settings.
        scale_target_ref: the Deployment scaled.
        triggers: at least one trigger.
        polling_interval_s: seconds between KEDA activity checks (>= 1), default 30.
        cooldown_period_s: seconds after the last active poll before scaling to 0/idle, default 300.
        initial_cooldown_period_s: seconds after creation before the first scale to 0, default 0.
        idle_replica_count: replicas when inactive (None = unset).
        min_replica_count: KEDA's minimum (0 when unset: scale to zero allowed).
        max_replica_count: maximum replicas, default 100.
        fallback: None when unset.
        behavior: HPA behavior (API defaults filled), None = legacy HPA path.
        hpa_name: the generated HPA's name.
        restore_to_original_replica_count: ``advanced.restoreToOriginalReplicaCount``.
        kind: class constant ``ScaledObject`` (the policy registry key).
    """

    source: str
    meta: ObjectMeta
    harness: HarnessSettings
    scale_target_ref: ScaleTargetRef
    triggers: tuple[TriggerConfig, ...]
    polling_interval_s: int = 30
    cooldown_period_s: int = 300
    initial_cooldown_period_s: int = 0
    idle_replica_count: int | None = None
    min_replica_count: int = 0
    max_replica_count: int = 100
    fallback: FallbackConfig | None = None
    behavior: Behavior | None = None
    hpa_name: str = ""
    restore_to_original_replica_count: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    kind: ClassVar[str] = "ScaledObject"

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name

    @property
    def hpa_min_replicas(self) -> int:
        """The generated HPA's minReplicas: minReplicaCount if > 0, else 1 (§2.1)."""
        return self.min_replica_count if self.min_replica_count > 0 else 1

    @property
    def hpa_max_replicas(self) -> int:
        """The generated HPA's maxReplicas (= maxReplicaCount)."""
        return self.max_replica_count


def load_scaled_object(path: str | Path) -> ScaledObjectConfig:
    """Read and validate a ScaledObject YAML file.

    Raises:
        ConfigError: every problem in the file, one line each.
    """
    return parse_scaled_object(_read.load_yaml(path), source=str(path))


def parse_scaled_object(doc: Any, *, source: str = "<string>") -> ScaledObjectConfig:
    """Validate a loaded ScaledObject document.

    Args:
        doc: the YAML document as loaded (a mapping).
        source: file name or label used in messages.

    Raises:
        ConfigError: every problem, one line each.
    """
    p = Problems(source)
    meta, spec = collect_envelope(doc, p, api_version=API_VERSION, kind="ScaledObject")
    harness = collect_harness_settings(meta.annotations if meta else {}, "metadata.annotations", p)
    if spec is None:
        p.raise_if_any()
    assert spec is not None
    p.unknown_keys(spec, "spec", SPEC_KEYS)
    fields = _replica_fields(spec, p)
    target = _scale_target(spec, p)
    triggers = collect_triggers(spec, "spec", p)
    fallback = _fallback(spec, triggers, p)
    behavior, hpa_name, restore = _advanced(spec, meta, p)
    _only_cpu_min_zero(spec, triggers, fields["min_replica_count"], p)
    p.raise_if_any()
    assert meta is not None and target is not None
    return ScaledObjectConfig(source=source, meta=meta, harness=harness, scale_target_ref=target,
                              triggers=triggers, fallback=fallback, behavior=behavior,
                              hpa_name=hpa_name, restore_to_original_replica_count=restore,
                              annotations=meta.annotations, **fields)


def _replica_fields(spec: Mapping[str, Any], p: Problems) -> dict[str, Any]:
    """Timing and replica-count fields, then KEDA's bound checks (§2.1)."""
    out = {
        "polling_interval_s": _read.integer(spec, "pollingInterval", "spec", p, default=30, lo=1, unit="seconds"),
        "cooldown_period_s": _read.integer(spec, "cooldownPeriod", "spec", p, default=300, lo=0, unit="seconds"),
        "initial_cooldown_period_s": _read.integer(spec, "initialCooldownPeriod", "spec", p, default=0, lo=0,
                                                   unit="seconds"),
        "idle_replica_count": _read.integer(spec, "idleReplicaCount", "spec", p, default=None, lo=0,
                                           unit="replicas"),
        "min_replica_count": _read.integer(spec, "minReplicaCount", "spec", p, default=0, lo=0, unit="replicas"),
        "max_replica_count": _read.integer(spec, "maxReplicaCount", "spec", p, default=100, lo=1,
                                           unit="replicas"),
    }
    lo, hi, idle = out["min_replica_count"], out["max_replica_count"], out["idle_replica_count"]
    if lo is not None and hi is not None and lo > hi:
        p.add("spec.minReplicaCount", lo, f"<= spec.maxReplicaCount ({hi})",
              "lower minReplicaCount or raise maxReplicaCount")
    if idle is not None and lo is not None and idle >= lo:
        p.add("spec.idleReplicaCount", idle, f"< spec.minReplicaCount ({lo})",
              "set idleReplicaCount to 0 and minReplicaCount to 1 or more, or remove idleReplicaCount")
    return {k: (v if v is not None else _DEFAULTS[k]) for k, v in out.items()}


_DEFAULTS = {"polling_interval_s": 30, "cooldown_period_s": 300, "initial_cooldown_period_s": 0,
             "idle_replica_count": None, "min_replica_count": 0, "max_replica_count": 100}


def _scale_target(spec: Mapping[str, Any], p: Problems) -> ScaleTargetRef | None:
    node = spec.get("scaleTargetRef", MISSING)
    if node is MISSING:
        p.add("spec.scaleTargetRef", node, "a mapping with 'name'", "add scaleTargetRef: {name: lagscale-consumer}")
        return None
    data = _read.mapping(node, "spec.scaleTargetRef", p)
    if data is None:
        return None
    path = "spec.scaleTargetRef"
    p.unknown_keys(data, path, ("name", "apiVersion", "kind", "envSourceContainerName"))
    name = _read.string(data, "name", path, p)
    api = _read.string(data, "apiVersion", path, p, default="apps/v1", choices=("apps/v1",))
    kind = _read.string(data, "kind", path, p, default="Deployment", choices=("Deployment",))
    container = _read.string(data, "envSourceContainerName", path, p, default=None)
    if name is None:
        return None
    return ScaleTargetRef(name, api or "apps/v1", kind or "Deployment", container)


def _fallback(spec: Mapping[str, Any], triggers: tuple[TriggerConfig, ...], p: Problems) -> FallbackConfig | None:
    """``spec.fallback`` (§2.5): both counts >= 0, behavior enum, needs a non-cpu trigger."""
    if "fallback" not in spec:
        return None
    data = _read.mapping(spec["fallback"], "spec.fallback", p)
    if data is None:
        return None
    path = "spec.fallback"
    p.unknown_keys(data, path, ("failureThreshold", "replicas", "behavior"))
    threshold = _read.integer(data, "failureThreshold", path, p, lo=0, unit="failures")
    replicas = _read.integer(data, "replicas", path, p, lo=0, unit="replicas")
    behavior = _read.string(data, "behavior", path, p, default="static", choices=FALLBACK_BEHAVIORS)
    if triggers and all(t.resource_metric for t in triggers):
        p.add(path, dict(data), "a fallback beside at least one non-cpu trigger",
              "remove fallback (cpu triggers do not support it) or add a kafka trigger")
    if threshold is None or replicas is None or behavior is None:
        return None
    return FallbackConfig(threshold, replicas, behavior)


def _advanced(spec: Mapping[str, Any], meta: ObjectMeta | None,
              p: Problems) -> tuple[Behavior | None, str, bool]:
    default_name = f"keda-hpa-{meta.name}" if meta else ""
    if "advanced" not in spec:
        return None, default_name, False
    data = _read.mapping(spec["advanced"], "spec.advanced", p)
    if data is None:
        return None, default_name, False
    path = "spec.advanced"
    p.unknown_keys(data, path, ("horizontalPodAutoscalerConfig", "restoreToOriginalReplicaCount"),
                   _ADVANCED_UNSUPPORTED)
    restore = _read.boolean(data, "restoreToOriginalReplicaCount", path, p, default=False)
    if "horizontalPodAutoscalerConfig" not in data:
        return None, default_name, restore
    sub = join(path, "horizontalPodAutoscalerConfig")
    hpa = _read.mapping(data["horizontalPodAutoscalerConfig"], sub, p)
    if hpa is None:
        return None, default_name, restore
    p.unknown_keys(hpa, sub, ("name", "behavior"))
    name = _read.string(hpa, "name", sub, p, default=default_name)
    behavior = collect_behavior(hpa["behavior"], join(sub, "behavior"), p) if "behavior" in hpa else None
    return behavior, name or default_name, restore


def _only_cpu_min_zero(spec: Mapping[str, Any], triggers: tuple[TriggerConfig, ...], min_count: int,
                       p: Problems) -> None:
    """KEDA refuses minReplicaCount 0 when every trigger is cpu/memory (it could never wake up)."""
    if triggers and all(t.resource_metric for t in triggers) and min_count == 0:
        p.add("spec.minReplicaCount", spec.get("minReplicaCount", MISSING),
              "an integer >= 1 when every trigger is cpu (replicas)", "set minReplicaCount: 1")
