"""LocalAutoscaler runs the lag-per-slot halving policy (lag-per-slot-ci.yaml) on a FakeClock:
lag is read once per evaluation (every pollingInterval, not every tick), each evaluation is a
``lag_per_slot`` event, each change a ``decision`` event and a scale of the Deployment."""

from __future__ import annotations

from pathlib import Path

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.platform.autoscaler import LocalAutoscaler

from .test_autoscaler_loop import CountingDeployment, ScriptedLag

K8S = Path(__file__).resolve().parents[3] / "k8s"


def test_lag_per_slot_scales_out_then_halves_through_the_autoscaler(tmp_path) -> None:
    """Lag 40,000 from 1 s to 40 s, then 0; ticks every 0.25 s over [0, 100] s. Evaluations at
    0, 2, 4, ... s: 2 -> 8 at 2 s (ceil(40,000 / 3,333) = 13, capped), 8 -> 4 at 40 s (the first
    evaluation of low lag, past the cooldown of 2 s), 4 -> 2 at 70 s (the cooldown after 40 s)."""
    clock, lag, deployment = FakeClock(0.0), ScriptedLag(), CountingDeployment(desired_replicas=2)
    policy = build_policy(load_policy_manifest(K8S / "lag-per-slot-ci.yaml"))
    scaler = LocalAutoscaler(policy, deployment, lag, tmp_path / "c.jsonl", clock=clock)
    while clock.now() <= 100.0:
        lag.total = 40_000 if 1.0 <= clock.now() < 40.0 else 0
        scaler.step(clock.now())
        clock.advance(0.25)
    scaler.stop()
    assert lag.reads == 51 and [d.now_s for d in scaler.decisions] == [2.0 * i for i in range(51)]
    assert deployment.scaled_to == [8, 4, 2]
    events = list(read_events(tmp_path / "c.jsonl"))
    assert [(e["via"], e["current_replicas"], e["desired_replicas"]) for e in events
            if e["event"] == "decision"] == [("lag_per_slot", 2, 8), ("lag_per_slot", 8, 4), ("lag_per_slot", 4, 2)]
    changed = [(e["now_s"], e["reason"]) for e in events
               if e["event"] == "lag_per_slot" and e["replicas_after"] != e["replicas_before"]]
    assert changed == [(2.0, "ScaleUpCappedAtMax"), (40.0, "ScaleDownHalved"), (70.0, "ScaleDownHalved")]
    assert scaler.has_decided()


class StaleTotal:
    """A total-lag source whose datapoint is ``age_s`` old (a CloudWatch period, say)."""

    name = "cloudwatch"
    per_partition = False

    def __init__(self, total: float | None, age_s: float) -> None:
        self.total, self.age_s, self.fail = total, age_s, False

    def total_lag(self):
        from datetime import datetime, timedelta, timezone

        from pytest_lagscale.sources.base import LagSourceError, TotalLag

        if self.fail:
            raise LagSourceError("cloudwatch lag source: endpoint down")
        now = datetime(2026, 11, 26, 4, 0, tzinfo=timezone.utc)
        return TotalLag(self.total, now - timedelta(seconds=self.age_s), now, self.name)


def test_lag_per_slot_decides_on_a_total_lag_source_and_logs_its_staleness(tmp_path) -> None:
    """With a total-lag source the broker's offsets are not read; the decision and its step carry
    the source, the value, datapoint_utc and staleness_s; a failed read holds (LagUnavailable)."""
    clock, lag, deployment = FakeClock(0.0), ScriptedLag(), CountingDeployment(desired_replicas=2)
    source = StaleTotal(40_000.0, 12.5)
    policy = build_policy(load_policy_manifest(K8S / "lag-per-slot-ci.yaml"))
    scaler = LocalAutoscaler(policy, deployment, lag, tmp_path / "c.jsonl", clock=clock, total_lag_source=source)
    scaler.step(0.0)
    source.fail = True
    scaler.step(2.0)
    scaler.stop()
    assert lag.reads == 0 and deployment.scaled_to == [8]
    events = list(read_events(tmp_path / "c.jsonl"))
    decision = next(e for e in events if e["event"] == "decision")
    assert decision["signal"] == {"source": "cloudwatch", "lag_records": 40_000.0,
                                  "datapoint_utc": "2026-11-26T03:59:47.500000+00:00", "staleness_s": 12.5}
    steps = [e for e in events if e["event"] == "lag_per_slot"]
    assert steps[0]["total_lag_records"] == 40_000 and steps[0]["signal"]["staleness_s"] == 12.5
    assert steps[1]["reason"] == "LagUnavailable" and "signal" not in steps[1]
    failed = next(e for e in events if e["event"] == "lag_read_failed")
    assert failed["source"] == "cloudwatch" and "endpoint down" in failed["error"]


def test_broker_offsets_are_a_signal_dated_at_the_read(tmp_path) -> None:
    clock, lag, deployment = FakeClock(0.0), ScriptedLag(), CountingDeployment(desired_replicas=2)
    lag.total = 40_000
    policy = build_policy(load_policy_manifest(K8S / "lag-per-slot-ci.yaml"))
    scaler = LocalAutoscaler(policy, deployment, lag, tmp_path / "c.jsonl", clock=clock)
    scaler.step(0.0)
    scaler.stop()
    step = next(e for e in read_events(tmp_path / "c.jsonl") if e["event"] == "lag_per_slot")
    assert step["signal"]["source"] == "broker" and step["signal"]["staleness_s"] == 0.0
    assert step["signal"]["lag_records"] == 40_000.0
