"""The replicas' CPU usage as a metrics server reports it to a CPU HPA: millicores per replica
from the CPU seconds of each replica's process tree (the replica and its JVM), via psutil.

The local platform's stand-in for metrics-server's ``resource`` metrics (Kubernetes
``metrics.k8s.io`` PodMetrics, averaged over the scrape window): the autoscaler samples it at
each due step and feeds a CPU trigger's utilization (requests from the Deployment).
"""

from __future__ import annotations

from typing import Any, Sequence


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

        out: dict[str, float] = {}
        seen = set()
        for r in replicas:
            seen.add(r.replica_id)
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
            prev = self._last.get(r.replica_id)
            self._last[r.replica_id] = (now_s, cpu_s)
            if prev is not None and now_s > prev[0]:
                out[r.replica_id] = max(0.0, (cpu_s - prev[1]) / (now_s - prev[0]) * 1000.0)
        for gone in set(self._last) - seen:
            del self._last[gone]
        return out
