"""Experiment 11's findings section: the table by group type, the verdicts, and the
recommendation "share group past P" read from what the experiment recorded."""

from __future__ import annotations

from pathlib import Path

from pytest_lagscale.report.findings import RunDoc, experiments_of
from pytest_lagscale.report.findings_extract import EXTRACTORS


def _doc(share_change: float, unattributed: int) -> RunDoc:
    share = {"max_desired": 8, "throughput_at_p_per_s": 1600.0, "throughput_at_2p_per_s": 1600.0 * (1 + share_change),
             "throughput_change": share_change, "max_dip": 0.12, "lost_records": 0,
             "store": {"rows": 111_600, "redelivered_rows": 90, "duplicated_pairs": 40,
                       "duplicates_unattributed": unattributed}}
    consumer = {"max_desired": 8, "throughput_at_p_per_s": 1590.0, "throughput_at_2p_per_s": 1600.0,
                "throughput_change": 0.006, "max_dip": 0.3, "lost_records": 0, "store": {"rows": 111_500}}
    doc = {"run": {"label": "ceiling-ci-share"}, "experiment": {"share_groups": {
        "share": share, "consumer": consumer, "no_dips_claim": "does not hold here: the largest dip was 12.0%"}}}
    return RunDoc(Path("/nonexistent/benchmark.json"), doc)


def test_a_share_group_that_adds_throughput_lifts_the_ceiling_at_its_duplicate_cost() -> None:
    run = _doc(0.45, 0)
    assert experiments_of(run) == {11}
    extract = EXTRACTORS[11]([run])
    figures = {f.name: (f.value, f.verdict) for f in extract.figures}
    assert figures["consumer group: change P -> 2P (within 5%)"][1] == "pass"
    assert figures["share group: duplicates not explained by a redelivery (== 0)"] == ("0", "pass")
    assert extract.recommendation.setting == "share group past P"
    assert extract.recommendation.value.startswith("yes: +45")
    assert "90 redelivered rows and 40 duplicated records" in extract.recommendation.value
    assert [row[0] for row in extract.tables[0].rows] == ["consumer group", "share group"]


def test_no_gain_is_no_lift_and_an_unexplained_duplicate_fails() -> None:
    extract = EXTRACTORS[11]([_doc(0.02, 3)])
    figures = {f.name: (f.value, f.verdict) for f in extract.figures}
    assert figures["share group: duplicates not explained by a redelivery (== 0)"] == ("3", "fail")
    assert extract.recommendation.value.startswith("no: ")
