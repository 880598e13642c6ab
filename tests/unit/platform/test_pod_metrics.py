"""The Pods metric's I/O: per-pod values from Prometheus as prometheus-adapter serves them, and
the LocalAutoscaler running the committed hpa-pods-lag-ci policy on them (FakeClock, no network)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.control.hpa import PodMetric
from pytest_lagscale.contract.errors import LagscaleError
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.platform.autoscaler import LocalAutoscaler
from pytest_lagscale.platform.pod_metrics import PodMetricsReading, PrometheusPodMetrics

from .test_autoscaler_loop import CountingDeployment, ScriptedLag
from .test_autoscaler_policies import policy, tick


@dataclass(frozen=True)
class Pod:
    replica_id: str
    metrics_port: int
    ready: bool = True


@dataclass
class FakePrometheus:
    """prometheus-api-client's ``custom_query``: the scripted instant-query result."""

    result: list = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    error: Exception | None = None

    def custom_query(self, query: str) -> list:
        self.queries.append(query)
        if self.error is not None:
            raise self.error
        return self.result


def series(port: int, value: str) -> dict:
    return {"metric": {"instance": f"127.0.0.1:{port}"}, "value": [1700000000.0, value]}


def test_values_are_summed_per_pod_and_mapped_to_the_live_replicas() -> None:
    prom = FakePrometheus([series(9001, "1234.5678"), series(9002, "0"), series(9009, "777"),
                           series(9003, "NaN")])
    reader = PrometheusPodMetrics("http://unused", client=prom)
    reading = reader.read("consumer_records_lag", [Pod("r-1", 9001), Pod("r-2", 9002), Pod("r-3", 9003),
                                                   Pod("r-4", 9004)])
    assert prom.queries == ['sum by (instance) (consumer_records_lag{job="replicas"})']
    # 9009: a terminating replica's last value, not a pod of the target any more; r-3 NaN and
    # r-4 no series: missing; values in milli-units truncated as the adapter does
    assert reading == PodMetricsReading(
        (PodMetric(1234567), PodMetric(0), PodMetric(None), PodMetric(None)),
        {"r-1": 1234.5678, "r-2": 0.0, "r-3": None, "r-4": None})


def test_a_failed_query_names_the_metric_and_the_query() -> None:
    reader = PrometheusPodMetrics("http://unused", client=FakePrometheus(error=ConnectionError("refused")))
    with pytest.raises(LagscaleError) as info:
        reader.read("consumer_records_lag", [Pod("r-1", 9001)])
    assert str(info.value) == ("pods metric 'consumer_records_lag': query 'sum by (instance) "
                               "(consumer_records_lag{job=\"replicas\"})' failed: refused; check that Prometheus runs")


@dataclass
class LagPods(CountingDeployment):
    """CountingDeployment whose replicas listen on ports 9000 + i."""

    def replicas(self) -> list:
        return [Pod(f"replica-{i:04d}", 9000 + i) for i in range(self.desired_replicas)]


def test_the_pods_lag_policy_scales_on_the_replicas_reported_lag(tmp_path) -> None:
    """hpa-pods-lag-ci.yaml (averageValue 2000, sync 3 s): one replica reporting 9,000 records
    -> 5 replicas; the broker's lag is never read; each read is a pod_metrics event."""
    clock, lag = FakeClock(0.0), ScriptedLag()
    prom = FakePrometheus([series(9000, "9000")])
    deployment = LagPods(desired_replicas=1)
    scaler = LocalAutoscaler(policy("hpa-pods-lag-ci.yaml"), deployment, lag, tmp_path / "c.jsonl",
                             clock=clock, pod_metrics=PrometheusPodMetrics("http://unused", client=prom))
    tick(scaler, clock, until_s=3.0)
    assert deployment.scaled_to == [5] and lag.reads == 0 and len(prom.queries) == 2
    events = list(read_events(tmp_path / "c.jsonl"))
    assert [e["values"] for e in events if e["event"] == "pod_metrics"] == [{"replica-0000": 9000.0}] * 2
    sync = next(e for e in events if e["event"] == "hpa_sync")
    assert (sync["proposal"], sync["triggers"][0]["metric_value"]) == (5, 9000.0)


def test_a_failed_read_is_an_event_and_no_change(tmp_path) -> None:
    clock = FakeClock(0.0)
    deployment = LagPods(desired_replicas=2)
    prom = FakePrometheus(error=ConnectionError("refused"))
    scaler = LocalAutoscaler(policy("hpa-pods-lag-ci.yaml"), deployment, None, tmp_path / "c.jsonl",
                             clock=clock, pod_metrics=PrometheusPodMetrics("http://unused", client=prom))
    tick(scaler, clock, until_s=3.0)
    events = list(read_events(tmp_path / "c.jsonl"))
    assert deployment.scaled_to == []
    assert [e["event"] for e in events] == ["pod_metrics_failed", "pod_metrics_failed", "hpa_sync"]
    assert events[-1]["reason"] == "FailedComputeMetricsReplicas"


def test_policies_without_a_pods_metric_never_query(tmp_path) -> None:
    clock, prom = FakeClock(0.0), FakePrometheus()
    scaler = LocalAutoscaler(policy("scaledobject-ci.yaml"), LagPods(desired_replicas=1), ScriptedLag(),
                             tmp_path / "c.jsonl", clock=clock,
                             pod_metrics=PrometheusPodMetrics("http://unused", client=prom))
    tick(scaler, clock, until_s=6.0)
    assert prom.queries == [] and scaler.decisions
