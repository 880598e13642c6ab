"""What a produce run did: per-step requested vs achieved rates, as a dataclass, JSON and a table.

A step's **achieved rate** is the records it sent divided by its **duration**: from the step's
scheduled start to its scheduled end, or to the send of its last record if that came later.
A producer that keeps up therefore reports the requested rate; one that falls behind stretches
the duration and reports less. A step **kept up** when it sent every record, achieved at least
(1 - ``rate_tolerance``) of the requested rate and no record was sent more than
``delay_tolerance_s`` seconds after its scheduled time (the **send delay**).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class StepResult:
    """One schedule step as produced.

    Attributes:
        label: the step's label.
        start_s: scheduled start, seconds since the run's start.
        end_s: scheduled end, seconds since the run's start.
        requested_rate_per_s: scheduled rate, records/s.
        requested_records: records the schedule puts in this step.
        sent_records: records handed to the Kafka client.
        duration_s: seconds from the scheduled start to the later of the scheduled end and the
            last send.
        achieved_rate_per_s: ``sent_records / duration_s``, records/s.
        max_send_delay_s: largest (actual - scheduled) send time of its records, seconds.
        kept_up: see the module docstring.
    """

    label: str
    start_s: float
    end_s: float
    requested_rate_per_s: float
    requested_records: int
    sent_records: int
    duration_s: float
    achieved_rate_per_s: float
    max_send_delay_s: float
    kept_up: bool


@dataclass(frozen=True)
class ProduceReport:
    """A whole produce run.

    Attributes:
        profile: profile name.
        topic: Kafka topic.
        partitions: partition count.
        seed: the profile's seed.
        started_at: UTC ISO-8601 time of the first scheduled send.
        elapsed_s: seconds from the start to the last send (pacing only, no flush).
        flush_s: seconds the final flush (waiting for acknowledgements) took.
        requested_records: records in the schedule.
        sent_records: records handed to the client.
        acked_records: records the broker acknowledged.
        failed_records: records whose delivery failed.
        max_send_delay_s: largest send delay of the run, seconds.
        kept_up: every step kept up and no delivery failed.
        steps: one result per schedule step, in order.
        settings: producer configuration used (librdkafka keys).
        interrupted: the run was stopped before the schedule ended.
    """

    profile: str
    topic: str
    partitions: int
    seed: int
    started_at: str
    elapsed_s: float
    flush_s: float
    requested_records: int
    sent_records: int
    acked_records: int
    failed_records: int
    max_send_delay_s: float
    kept_up: bool
    steps: tuple[StepResult, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    interrupted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-able mapping (``schema_version`` first, steps as a list of mappings)."""
        return {"schema_version": SCHEMA_VERSION, **asdict(self),
                "steps": [asdict(s) for s in self.steps], "settings": dict(self.settings)}

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` as indented JSON to ``path``; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path


def render_table(report: ProduceReport, max_rows: int = 40) -> Any:
    """A ``rich.table.Table`` of the steps: requested vs achieved rate, records, delay, kept up.

    Args:
        report: the run.
        max_rows: steps beyond this many are summarised in one trailing row.
    """
    from rich.table import Table

    table = Table(title=f"{report.profile}: {report.topic} x {report.partitions} partitions, "
                        f"seed {report.seed}")
    for name in ("step", "start s", "end s", "req/s", "achieved/s", "records", "delay ms",
                 "ok"):
        table.add_column(name, justify="left" if name == "step" else "right",
                         no_wrap=name == "step")
    for s in report.steps[:max_rows]:
        table.add_row(s.label, f"{s.start_s:g}", f"{s.end_s:g}", f"{s.requested_rate_per_s:,.0f}",
                      f"{s.achieved_rate_per_s:,.1f}", f"{s.sent_records:,}",
                      f"{s.max_send_delay_s * 1000:,.1f}", _verdict(s.kept_up))
    if len(report.steps) > max_rows:
        rest = report.steps[max_rows:]
        table.add_row(f"... {len(rest)} more", "", "", "", "", f"{sum(s.sent_records for s in rest):,}",
                      f"{max(s.max_send_delay_s for s in rest) * 1000:,.1f}",
                      _verdict(all(s.kept_up for s in rest)))
    table.caption = (f"req/s: requested rate; delay ms: max send delay; ok: kept up. "
                     f"Sent {report.sent_records:,} of {report.requested_records:,}, acked "
                     f"{report.acked_records:,}, failed {report.failed_records:,}; max send delay "
                     f"{report.max_send_delay_s * 1000:,.1f} ms; kept up: "
                     f"{'yes' if report.kept_up else 'NO'}")
    return table


def _verdict(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[bold red]NO[/bold red]"
