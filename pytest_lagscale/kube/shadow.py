"""The embedded HPA in shadow of the real one: same inputs, compare the decisions (pure, no I/O).

The conformance benchmark records, for one KEDA-generated HPA, every external-metrics read the
HPA controller makes (:class:`~pytest_lagscale.kube.metric_reads.MetricRead`, from the metrics
tap), the Deployment's ``spec.replicas``/``status.replicas`` and the HPA's
``status.desiredReplicas`` over time. This module turns those into one :class:`SyncInput` per
sync (:func:`align_syncs`), replays them through
:class:`~pytest_lagscale.control.hpa.HorizontalPodAutoscaler` (:func:`shadow_decisions`) and
reports every sync where the two differ (:func:`conformance`).

Example:
    >>> spec = hpa_spec_view(hpa_json)                                   # doctest: +SKIP
    >>> syncs = align_syncs(tap.reads(), deployment, hpa, sync_period_s=3, spec=spec)  # doctest: +SKIP
    >>> report = conformance(shadow_decisions(spec, syncs, tolerance=0.1,
    ...                                       downscale_stabilization_s=30), dropped=syncs.dropped)  # doctest: +SKIP
    >>> report.summary()                                                 # doctest: +SKIP
    'shadow HPA: 41/41 syncs agree (100.0 %), 0 differ, 0 dropped'

Source: docs/kubernetes.md "Conformance: the shadow controller"; docs/semantics.md
§2.3 (the HPA KEDA generates), §3.2 (one reconcile), §3.3 (External proposals).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import MISSING, Problems, join
from pytest_lagscale.config.behavior import collect_behavior
from pytest_lagscale.config.hpa import quantity_milli
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler, proposal_for_average_value, proposal_for_value

TARGET_TYPES = ("AverageValue", "Value")
TARGET_FIELD = {"AverageValue": "averageValue", "Value": "value"}
STATUS_WINDOW_FRACTION = 0.9
_OPERATORS = {"In": "in", "NotIn": "notin"}


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """A ``metav1.LabelSelector`` (camelCase dict) as the HPA sends it in ``labelSelector``.

    Requirements sorted by key, ``key=value`` for matchLabels, ``key in (a,b)`` / ``key notin
    (a,b)`` (values sorted), ``key`` (Exists), ``!key`` (DoesNotExist), joined by ``,``; "" for
    no selector.

    Source: kubernetes/apimachinery pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector and
    pkg/labels/selector.go Requirement.String (read in v0.36.3); the HPA passes
    ``metricSelector.String()`` (kubernetes/metrics pkg/client/external_metrics/client.go List).
    """
    if not selector:
        return ""
    reqs = [(key, f"{key}={value}") for key, value in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], sorted(expr.get("values") or ())
        text = {"Exists": key, "DoesNotExist": f"!{key}"}.get(op)
        reqs.append((key, text or f"{key} {_OPERATORS.get(op, op)} ({','.join(values)})"))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def _requirements(selector: str) -> frozenset[str]:
    """The requirements of a selector string (commas inside ``( )`` kept), spaces normalized."""
    parts = re.split(r",(?![^()]*\))", selector)
    return frozenset(re.sub(r"\s+", " ", p).strip() for p in parts if p.strip())


@dataclass(frozen=True)
class HpaSpecView:
    """What the shadow needs of a real autoscaling/v2 HorizontalPodAutoscaler.

    Attributes:
        name, namespace: ``metadata.name`` / ``metadata.namespace`` ("" when absent).
        min_replicas, max_replicas: ``spec.minReplicas`` (API default 1) / ``spec.maxReplicas``.
        behavior: ``spec.behavior`` as the camelCase dict, or None (the HPA's legacy path).
        metric_name: ``spec.metrics[0].external.metric.name`` (KEDA: ``s<i>-<trigger>-<name>``).
        metric_selector: ``external.metric.selector`` as the dict, or None.
        target_type: ``AverageValue`` (per replica; KEDA's default) or ``Value`` (total).
        target: the target quantity as a float (``"500"`` -> 500.0, ``"1500m"`` -> 1.5).
    """

    name: str
    namespace: str
    min_replicas: int
    max_replicas: int
    behavior: Mapping[str, Any] | None
    metric_name: str
    metric_selector: Mapping[str, Any] | None
    target_type: str
    target: float

    @property
    def label_selector(self) -> str:
        """The ``labelSelector`` the HPA sends for this metric (:func:`selector_string`)."""
        return selector_string(self.metric_selector)

    def reads_metric(self, metric_name: str, label_selector: str) -> bool:
        """A read of this HPA's metric: same name, same selector requirements (any order)."""
        return metric_name == self.metric_name and _requirements(label_selector) == _requirements(self.label_selector)


def hpa_spec_view(hpa: Mapping[str, Any]) -> HpaSpecView:
    """Read an HPA object as the API server returns it (JSON, camelCase).

    Raises:
        ConfigError: every problem, one line each, naming the field (``spec.metrics`` when the
            HPA has not exactly one metric or it is not ``External``; the target type or
            quantity; ``spec.maxReplicas``; an invalid ``spec.behavior``).
    """
    meta = hpa.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    p = Problems(f"HorizontalPodAutoscaler {namespace}/{name}" if namespace else f"HorizontalPodAutoscaler {name!r}")
    spec = _read.mapping(hpa.get("spec", MISSING), "spec", p) or {}
    min_r = _read.integer(spec, "minReplicas", "spec", p, default=1, lo=0)
    max_r = _read.integer(spec, "maxReplicas", "spec", p, lo=1)
    behavior = spec.get("behavior")
    if behavior is not None:
        collect_behavior(behavior, "spec.behavior", p)
    metric = _external_metric(spec, p)
    p.raise_if_any()
    return HpaSpecView(name, namespace, min_r, max_r, behavior, *metric)


def _external_metric(spec: Mapping[str, Any], p: Problems) -> tuple[str, Any, str, float]:
    """``(name, selector, target type, target)`` of the one External metric (problems in ``p``)."""
    metrics = spec.get("metrics") or []
    types = [m.get("type") if isinstance(m, Mapping) else m for m in metrics]
    if types != ["External"]:
        p.add("spec.metrics", types, "exactly one metric of type 'External'",
              "the shadow replays one External metric: give the ScaledObject exactly one (non-cpu/memory) trigger")
        return "", None, "", 0.0
    ext = _read.mapping(metrics[0].get("external", MISSING), "spec.metrics[0].external", p) or {}
    mpath, tpath = "spec.metrics[0].external.metric", "spec.metrics[0].external.target"
    metric = _read.mapping(ext.get("metric", MISSING), mpath, p) or {}
    target = _read.mapping(ext.get("target", MISSING), tpath, p) or {}
    name = _read.string(metric, "name", mpath, p) or ""
    ttype = _read.string(target, "type", tpath, p, choices=TARGET_TYPES) or ""
    value = target.get(TARGET_FIELD.get(ttype, "averageValue"), MISSING)
    milli = quantity_milli(value) if value is not MISSING else None
    if ttype and (milli is None or milli <= 0):
        key = join(tpath, TARGET_FIELD[ttype])
        p.add(key, value, "a quantity > 0 ('500', '1500m', '2k')", f"set '{key}' (the trigger's threshold)")
    return name, metric.get("selector"), ttype, (milli or 0) / 1000


@dataclass(frozen=True)
class SyncInput:
    """The inputs of one real HPA sync, and its outcome.

    Attributes:
        t_s: when the HPA read the metric (the tap clock, monotonic seconds).
        metric_total: the sum of the values read; None when the read failed.
        status_replicas: the Deployment's ``status.replicas`` just before the sync.
        spec_replicas: its ``spec.replicas`` (the HPA's currentReplicas) just before the sync.
        real_desired: the real HPA's ``status.desiredReplicas`` after the sync.
        ready_pods: Running and Ready pods (``Value`` targets only); None = ``status_replicas``.
    """

    t_s: float
    metric_total: float | None
    status_replicas: int
    spec_replicas: int
    real_desired: int
    ready_pods: int | None = None


@dataclass(frozen=True)
class ShadowDecision:
    """The shadow's decision for one sync.

    Attributes:
        sync: the inputs.
        target: the metric target used (same unit as ``metric_total``).
        proposal: the metric proposal (None: the read failed).
        desired: the shadow's ``desiredReplicas`` (on a failed read: its previous value, as the
            real status keeps it).
        reason: the HPA reason token (ScaleUpLimit, DesiredWithinRange, ...).
        stabilization_reason: ScaleUpStabilized, ScaleDownStabilized, ReadyForNewScale or None.
        agrees: ``desired == sync.real_desired``.
    """

    sync: SyncInput
    target: float
    proposal: int | None
    desired: int
    reason: str
    stabilization_reason: str | None
    agrees: bool


def _proposal(spec: HpaSpecView, sync: SyncInput, tolerance: float) -> int | None:
    if sync.metric_total is None:
        return None
    if spec.target_type == "Value":
        ready = sync.status_replicas if sync.ready_pods is None else sync.ready_pods
        return proposal_for_value(sync.metric_total, spec.target, sync.spec_replicas, ready, tolerance=tolerance)
    return proposal_for_average_value(sync.metric_total, spec.target, sync.status_replicas, tolerance)


def shadow_decisions(spec: HpaSpecView, syncs: Sequence[SyncInput], *, tolerance: float,
                     downscale_stabilization_s: float) -> list[ShadowDecision]:
    """Replay ``syncs`` (in order) through one embedded HPA built from ``spec``.

    Each sync: the proposal (AverageValue: ``proposal_for_average_value(total, target,
    status_replicas)``; Value: ``proposal_for_value(total, target, spec_replicas, ready_pods)``;
    None for a failed read), then ``decide_with_reason(t_s, spec_replicas, proposal)``.

    Args:
        tolerance: ``--horizontal-pod-autoscaler-tolerance`` of the real controller.
        downscale_stabilization_s: its ``--horizontal-pod-autoscaler-downscale-stabilization``
            in seconds (used when ``behavior`` is None or leaves the scale-down window unset).

    Limits: the real HPA sums milli-values (``Quantity.MilliValue``) where the tap sums floats,
    so a proposal can differ at a ``ceil`` boundary finer than 1/1000; history before the first
    recorded sync is unknown (the shadow seeds its history at the first sync, as the real HPA
    does at its first).

    Raises:
        ConfigError: bounds or behavior the embedded HPA refuses.

    Source: kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler
    (a failed read keeps ``status.desiredReplicas``: setCurrentReplicasAndMetricsInStatus, read in
    v1.36.3); docs/semantics.md §3.2-§3.3
    """
    hpa = HorizontalPodAutoscaler(spec.min_replicas, spec.max_replicas, behavior=spec.behavior,
                                  tolerance=tolerance, downscale_stabilization_s=downscale_stabilization_s)
    out: list[ShadowDecision] = []
    for sync in syncs:
        proposal = _proposal(spec, sync, tolerance)
        decision = hpa.decide_with_reason(sync.t_s, sync.spec_replicas, proposal)
        desired = decision.replicas
        if decision.reason == "FailedComputeMetricsReplicas":
            desired = out[-1].desired if out else sync.spec_replicas
        out.append(ShadowDecision(sync, spec.target, proposal, desired, decision.reason,
                                  decision.stabilization_reason, desired == sync.real_desired))
    return out


class ReadLike(Protocol):
    """What alignment needs of a :class:`~pytest_lagscale.kube.metric_reads.MetricRead`."""

    t_s: float
    metric_name: str
    label_selector: str
    total: float | None


class AlignedSyncs(list[SyncInput]):
    """The list of :class:`SyncInput` from :func:`align_syncs`, with ``dropped``: reads left
    out, by cause (``no_deployment_observation``, ``no_hpa_status``)."""

    def __init__(self, syncs: Sequence[SyncInput] = (), dropped: Mapping[str, int] | None = None):
        super().__init__(syncs)
        self.dropped: dict[str, int] = dict(dropped or {})


def _last_at_or_before(times: Sequence[float], t: float) -> int | None:
    i = bisect.bisect_right(times, t) - 1
    return i if i >= 0 else None


def align_syncs(reads: Sequence[ReadLike], status_series: Sequence[tuple[float, int, int]],
                hpa_series: Sequence[tuple[float, int]], *, sync_period_s: float,
                spec: HpaSpecView | None = None) -> AlignedSyncs:
    """One :class:`SyncInput` per metric read: what the HPA saw, and what it wrote.

    Args:
        reads: the tap's reads (any order); with ``spec``, only reads of its metric name and
            selector are kept (:meth:`HpaSpecView.reads_metric`), else all are taken as one HPA's.
        status_series: Deployment observations ``(t_s, spec_replicas, status_replicas)``.
        hpa_series: HPA observations ``(t_s, status.desiredReplicas)``.
        sync_period_s: the controller's ``--horizontal-pod-autoscaler-sync-period`` (> 0).

    All times are monotonic seconds of one clock (the tap's and the watchers').

    Rule, for read k at ``t_k``: ``spec_replicas``/``status_replicas`` are the last Deployment
    observation at or before ``t_k``; ``real_desired`` is the last HPA observation at or before
    ``min(t_{k+1}, t_k + 0.9 * sync_period_s)`` (``t_k + 0.9 * sync_period_s`` for the last
    read). The HPA reads the metric, decides and writes its status within milliseconds, and
    writes only when the status changed (updateStatusIfNeeded), so "the last observation" also
    covers a sync that changed nothing; the next read starts the next sync's window. A read with
    no Deployment observation or no HPA observation yet is dropped and counted in
    ``dropped``.

    Limits: a status write observed after the next read (a slow watch) is attributed to that
    next sync, so sync k compares with the previous value; one read per sync is assumed (one
    External metric, no client retries); reads are only as precise as the tap's clock.

    Raises:
        ValueError: ``sync_period_s`` <= 0.
    """
    if not sync_period_s > 0:
        raise ValueError(f"sync_period_s: {sync_period_s!r} must be > 0 seconds")
    mine = sorted((r for r in reads if spec is None or spec.reads_metric(r.metric_name, r.label_selector)),
                  key=lambda r: r.t_s)
    deployment = sorted(status_series, key=lambda o: o[0])
    hpa = sorted(hpa_series, key=lambda o: o[0])
    dep_times, hpa_times = [o[0] for o in deployment], [o[0] for o in hpa]
    out = AlignedSyncs(dropped={"no_deployment_observation": 0, "no_hpa_status": 0})
    for k, read in enumerate(mine):
        end = read.t_s + STATUS_WINDOW_FRACTION * sync_period_s
        if k + 1 < len(mine):
            end = min(end, mine[k + 1].t_s)
        d, h = _last_at_or_before(dep_times, read.t_s), _last_at_or_before(hpa_times, end)
        if d is None:
            out.dropped["no_deployment_observation"] += 1
            continue
        if h is None:
            out.dropped["no_hpa_status"] += 1
            continue
        _, spec_replicas, status_replicas = deployment[d]
        out.append(SyncInput(read.t_s, read.total, status_replicas, spec_replicas, hpa[h][1]))
    return out


@dataclass
class ConformanceReport:
    """How often the shadow agreed with the real HPA.

    Attributes:
        syncs: decisions compared.
        agreeing: decisions where shadow and real ``desiredReplicas`` are equal.
        differences: one dict per disagreeing sync, in order, with every input: ``t_s``,
            ``metric_total``, ``status_replicas``, ``spec_replicas``, ``target``,
            ``real_desired``, ``shadow_desired``, ``shadow_proposal``, ``reason``,
            ``stabilization_reason``.
        dropped: reads not compared, by cause (see :func:`align_syncs`).
    """

    syncs: int
    agreeing: int
    differences: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def agreement(self) -> float | None:
        """``agreeing / syncs`` in [0, 1]; None when nothing was compared."""
        return self.agreeing / self.syncs if self.syncs else None

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (the benchmark file's ``conformance`` entry)."""
        return {"syncs": self.syncs, "agreeing": self.agreeing, "agreement": self.agreement,
                "dropped": dict(self.dropped), "differences": [dict(d) for d in self.differences]}

    def summary(self) -> str:
        """One line: counts, ratio and the first difference."""
        ratio = "n/a" if self.agreement is None else f"{100 * self.agreement:.1f} %"
        line = (f"shadow HPA: {self.agreeing}/{self.syncs} syncs agree ({ratio}), "
                f"{len(self.differences)} differ, {sum(self.dropped.values())} dropped")
        if self.differences:
            d = self.differences[0]
            line += (f"; first at t_s={d['t_s']:.3f}: real {d['real_desired']}, shadow {d['shadow_desired']} "
                     f"({d['reason']}, metric {d['metric_total']}, replicas {d['spec_replicas']})")
        return line


def conformance(decisions: Sequence[ShadowDecision], *, dropped: Mapping[str, int] | None = None) -> ConformanceReport:
    """Count agreements and list every difference with its inputs (see :class:`ConformanceReport`)."""
    differences = [{
        "t_s": d.sync.t_s, "metric_total": d.sync.metric_total, "status_replicas": d.sync.status_replicas,
        "spec_replicas": d.sync.spec_replicas, "target": d.target, "real_desired": d.sync.real_desired,
        "shadow_desired": d.desired, "shadow_proposal": d.proposal, "reason": d.reason,
        "stabilization_reason": d.stabilization_reason,
    } for d in decisions if not d.agrees]
    return ConformanceReport(len(decisions), len(decisions) - len(differences), differences, dict(dropped or {}))
