"""The replicas' CPU usage in the twin, as the metrics server reports it to a CPU HPA.

The twin's stand-in for :class:`pytest_lagscale.platform.cpu.CpuSampler`: a replica's CPU
seconds are ``idle_millicores / 1000`` per second it exists plus ``cpu_s_per_1000_records`` per
1,000 records it processed (the calibration's ``cpu`` section, fitted on a real run's
``replica_cpu`` events; docs/twin.md). :meth:`TwinCpu.sample` returns millicores per replica
since that replica's previous sample (nothing on first sight), as the real sampler does, so the
autoscaler's step sees the same shape of reading on the twin's clock as on a real run.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..platform.cpu import millicores_since


class TwinCpu:
    """Per-replica CPU usage of a :class:`~.world.World`'s replicas.

    Args:
        idle_millicores: a live replica's usage with nothing to process, millicores.
        cpu_s_per_1000_records: CPU seconds per 1,000 records processed.
    """

    def __init__(self, idle_millicores: float, cpu_s_per_1000_records: float):
        self.idle_millicores = idle_millicores
        self.cpu_s_per_1000_records = cpu_s_per_1000_records
        self._last: dict[str, tuple[float, float]] = {}

    def cpu_s(self, replica: Any, now_s: float) -> float:
        """CPU seconds ``replica`` (a :class:`~.world.Replica`) used from its start to ``now_s``."""
        alive_s = max(0.0, now_s - replica.started_s)
        return (self.idle_millicores / 1000.0 * alive_s
                + self.cpu_s_per_1000_records * replica.records_done / 1000.0)

    def sample(self, replicas: Sequence[Any], now_s: float) -> dict[str, float]:
        """``{replica_id: millicores}`` since each replica's previous sample, for replicas seen
        before; replicas no longer listed are forgotten."""
        used_s = {replica.rid: self.cpu_s(replica, now_s) for replica in replicas}
        return millicores_since(self._last, used_s, now_s)


__all__ = ["TwinCpu"]
