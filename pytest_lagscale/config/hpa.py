"""Load the CPU ``HorizontalPodAutoscaler`` (autoscaling/v2) used by experiment 1.

Only a Resource ``cpu`` metric with an ``Utilization`` target is simulated. Harness-only
settings come from ``lagscale.dev/*`` annotations, as for the ScaledObject (:mod:`.harness`).

Source: kubernetes/kubernetes pkg/apis/autoscaling/validation/validation.go
validateHorizontalPodAutoscalerSpec v1.28.0; specs/keda-hpa-semantics.md §3.1, §3.4
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pytest_lagscale.config import _read
from pytest_lagscale.config._objects import ObjectMeta, collect_envelope
from pytest_lagscale.config._problems import MISSING, Problems, index, join
from pytest_lagscale.config.behavior import Behavior, collect_behavior
from pytest_lagscale.config.harness import HarnessSettings, collect_harness_settings
from pytest_lagscale.config.scaledobject import ScaleTargetRef

SPEC_KEYS = ("scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior")


@dataclass(frozen=True)
class CpuHpaConfig:
    """A validated CPU-utilization HPA.

    Attributes:
        source: file it was read from.
        meta: name, namespace, labels, annotations.
        harness: the ``lagscale.dev/*`` controller settings.
        scale_target_ref: the Deployment scaled.
        min_replicas: ``spec.minReplicas`` (>= 1, default 1).
        max_replicas: ``spec.maxReplicas`` (>= minReplicas).
        target_utilization_percent: ``averageUtilization`` in percent of CPU requests (> 0).
        behavior: behavior with API defaults, None = legacy path.
        kind: class constant ``HorizontalPodAutoscaler`` (the policy registry key).
    """

    source: str
    meta: ObjectMeta
    harness: HarnessSettings
    scale_target_ref: ScaleTargetRef
    min_replicas: int
    max_replicas: int
    target_utilization_percent: int
    behavior: Behavior | None = None
    kind: ClassVar[str] = "HorizontalPodAutoscaler"

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name


def load_cpu_hpa(path: str | Path) -> CpuHpaConfig:
    """Read and validate a CPU HPA YAML file.

    Raises:
        ConfigError: every problem in the file, one line each.
    """
    return parse_cpu_hpa(_read.load_yaml(path), source=str(path))


def parse_cpu_hpa(doc: Any, *, source: str = "<string>") -> CpuHpaConfig:
    """Validate a loaded HPA document (see :func:`load_cpu_hpa`).

    Raises:
        ConfigError: every problem, one line each.
    """
    p = Problems(source)
    meta, spec = collect_envelope(doc, p, api_version="autoscaling/v2", kind="HorizontalPodAutoscaler")
    harness = collect_harness_settings(meta.annotations if meta else {}, "metadata.annotations", p)
    if spec is None:
        p.raise_if_any()
    assert spec is not None
    p.unknown_keys(spec, "spec", SPEC_KEYS)
    target = _target(spec, p)
    low = _read.integer(spec, "minReplicas", "spec", p, default=1, lo=1, unit="replicas")
    high = _read.integer(spec, "maxReplicas", "spec", p, lo=1, unit="replicas")
    if low is not None and high is not None and low > high:
        p.add("spec.minReplicas", low, f"<= spec.maxReplicas ({high})", "lower minReplicas or raise maxReplicas")
    percent = _cpu_metric(spec, p)
    behavior = collect_behavior(spec["behavior"], "spec.behavior", p) if "behavior" in spec else None
    p.raise_if_any()
    assert meta is not None and target is not None and percent is not None
    return CpuHpaConfig(source, meta, harness, target, low, high, percent, behavior)


def _target(spec: Mapping[str, Any], p: Problems) -> ScaleTargetRef | None:
    path = "spec.scaleTargetRef"
    data = _read.mapping(spec.get("scaleTargetRef", MISSING), path, p, "a mapping with apiVersion, kind, name")
    if data is None:
        return None
    p.unknown_keys(data, path, ("apiVersion", "kind", "name"))
    name = _read.string(data, "name", path, p)
    api = _read.string(data, "apiVersion", path, p, choices=("apps/v1",))
    kind = _read.string(data, "kind", path, p, choices=("Deployment",))
    return ScaleTargetRef(name, api, kind) if name and api and kind else None


def _cpu_metric(spec: Mapping[str, Any], p: Problems) -> int | None:
    """Exactly one metric: Resource cpu with an Utilization target."""
    items = _read.sequence(spec, "metrics", "spec", p, required=True) or []
    if len(items) != 1:
        if items:
            p.add("spec.metrics", len(items), "exactly 1 metric (Resource cpu)", "keep only the cpu metric")
        return None
    path = index("spec.metrics", 0)
    metric = _read.mapping(items[0], path, p)
    if metric is None:
        return None
    p.unknown_keys(metric, path, ("type", "resource"))
    _read.string(metric, "type", path, p, choices=("Resource",))
    rpath = join(path, "resource")
    resource = _read.mapping(metric.get("resource", MISSING), rpath, p, "a mapping with name and target")
    if resource is None:
        return None
    p.unknown_keys(resource, rpath, ("name", "target"))
    _read.string(resource, "name", rpath, p, choices=("cpu",))
    tpath = join(rpath, "target")
    target = _read.mapping(resource.get("target", MISSING), tpath, p, "a mapping with type and averageUtilization")
    if target is None:
        return None
    p.unknown_keys(target, tpath, ("type", "averageUtilization", "averageValue", "value"))
    _read.string(target, "type", tpath, p, choices=("Utilization",))
    return _read.integer(target, "averageUtilization", tpath, p, lo=1, unit="percent of requests")
