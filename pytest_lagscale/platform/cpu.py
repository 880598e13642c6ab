"""The replicas' CPU usage as a metrics server reports it to a CPU HPA: millicores per replica
from the CPU seconds of each replica's process tree (the replica and its JVM), via psutil.

The local platform's stand-in for metrics-server's ``resource`` metrics (Kubernetes
``metrics.k8s.io`` PodMetrics, averaged over the scrape window): the autoscaler samples it at
each due step and feeds a CPU trigger's utilization (requests from the Deployment).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


class CpuSampler:
    """CPU usage of each replica's process tree (the replica and its JVM), from psutil.

    Each :meth:`sample` returns millicores used per replica since the previous sample of that
    replica (1000 = one full core), which is what the metrics server reports to a CPU HPA.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}

    def sample(self, replicas: Sequence[Any], now_s: float) -> dict[str, float]:
        """``{replica_id: millicores}`` for replicas seen before (first sight returns nothing).

        Args:
            replicas: objects with ``replica_id`` and ``process.pid`` (the local platform's
                :class:`~.local.Replica`).
            now_s: the sampling time, seconds on any monotonic clock.
        """
        import psutil

        used_s: dict[str, float] = {}
        for r in replicas:
            try:
                root = psutil.Process(r.process.pid)
                procs = [root, *root.children(recursive=True)]
                cpu_s = 0.0
                for p in procs:
                    try:
                        t = p.cpu_times()
                        cpu_s += t.user + t.system
                    except psutil.Error:
                        continue
            except psutil.Error:
                continue
            used_s[r.replica_id] = cpu_s
        return millicores_since(self._last, used_s, now_s, seen={r.replica_id for r in replicas})


def millicores_since(last: dict[str, tuple[float, float]], used_s: Mapping[str, float],
                     now_s: float, seen: set[str] | None = None) -> dict[str, float]:
    """Millicores per replica since its previous reading, as the metrics server reports them.

    Args:
        last: ``{replica_id: (time_s, cpu_s)}`` of the previous readings; updated in place,
            replicas not in ``seen`` forgotten.
        used_s: CPU seconds used so far per replica (read now).
        now_s: the reading's time, seconds on the clock of ``last``.
        seen: the replicas that still exist (default: those of ``used_s``).

    Returns:
        ``{replica_id: millicores}`` for replicas read before (first sight returns nothing);
        1000 = one full core.
    """
    out: dict[str, float] = {}
    for rid, cpu_s in used_s.items():
        prev = last.get(rid)
        last[rid] = (now_s, cpu_s)
        if prev is not None and now_s > prev[0]:
            out[rid] = max(0.0, (cpu_s - prev[1]) / (now_s - prev[0]) * 1000.0)
    for gone in set(last) - (set(used_s) if seen is None else seen):
        del last[gone]
    return out

