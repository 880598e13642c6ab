"""Delivery tracking -> manifest JSON, and the produce report's JSON and table (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from rich.console import Console

from pytest_lagscale.load.manifest import DeliveryTracker, Manifest
from pytest_lagscale.load.report import ProduceReport, StepResult, render_table


@dataclass
class FakeMessage:
    p: int
    o: int

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return self.o


@dataclass
class FakeError:
    text: str

    def str(self) -> str:  # noqa: A003 - confluent_kafka.KafkaError's method name
        return self.text


def test_tracker_records_first_last_and_count_per_partition(tmp_path) -> None:
    tracker = DeliveryTracker(3)
    for p, o in [(0, 0), (0, 1), (2, 5), (0, 2), (2, 6)]:
        tracker.callback(None, FakeMessage(p, o))
    tracker.callback(FakeError("Local: Message timed out"), None)
    tracker.callback(None, FakeMessage(7, 0))
    m = tracker.manifest(topic="events", seed=4, profile="x", created_at="2026-01-01T00:00:00Z")
    assert [(p.partition, p.first_offset, p.last_offset, p.count) for p in m.per_partition] == [
        (0, 0, 2, 3), (1, None, None, 0), (2, 5, 6, 2)]
    assert (m.total_acked, m.total_failed) == (5, 2)
    assert m.errors == {"Local: Message timed out": 1, "unexpected partition 7": 1}
    path = m.write_json(tmp_path / "run" / "manifest.json")
    data = json.loads(path.read_text())
    assert list(data)[:4] == ["schema_version", "topic", "partitions", "seed"]
    assert data["per_partition"][1] == {"partition": 1, "first_offset": None,
                                        "last_offset": None, "count": 0}
    assert Manifest.read_json(path) == m and m.counts() == {0: 3, 1: 0, 2: 2}


def _report(kept_up: bool = True, steps: int = 2) -> ProduceReport:
    rows = tuple(StepResult(f"s{i}", i * 10.0, i * 10.0 + 10, 100.0, 1000, 1000, 10.0,
                            100.0 if kept_up else 80.0, 0.004, kept_up) for i in range(steps))
    return ProduceReport("spike-ci", "events", 8, 7, "2026-01-01T00:00:00Z", 20.0, 0.1, 2000,
                         2000, 2000, 0, 0.004, kept_up, rows, {"acks": "all"})


def test_report_is_json_able_with_schema_version(tmp_path) -> None:
    data = json.loads(_report().write_json(tmp_path / "report.json").read_text())
    assert data["schema_version"] == 1 and data["kept_up"] is True
    assert data["steps"][1]["achieved_rate_per_s"] == 100.0 and data["settings"] == {"acks": "all"}


def test_table_shows_requested_vs_achieved_and_the_verdict() -> None:
    console = Console(width=100, record=True)
    console.print(render_table(_report(kept_up=False, steps=45), max_rows=40))
    text = console.export_text()
    assert "spike-ci: events x 8 partitions, seed 7" in text
    assert "s0 " in text and "80.0" in text and "NO" in text
    assert "... 5 more" in text and "kept up: NO" in text
