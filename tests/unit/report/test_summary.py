from __future__ import annotations

from pathlib import Path

from pytest_lagscale.analyze import METRICS, RunSpec, measure
from pytest_lagscale.report.benchjson import Assertion
from pytest_lagscale.report.summary import (measurements_table, summary_markdown,
                                            write_summary)
from tests.unit.analyze import synth

SPEC = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
               capacity_per_s=100.0)


def _measurements():
    table, log = synth.scale_out_run()
    return measure(table, log, SPEC)


def test_summary_markdown_lists_metrics_steps_and_assertions() -> None:
    text = summary_markdown(_measurements(), [Assertion("reaction_time_s < 90", 90.0, 19.0,
                                                        "pass")])
    assert text.startswith("# lagscale run\n\n## Measurements\n")
    assert "| reaction_time_s | 19 | s | lower |" in text
    assert "| drain_monotone | 1 | bool | higher |" in text
    assert ("| t (s) | replicas | direction | reversal | rebalance at (s) | dip | reason "
            "| recovery (s) | cost (records) | rebalance duration (s) | partitions stopped |"
            ) in text
    # anchored at the new members' assignment (38 s); no store, so no dip
    assert "| 30 | 1 -> 3 | up | no | 38 | - | no store | - | - | 0 | 0 |" in text
    assert "| reaction_time_s < 90 | 90 | 19 | pass |" in text
    assert "| r2 | 10.5 | 5.5 | 5 | - | 2.5 | 1 | yes |" in text
    # metrics, steps, scale-out replicas (header + r1, r2), assertions
    assert sum(line.startswith("| ") for line in text.splitlines()) == \
        len(METRICS) + 1 + 2 + 3 + 2


def test_summary_markdown_scale_out_section() -> None:
    text = summary_markdown(_measurements())
    section = text.split("## Scale-out\n\n")[1]
    assert section.startswith(
        "Burst: 2 replicas, 5 -> 19.5 s after the spike start; load average (1m) max -, "
        "mean -; CPU busy -; cold start median 5 s, max 5 s.\n\n"
        "| replica | started (s) | actuation (s) | cold start (s) | engine startup (s) "
        "| join (s) | first fetch (s) | burst |\n")
    table, _ = synth.scale_out_run()
    no_spike = summary_markdown(measure(table, synth.events(), SPEC))
    assert "## Scale-out\n\nNoSpikeStart: no 'spike_start' event" in no_spike


def test_summary_markdown_notes_incomplete_reaction() -> None:
    table, _ = synth.scale_out_run()
    m = measure(table, synth.events(), SPEC)
    text = summary_markdown(m)
    assert "Reaction incomplete: NoSpikeStart" in text
    assert "| reaction_time_s | - | s | lower |" in text


def test_write_summary(tmp_path: Path) -> None:
    path = write_summary(tmp_path / "run" / "summary.md", _measurements(), title="exp 2")
    assert path.read_text().startswith("# exp 2\n")


def test_measurements_table() -> None:
    from rich.console import Console

    console = Console(width=100, record=True)
    console.print(measurements_table(_measurements()))
    text = console.export_text()
    assert "replica_seconds_ratio" in text and "1.45" in text


def test_summary_markdown_steps_with_a_store_and_skew() -> None:
    table, log = synth.scale_out_run()
    store = synth.store(synth.batches("r0", 0.0, 120.0, 0.1, 10),
                        synth.batches("r1", 39.0, 90.0, 0.1, 10, partition=1))
    spec = RunSpec(lag_threshold_records=1000, min_replicas=1, max_replicas=4, partitions=3,
                   capacity_per_s=100.0, partition_counts=(40, 30, 30))
    text = summary_markdown(measure(table, log, spec, store))
    assert ("Dip, recovery and cost over the 10 s after each step's rebalance (rate window "
            "2 s).") in text
    assert "| 30 | 1 -> 3 | up | no | 38 | 0.0% | - | 0 | 0 | 0 | 0 |" in text
    section = text.split("## Ideal drain and oracle\n\n")[1].split("\n\n")[0]
    assert section == (
        "Shares (manifest): hottest partition 0 carries 40.0% of the input (P = 3).\n"
        # the store's partition 0 holds 50 records produced but not yet written at 60 s
        "Ideal drain 15 s: slowest partition 0 0.8333 s, group 15 s; per-partition backlog "
        "exact from the store.\n"
        "Oracle capped at full replicas for 40 s: the hottest partition's input exceeded one "
        "replica's capacity, so no replica count could keep up.")


def test_summary_markdown_renders_the_experiment_records() -> None:
    experiment = {"signal": {"peak_ratio": 2.5834, "policy": {"cpu": {"max_desired": 1}},
                             "labels": ["cpu", "lag"], "note": "a|b"},
                  "ceiling": {"curve": [{"replicas": 1, "records_per_s": 388.2},
                                        {"replicas": 2, "records_per_s": 738.0, "extra": True}]},
                  "engine_reason": "16 JVMs do not fit"}
    text = summary_markdown(_measurements(), experiment=experiment)
    section = text[text.index("## Experiment\n"):]
    assert "### signal\n\n| figure | value |\n|---|---:|\n" in section
    assert "| peak_ratio | 2.583 |" in section
    assert "| policy.cpu.max_desired | 1 |" in section
    assert "| labels | cpu, lag |" in section
    assert "| note | a\\|b |" in section
    assert ("curve:\n\n| replicas | records_per_s | extra |\n|---|---|---|\n"
            "| 1 | 388.2 | None |\n| 2 | 738 | True |\n") in section
    assert "### engine_reason\n\n| figure | value |\n|---|---:|\n| engine_reason | 16 JVMs" in section
    assert "## Experiment" not in summary_markdown(_measurements())
