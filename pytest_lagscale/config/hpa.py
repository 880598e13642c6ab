"""Load a plain ``HorizontalPodAutoscaler`` (autoscaling/v2): the CPU HPA of experiment 1, or the
Pods-metric HPA of the Kafka Streams article (the consumers' own records-lag).

Exactly one metric is simulated, either:

* ``type: Resource``, ``resource.name: cpu``, ``target.type: Utilization`` with
  ``averageUtilization`` (percent of requests, >= 1); or
* ``type: Pods``, ``pods.metric.name`` (the per-pod metric, a Prometheus metric name: the local
  platform reads ``sum by pod`` of that series from the run's Prometheus, as prometheus-adapter
  serves it), ``pods.target.type: AverageValue`` with ``averageValue`` (a Kubernetes quantity
  > 0: ``"2000"``, ``"100k"``, ``"1500m"``). ``pods.metric.selector`` is not simulated.

Harness-only settings come from ``lagscale.dev/*`` annotations, as for the ScaledObject
(:mod:`.harness`).

Source: kubernetes/kubernetes pkg/apis/autoscaling/validation/validation.go
validateHorizontalPodAutoscalerSpec, validatePodsSource v1.28.0 and
staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity, MilliValue v1.28.0;
docs/semantics.md §3.1, §3.3, §3.4
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, ClassVar

from pytest_lagscale.config import _read
from pytest_lagscale.config._objects import ObjectMeta, collect_envelope
from pytest_lagscale.config._problems import MISSING, Problems, index, join
from pytest_lagscale.config.behavior import Behavior, collect_behavior
from pytest_lagscale.config.harness import HarnessSettings, collect_harness_settings
from pytest_lagscale.config.scaledobject import ScaleTargetRef

SPEC_KEYS = ("scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior")
METRIC_TYPES = ("Resource", "Pods")
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                       r"(?:(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)|[eE]([+-]?[0-9]+))?")
_SUFFIX = {"m": Decimal("0.001"), "": Decimal(1), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
           "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
           "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
           "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60}


def quantity_milli(value: Any) -> int | None:
    """A Kubernetes quantity (``"2000"``, ``"100k"``, ``"1500m"``, ``"1e3"``, or a YAML number) in
    milli-units, rounded up as ``Quantity.MilliValue()`` does; None when it does not parse.

    Example:
        >>> quantity_milli("100k"), quantity_milli("1500m"), quantity_milli(2000), quantity_milli("0.5m")
        (100000000, 1500, 2000000, 1)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    text = repr(value) if isinstance(value, float) else str(value)
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        return None
    number, suffix, exponent = match.groups()
    try:
        amount = Decimal(number) * (_SUFFIX[suffix or ""] if exponent is None else Decimal(10) ** int(exponent))
    except (InvalidOperation, OverflowError):
        return None
    return math.ceil(amount * 1000)


@dataclass(frozen=True)
class PodsMetric:
    """A ``type: Pods`` metric with an ``AverageValue`` target.

    Attributes:
        metric_name: ``pods.metric.name``, e.g. ``consumer_records_lag``.
        target_average_milli: ``pods.target.averageValue`` in milli-units (> 0).
        target_average_value: the same as written (``"2000"``).
    """

    metric_name: str
    target_average_milli: int
    target_average_value: str

    @property
    def target_average(self) -> float:
        """``averageValue`` in the metric's unit (records of lag for ``consumer_records_lag``)."""
        return self.target_average_milli / 1000


@dataclass(frozen=True)
class HpaConfig:
    """A validated plain HPA with one metric: cpu utilization or a Pods metric.

    Attributes:
        source: file it was read from.
        meta: name, namespace, labels, annotations.
        harness: the ``lagscale.dev/*`` controller settings.
        scale_target_ref: the Deployment scaled.
        min_replicas: ``spec.minReplicas`` (>= 1, default 1).
        max_replicas: ``spec.maxReplicas`` (>= minReplicas).
        target_utilization_percent: ``averageUtilization`` in percent of CPU requests (> 0) of a
            cpu metric, None with a Pods metric.
        behavior: behavior with API defaults, None = legacy path.
        pods_metric: the Pods metric, None with a cpu metric.
        kind: class constant ``HorizontalPodAutoscaler`` (the policy registry key).
    """

    source: str
    meta: ObjectMeta
    harness: HarnessSettings
    scale_target_ref: ScaleTargetRef
    min_replicas: int
    max_replicas: int
    target_utilization_percent: int | None
    behavior: Behavior | None = None
    pods_metric: PodsMetric | None = None
    kind: ClassVar[str] = "HorizontalPodAutoscaler"

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return self.meta.name

    @property
    def metric_type(self) -> str:
        """``Resource`` (cpu) or ``Pods``."""
        return "Pods" if self.pods_metric is not None else "Resource"


#: The former name, when only a cpu metric was simulated.
CpuHpaConfig = HpaConfig


def load_cpu_hpa(path: str | Path) -> HpaConfig:
    """Read and validate an HPA YAML file (cpu or Pods metric; the name is historical).

    Raises:
        ConfigError: every problem in the file, one line each.
    """
    return parse_cpu_hpa(_read.load_yaml(path), source=str(path))


def parse_cpu_hpa(doc: Any, *, source: str = "<string>") -> HpaConfig:
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
    percent, pods = _metric(spec, p)
    behavior = collect_behavior(spec["behavior"], "spec.behavior", p) if "behavior" in spec else None
    p.raise_if_any()
    assert meta is not None and target is not None and (percent is not None or pods is not None)
    return HpaConfig(source, meta, harness, target, low, high, percent, behavior, pods)


load_hpa = load_cpu_hpa
parse_hpa = parse_cpu_hpa


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


def _metric(spec: Mapping[str, Any], p: Problems) -> tuple[int | None, PodsMetric | None]:
    """Exactly one metric: Resource cpu with an Utilization target, or Pods with AverageValue."""
    items = _read.sequence(spec, "metrics", "spec", p, required=True) or []
    if len(items) != 1:
        if items:
            p.add("spec.metrics", len(items), "exactly 1 metric (Resource cpu or Pods)", "keep one metric")
        return None, None
    path = index("spec.metrics", 0)
    metric = _read.mapping(items[0], path, p)
    if metric is None:
        return None, None
    kind = _read.string(metric, "type", path, p, choices=METRIC_TYPES)
    if kind is None:
        return None, None
    if kind == "Pods":
        p.unknown_keys(metric, path, ("type", "pods"))
        return None, _pods_metric(metric, path, p)
    p.unknown_keys(metric, path, ("type", "resource"))
    return _cpu_metric(metric, path, p), None


def _pods_metric(metric: Mapping[str, Any], path: str, p: Problems) -> PodsMetric | None:
    """``pods``: ``metric.name`` and an ``AverageValue`` target (validatePodsSource)."""
    ppath = join(path, "pods")
    pods = _read.mapping(metric.get("pods", MISSING), ppath, p, "a mapping with metric and target")
    if pods is None:
        return None
    p.unknown_keys(pods, ppath, ("metric", "target"))
    mpath, tpath = join(ppath, "metric"), join(ppath, "target")
    ident = _read.mapping(pods.get("metric", MISSING), mpath, p, "a mapping with name")
    name = None
    if ident is not None:
        p.unknown_keys(ident, mpath, ("name",), unsupported={
            "selector": "remove it: the local platform reads every series of the metric per pod"})
        name = _read.string(ident, "name", mpath, p, what="a Prometheus metric name")
        if name is not None and not _METRIC_NAME.fullmatch(name):
            p.add(join(mpath, "name"), name, "a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)",
                  "use the series name the replicas export, e.g. 'consumer_records_lag'")
            name = None
    target = _read.mapping(pods.get("target", MISSING), tpath, p, "a mapping with type and averageValue")
    milli = None
    if target is not None:
        p.unknown_keys(target, tpath, ("type", "averageValue"),
                       unsupported={"value": "a Pods metric takes only an AverageValue target; use averageValue",
                                    "averageUtilization": "a Pods metric takes only an AverageValue target; "
                                                          "use averageValue"})
        _read.string(target, "type", tpath, p, choices=("AverageValue",))
        milli = _average_value(target, tpath, p)
    if name is None or milli is None:
        return None
    assert target is not None
    return PodsMetric(name, milli, str(target["averageValue"]))


def _average_value(target: Mapping[str, Any], tpath: str, p: Problems) -> int | None:
    value, vpath = target.get("averageValue", MISSING), join(tpath, "averageValue")
    allowed = "a quantity > 0 (e.g. '2000', '100k', '1500m'; records of lag per pod for consumer_records_lag)"
    if value is MISSING:
        p.add(vpath, value, allowed, f"add '{vpath}', e.g. '2000'")
        return None
    milli = quantity_milli(value)
    if milli is None or milli <= 0:
        p.add(vpath, value, allowed, "write a positive number, quoted, e.g. '2000'")
        return None
    return milli


def _cpu_metric(metric: Mapping[str, Any], path: str, p: Problems) -> int | None:
    """``resource``: cpu with an Utilization target."""
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
