"""Replica CPU utilization as a CPU HPA sees it, from the controller's ``replica_cpu`` events.

The autoscaler samples each replica's process tree (the replica and its JVM) at every due step
and writes ``replica_cpu`` with ``millicores`` per replica and the Deployment's
``request_millicores``. Utilization is usage / request, in percent, as the HPA's replica
calculator computes it for a ``Resource`` metric with an ``Utilization`` target (kubernetes
pkg/controller/podautoscaler/replica_calculator.go, ``GetResourceReplicas``: the average over
pods of usage divided by the sum of requests).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .tables import events_named


@dataclass(frozen=True)
class ReplicaCpu:
    """One replica's CPU utilization over a window.

    Attributes:
        replica_id: the replica.
        samples: ``replica_cpu`` samples of it in the window.
        mean_percent, max_percent: usage / request x 100 (100 = the whole request).
        mean_millicores: mean usage, millicores (1000 = one core).
    """

    replica_id: str
    samples: int
    mean_percent: float
    max_percent: float
    mean_millicores: float


@dataclass(frozen=True)
class CpuUtilization:
    """Per-replica CPU utilization over ``[start_s, end_s)`` and the HPA's average.

    Attributes:
        start_s, end_s: the window, seconds since run start.
        request_millicores: the Deployment's CPU request per replica.
        replicas: one :class:`ReplicaCpu` per replica sampled in the window, by replica id.
        average_percent: per sample time, sum(usage) / sum(requests) x 100 (what the HPA
            compares with ``averageUtilization``): ``[(t_s, percent), ...]``.
        average_max_percent: the maximum of ``average_percent`` (None without samples).
    """

    start_s: float
    end_s: float
    request_millicores: float | None
    replicas: tuple[ReplicaCpu, ...] = ()
    average_percent: tuple[tuple[float, float], ...] = field(default=())

    @property
    def average_max_percent(self) -> float | None:
        """Highest HPA average utilization in the window, percent (None without samples)."""
        return max((p for _, p in self.average_percent), default=None)

    def to_dict(self) -> dict:
        """JSON-ready: the window, the request, per-replica figures and the average's max."""
        return {"start_s": self.start_s, "end_s": self.end_s,
                "request_millicores": self.request_millicores,
                "average_max_percent": _round(self.average_max_percent),
                "average_mean_percent": _round(float(np.mean([p for _, p in self.average_percent]))
                                               if self.average_percent else None),
                "replicas": [{"replica_id": r.replica_id, "samples": r.samples,
                              "mean_percent": _round(r.mean_percent),
                              "max_percent": _round(r.max_percent),
                              "mean_millicores": _round(r.mean_millicores)}
                             for r in self.replicas]}


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 1)


def cpu_utilization(events: pd.DataFrame, start_s: float, end_s: float) -> CpuUtilization:
    """Replica CPU utilization in ``[start_s, end_s)`` (seconds since run start).

    Args:
        events: the event table (:mod:`.tables`); its ``replica_cpu`` rows are read.
        start_s, end_s: the window.

    Returns:
        A :class:`CpuUtilization`; empty (no replicas, no averages) when no sample fell in the
        window or the Deployment has no CPU request.
    """
    rows = events_named(events, "replica_cpu")
    rows = rows[(rows["t_s"] >= start_s) & (rows["t_s"] < end_s)]
    per_replica: dict[str, list[float]] = {}
    average: list[tuple[float, float]] = []
    request = None
    for t_s, fields in zip(rows["t_s"], rows["fields"]):
        request = float(fields.get("request_millicores") or 0) or None
        usage = {str(k): float(v) for k, v in (fields.get("millicores") or {}).items()}
        if request is None or not usage:
            continue
        for replica_id, millicores in usage.items():
            per_replica.setdefault(replica_id, []).append(millicores)
        average.append((float(t_s), 100.0 * sum(usage.values()) / (request * len(usage))))
    replicas = tuple(
        ReplicaCpu(replica_id, len(values), 100.0 * float(np.mean(values)) / request,
                   100.0 * float(np.max(values)) / request, float(np.mean(values)))
        for replica_id, values in sorted(per_replica.items()) if request)
    return CpuUtilization(start_s, end_s, request, replicas, tuple(average))
