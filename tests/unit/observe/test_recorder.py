"""Recorder: range-query JSON -> timeline table; event-log merge order. No network."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pytest_lagscale.analyze.tables import TIMELINE_COLUMNS
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.contract.eventlog import EventLog, read_events
from pytest_lagscale.observe.recorder import (AGE_COLUMNS, CONSUMER_COLUMNS, MACHINE_COLUMNS, QUERY_COLUMNS, Recorder,
                                              default_queries, merge_event_logs,
                                              timeline_from_results)

START_S = 1_700_000_000.5  # run start, epoch seconds (deliberately not whole)


def _series(values: dict[int, str], **labels: str) -> dict:
    """One series as prometheus-api-client returns it: values keyed by grid step."""
    return {"metric": labels, "values": [[START_S + k, v] for k, v in sorted(values.items())]}


def _results(**overrides: list) -> dict[str, list]:
    results = {column: [] for column in QUERY_COLUMNS}
    results.update(overrides)
    return results


def test_gauges_take_the_bucket_start_and_are_forward_filled_after_a_gap() -> None:
    results = _results(total_lag=[_series({1: "100", 2: "250", 4: "90"})],
                       desired_replicas=[_series({0: "1", 3: "4"})])
    table = timeline_from_results(results, START_S, steps=5)
    assert table["t_s"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert table["total_lag"].tolist() == [0, 100, 250, 250, 90]  # before first: 0
    assert table["desired_replicas"].tolist() == [1, 1, 1, 4, 4]


def test_counts_are_zero_when_absent_and_series_are_summed() -> None:
    ready = [_series({0: "1", 1: "1", 2: "1"}, replica_id="replica-0001"),
             _series({1: "1", 2: "0"}, replica_id="replica-0002")]
    table = timeline_from_results(_results(ready_replicas=ready), START_S, steps=4)
    assert table["ready_replicas"].tolist() == [1, 2, 1, 0]
    assert table["current_replicas"].tolist() == [0, 0, 0, 0]


def test_rates_are_read_at_the_bucket_end_and_nan_counts_as_missing() -> None:
    consume = [_series({1: "10.5", 2: "NaN", 3: "30"})]
    produce = [_series({0: "999", 1: "20", 2: "20", 3: "20"})]
    table = timeline_from_results(_results(consume_rate_per_s=consume,
                                           produce_rate_per_s=produce), START_S, steps=3)
    assert table["consume_rate_per_s"].tolist() == [10.5, 0.0, 30.0]
    assert table["produce_rate_per_s"].tolist() == [20.0, 20.0, 20.0]


def test_timeline_has_the_documented_dtypes() -> None:
    table = timeline_from_results(_results(total_lag=[_series({0: "1.6"})]), START_S, steps=2)
    assert list(table.columns) == list(TIMELINE_COLUMNS) + list(MACHINE_COLUMNS) + list(CONSUMER_COLUMNS)
    assert {c: str(t) for c, t in table.dtypes.items()} == {
        **TIMELINE_COLUMNS, **dict.fromkeys(MACHINE_COLUMNS + CONSUMER_COLUMNS, "float64")}
    assert table["total_lag"].tolist() == [2, 2]


def test_missing_column_result_is_reported_by_name() -> None:
    results = _results()
    del results["ready_replicas"]
    with pytest.raises(ConfigError) as info:
        timeline_from_results(results, START_S, steps=1)
    assert str(info.value) == (
        "recorder: results for ['ready_replicas'] are missing; expected "
        f"{list(QUERY_COLUMNS)!r}; query every timeline column")


class FakeClient:
    """Records calls and answers like ``PrometheusConnect.custom_query_range``."""

    def __init__(self, answers: dict[str, list]):
        self.answers, self.calls = answers, []

    def custom_query_range(self, query, start_time, end_time, step, params=None):
        self.calls.append((query, step, params))
        return self.answers.get(query, [])


def test_recorder_queries_each_column_on_the_exact_grid_and_saves_parquet_and_csv(
        tmp_path: Path) -> None:
    queries = default_queries()
    client = FakeClient({queries["total_lag"]: [_series({0: "5", 1: "7", 2: "9"})]})
    recorder = Recorder("http://unused", client=client)
    table = recorder.record(tmp_path, start=START_S, end=START_S + 2.9)
    assert table["total_lag"].tolist() == [5, 7]  # the partial third bucket is dropped
    assert [c[0] for c in client.calls] == [queries[c] for c in QUERY_COLUMNS + AGE_COLUMNS]
    assert {(c[1], c[2]["start"], c[2]["end"]) for c in client.calls} == {
        ("1", "1700000000.500", "1700000002.500")}
    assert pd.read_parquet(tmp_path / "timeline.parquet").equals(table)
    assert (tmp_path / "timeline.csv").read_text().splitlines()[0] == ",".join(
        [*TIMELINE_COLUMNS, *MACHINE_COLUMNS, *CONSUMER_COLUMNS, *AGE_COLUMNS])


def test_default_queries_are_the_documented_promql() -> None:
    assert default_queries() == {
        "total_lag": 'sum(kafka_consumergroup_lag_sum{consumergroup="enrich"})',
        "desired_replicas": "sum(kube_horizontalpodautoscaler_status_desired_replicas)",
        "current_replicas": "sum(kube_horizontalpodautoscaler_status_current_replicas)",
        "ready_replicas": "sum(replica_ready)",
        "consume_rate_per_s": "sum(irate(records_processed_total[3s]))",
        "produce_rate_per_s": "sum(irate(kafka_topic_partition_current_offset[3s]))",
        "load_average_1m": "max(node_load1)",
        "cpu_busy_fraction": ('clamp(1 - sum(irate(node_cpu_seconds_total{mode="idle"}[3s])) '
                              "/ sum(irate(node_cpu_seconds_total[3s])), 0, 1)"),
        "spark_connect_busy_ratio": "max(spark_connect_server_busy_ratio)",
        "consumer_lag": "sum(consumer_records_lag)",
        "consumer_consume_rate_per_s": "sum(consume_rate)",
        "total_lag_age_s": ('time() - max(timestamp(kafka_consumergroup_lag_sum'
                            '{consumergroup="enrich"}))'),
        "desired_replicas_age_s": ("time() - max(timestamp("
                                   "kube_horizontalpodautoscaler_status_desired_replicas))"),
        "ready_replicas_age_s": "time() - max(timestamp(replica_ready))",
    }


def test_sample_ages_are_kept_as_recorded_and_missing_where_no_sample() -> None:
    """The lag forward-fills across a gap, so its age column is what tells the gap: the ages
    come through unfilled (NaN where Prometheus had no sample at all)."""
    results = _results(total_lag=[_series({0: "900"})])
    results["total_lag_age_s"] = [_series({0: "0.4", 1: "1.4", 2: "2.4"})]
    table = timeline_from_results(results, START_S, steps=4)
    assert table["total_lag"].tolist() == [900, 900, 900, 900]
    assert table["total_lag_age_s"].fillna(-1).tolist() == [0.4, 1.4, 2.4, -1]


def test_consumer_lag_is_summed_over_replicas_and_unknown_where_none_reported() -> None:
    """Two replicas' own lag (one series per owned partition) beside the broker's committed-offset
    lag; a step where no replica reported stays NaN (not 0, not the previous value)."""
    own = [_series({1: "300", 2: "120", 4: "0"}, instance="127.0.0.1:9001", partition="0"),
           _series({1: "50", 2: "30"}, instance="127.0.0.1:9002", partition="5")]
    table = timeline_from_results(_results(consumer_lag=own, total_lag=[_series({0: "900", 3: "400"})]),
                                  START_S, steps=5)
    assert table["consumer_lag"].fillna(-1).tolist() == [-1, 350.0, 150.0, -1, 0.0]
    assert table["total_lag"].tolist() == [900, 900, 900, 400, 400]


def test_unknown_query_column_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        Recorder("http://unused", {"lag": "x"}, client=FakeClient({}))
    assert str(info.value) == (f"recorder: query columns ['lag'] are unknown; allowed "
                               f"{list(QUERY_COLUMNS)!r}; rename them")


class StepClock:
    def __init__(self, times):
        self.times = list(times)

    def now(self) -> float:
        return self.times.pop(0)

    def sleep(self, s: float) -> None:  # pragma: no cover - unused
        pass


def test_merge_event_logs_orders_by_monotonic_time_and_writes_events_jsonl(
        tmp_path: Path) -> None:
    controller = EventLog(tmp_path / "controller.events.jsonl", "controller",
                          StepClock([1.0, 4.0]))
    platform = EventLog(tmp_path / "platform.events.jsonl", "platform", StepClock([2.0, 4.0]))
    replica = EventLog(tmp_path / "replicas" / "replica-0001.events.jsonl", "replica-0001",
                       StepClock([3.0]))
    controller.emit("decision", desired_replicas=2)
    platform.emit("replica_started", replica_id="replica-0001")
    replica.emit("first_record")
    controller.emit("decision", desired_replicas=3)
    platform.emit("replica_ready", replica_id="replica-0002")
    with open(platform.path, "a") as fh:
        fh.write('{"event": "torn')  # a crash mid-line is skipped
    paths = [platform.path, controller.path, replica.path, tmp_path / "events.jsonl"]
    merged = merge_event_logs(paths, tmp_path / "events.jsonl")
    assert [(r["monotonic_s"], r["source"], r["event"]) for r in merged] == [
        (1.0, "controller", "decision"),
        (2.0, "platform", "replica_started"),
        (3.0, "replica-0001", "first_record"),
        (4.0, "platform", "replica_ready"),  # tie: order of paths
        (4.0, "controller", "decision"),
    ]
    assert list(read_events(tmp_path / "events.jsonl")) == merged
    # merging again with the merged file among the inputs gives the same result
    assert merge_event_logs(paths) == merged


def test_merge_event_logs_rejects_a_record_without_monotonic_time(tmp_path: Path) -> None:
    log = tmp_path / "producer.events.jsonl"
    log.write_text(json.dumps({"event": "spike_start"}) + "\n")
    with pytest.raises(ConfigError) as info:
        merge_event_logs([log])
    assert str(info.value) == (f"{log}: record 1 {{'event': 'spike_start'}} lacks "
                               "'monotonic_s'; write events with EventLog.emit")


def test_observe_package_re_exports_lazily() -> None:
    import pytest_lagscale.observe as observe

    assert observe.merge_event_logs is merge_event_logs
    assert observe.PrometheusServer.__module__ == "pytest_lagscale.observe.prometheus"
    with pytest.raises(AttributeError):
        observe.Nothing  # noqa: B018
