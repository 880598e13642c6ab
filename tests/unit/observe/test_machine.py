"""Machine load: the node_exporter-named collector and the recorder's machine columns."""

from __future__ import annotations

import math
from collections import namedtuple

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pytest_lagscale.observe.machine import MachineCollector
from pytest_lagscale.observe.recorder import QUERY_COLUMNS, timeline_from_results

START_S = 1_700_000_000.5
Times = namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")


def _cpu(user: float, idle: float, **rest: float) -> Times:
    fields = dict.fromkeys(Times._fields, 0.0)
    fields.update(user=user, idle=idle, **rest)
    return Times(**fields)


def _families(collector: MachineCollector) -> dict[str, list]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {f.name: (f.type, f.samples) for f in text_string_to_metric_families(text)}


def test_collector_exports_node_exporter_names_types_and_values() -> None:
    collector = MachineCollector(load=lambda: (1.5, 0.75, 0.25),
                                 cpu_times=lambda: [_cpu(10.0, 90.0, guest=3.0),
                                                    _cpu(20.0, 80.0, iowait=2.0)])
    families = _families(collector)
    assert {name: kind for name, (kind, _) in families.items()} == {
        "node_load1": "gauge", "node_load5": "gauge", "node_load15": "gauge",
        "node_cpu_seconds": "counter"}
    assert families["node_load1"][1][0].value == 1.5
    cpu = {(s.labels["cpu"], s.labels["mode"]): s.value for s in families["node_cpu_seconds"][1]}
    assert {s.name for s in families["node_cpu_seconds"][1]} == {"node_cpu_seconds_total"}
    modes = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    assert set(cpu) == {(c, m) for c in ("0", "1") for m in modes}  # no guest modes
    assert cpu[("0", "idle")] == 90.0 and cpu[("1", "iowait")] == 2.0
    assert all(isinstance(v, float) for v in cpu.values())


def test_cpu_counters_never_step_backwards() -> None:
    readings = iter([[_cpu(10.0, 90.0)], [_cpu(11.0, 89.5)], [_cpu(12.0, 91.0)]])
    collector = MachineCollector(load=lambda: (0.0, 0.0, 0.0), cpu_times=lambda: next(readings))
    idle = []
    for _ in range(3):
        samples = _families(collector)["node_cpu_seconds"][1]
        idle.append(next(s.value for s in samples if s.labels["mode"] == "idle"))
    assert idle == [90.0, 90.0, 91.0]


def test_collector_reads_this_machine_by_default() -> None:
    families = _families(MachineCollector())
    assert families["node_load1"][1][0].value >= 0.0
    assert any(s.labels["mode"] == "idle" for s in families["node_cpu_seconds"][1])


def _series(values: dict[int, str]) -> dict:
    return {"metric": {}, "values": [[START_S + k, v] for k, v in sorted(values.items())]}


def test_machine_columns_from_a_range_result() -> None:
    results = {column: [] for column in QUERY_COLUMNS}
    results["load_average_1m"] = [_series({1: "2.5", 2: "3.25", 4: "1"})]
    results["cpu_busy_fraction"] = [_series({0: "0.9", 1: "0.5", 2: "NaN", 4: "1"})]
    table = timeline_from_results(results, START_S, steps=4)
    load = table["load_average_1m"].tolist()
    assert math.isnan(load[0]) and load[1:] == [2.5, 3.25, 3.25]  # unknown before, then held
    busy = table["cpu_busy_fraction"].tolist()  # read at the bucket end, missing = NaN
    assert busy[0] == 0.5 and math.isnan(busy[1]) and math.isnan(busy[2]) and busy[3] == 1.0
    assert str(table["load_average_1m"].dtype) == "float64"
    assert table["total_lag"].tolist() == [0, 0, 0, 0]  # the other columns as before
