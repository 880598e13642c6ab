"""The harness machine's load, exported under node_exporter's own metric names.

On a 2-core CI machine a scale-out starts several JVMs at once and every replica's cold start
stretches with the machine's load; the run records that load on the same timeline as the lag.
:class:`MachineCollector` is a prometheus_client custom collector (read on each scrape, like
:class:`~.lag_exporter.LagCollector`) using psutil:

* ``node_load1``, ``node_load5``, ``node_load15`` (gauges) — ``psutil.getloadavg()``: runnable
  plus uninterruptible tasks averaged over 1, 5 and 15 minutes, as node_exporter's loadavg
  collector;
* ``node_cpu_seconds_total{cpu, mode}`` (counter) — ``psutil.cpu_times(percpu=True)``, one
  series per CPU and mode, seconds, as node_exporter's cpu collector. Modes are
  node_exporter's: ``user, nice, system, idle, iowait, irq, softirq, steal`` (those the
  platform reports). Linux's ``guest``/``guest_nice`` are already counted in ``user``/``nice``
  and node_exporter exports them under another name, so they are left out here.

Per-CPU labels (as node_exporter) rather than one series summed over CPUs, so that existing
Grafana boards work. The recorder's busy fraction needs no CPU count either way: it is
``1 - sum(irate(idle)) / sum(irate(all modes))`` — the idle share of all CPU time the machine
had in the window (see :func:`pytest_lagscale.observe.recorder.default_queries`).

Source: prometheus/node_exporter collector/loadavg.go and collector/cpu_linux.go (v1.8,
metric names, help texts and modes).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

#: node_exporter's ``mode`` label values, in its order.
CPU_MODES: tuple[str, ...] = ("user", "nice", "system", "idle", "iowait", "irq", "softirq",
                              "steal")


def _psutil_load() -> Sequence[float]:
    import psutil

    return psutil.getloadavg()


def _psutil_cpu_times() -> Sequence[Any]:
    import psutil

    return psutil.cpu_times(percpu=True)


class MachineCollector(Collector):
    """Collects ``node_load1/5/15`` and ``node_cpu_seconds_total`` of this machine.

    Args:
        load: returns the 1, 5 and 15 minute load averages (tasks); default
            ``psutil.getloadavg``.
        cpu_times: returns one named tuple of cumulative seconds per CPU (fields named by
            mode); default ``psutil.cpu_times(percpu=True)``.

    Example:
        >>> from prometheus_client import CollectorRegistry, generate_latest
        >>> registry = CollectorRegistry()
        >>> registry.register(MachineCollector())
        >>> b"node_load1 " in generate_latest(registry)
        True
    """

    def __init__(self, load: Callable[[], Sequence[float]] = _psutil_load,
                 cpu_times: Callable[[], Sequence[Any]] = _psutil_cpu_times):
        self._load, self._cpu_times = load, cpu_times
        self._last: dict[tuple[int, str], float] = {}

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        yield from load_families(self._load())
        yield cpu_family(self._monotonic(self._cpu_times()))

    def _monotonic(self, per_cpu: Sequence[Any]) -> list[dict[str, float]]:
        """Per-CPU ``{mode: seconds}``, never below the value exported before.

        Quirk: Linux's per-CPU idle and iowait times can step backwards (tickless idle
        accounting); Prometheus would read the drop as a counter reset and ``irate`` would
        jump by the whole counter. node_exporter keeps the previous value in that case
        (collector/cpu_linux.go ``updateCPUStats``); so does this collector
        (test id ``test_cpu_counters_never_step_backwards``).
        """
        out = []
        for index, times in enumerate(per_cpu):
            modes = {}
            for mode in CPU_MODES:
                value = getattr(times, mode, None)
                if value is None:
                    continue
                value = max(float(value), self._last.get((index, mode), 0.0))
                self._last[(index, mode)] = modes[mode] = value
            out.append(modes)
        return out


def load_families(load: Sequence[float]) -> list[GaugeMetricFamily]:
    """``node_load1``, ``node_load5``, ``node_load15`` from ``(1 min, 5 min, 15 min)`` load
    averages (tasks, floats)."""
    families = []
    for minutes, value in zip((1, 5, 15), load):
        family = GaugeMetricFamily(f"node_load{minutes}", f"{minutes}m load average.")
        family.add_metric([], float(value))
        families.append(family)
    return families


def cpu_family(per_cpu: Sequence[Mapping[str, float]]) -> CounterMetricFamily:
    """``node_cpu_seconds_total{cpu, mode}`` from per-CPU cumulative times.

    Args:
        per_cpu: one ``{mode: seconds}`` per CPU (its index is the ``cpu`` label); modes of
            :data:`CPU_MODES` it lacks are not exported, other keys are ignored.
    """
    family = CounterMetricFamily("node_cpu_seconds", "Seconds the CPUs spent in each mode.",
                                 labels=["cpu", "mode"])
    for index, times in enumerate(per_cpu):
        for mode in CPU_MODES:
            if mode in times:
                family.add_metric([str(index), mode], float(times[mode]))
    return family


class BusyRatioCollector(Collector):
    """Serves ``spark_connect_server_busy_ratio``: a shared Spark Connect server's CPU seconds
    per wall second over the cores available (1.0 = every core busy), sampled at each scrape.

    Args:
        sample: returns the ratio since the previous call, or None (no sample: no series).
    """

    def __init__(self, sample: Callable[[], float | None]):
        self._sample = sample

    def collect(self) -> Iterator[GaugeMetricFamily]:
        value = self._sample()
        family = GaugeMetricFamily(
            "spark_connect_server_busy_ratio", "CPU seconds per second of the run's Spark "
            "Connect server over the cores available (1.0 = every core busy)")
        if value is not None:
            family.add_metric([], float(value))
        yield family
