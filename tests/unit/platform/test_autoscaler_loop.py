"""LocalAutoscaler's loop on a FakeClock: step scheduling, apply, event log, replayability.

The deployment here is an in-memory stand-in with LocalDeployment's counting surface (no
processes): this tests the runner's own scheduling and bookkeeping only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.config.scaledobject import load_scaled_object
from pytest_lagscale.control.hpa import HorizontalPodAutoscaler
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.platform.autoscaler import LocalAutoscaler


@dataclass
class CountingDeployment:
    """A Platform whose replicas become ready the moment they are asked for."""

    desired_replicas: int = 1
    scaled_to: list[int] = field(default_factory=list)

    @property
    def current_replicas(self) -> int:
        return self.desired_replicas

    @property
    def ready_replicas(self) -> int:
        return self.desired_replicas

    def start(self) -> "CountingDeployment":
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        pass

    def replicas(self) -> list:
        return []

    def metrics_targets(self) -> list[str]:
        return []

    def wait_ready(self, n: int, within_s: float) -> float:
        return 0.0

    def wait_terminated(self, within_s: float) -> None:
        pass

    def kill_replica(self, replica_id: str, signum: int) -> None:
        raise AssertionError("no replica to kill in a counting deployment")

    def scale(self, n: int) -> None:
        self.scaled_to.append(n)
        self.desired_replicas = n


class ScriptedLag:
    """Total lag set by the test, spread evenly over 8 partitions."""

    name = "scripted"

    def __init__(self) -> None:
        self.total = 0
        self.fail = False
        self.reads = 0

    def read(self) -> dict[int, tuple[int, int | None]]:
        self.reads += 1
        if self.fail:
            raise RuntimeError("broker unreachable")
        per = self.total // 8
        return {p: (1000, 1000 + per) for p in range(8)}


def _run(tmp_path, lag_schedule: list[tuple[float, int]], until_s: float):
    so = load_scaled_object("k8s/scaledobject-ci.yaml")
    clock = FakeClock(0.0)
    lag, deployment = ScriptedLag(), CountingDeployment()
    scaler = LocalAutoscaler(build_policy(so), deployment, lag,
                             tmp_path / "controller.events.jsonl", clock=clock)
    schedule = list(lag_schedule)
    while clock.now() <= until_s:
        while schedule and schedule[0][0] <= clock.now():
            lag.total = schedule.pop(0)[1]
        scaler.step(clock.now())
        clock.advance(0.5)
    return so, scaler, deployment


def test_step_in_lag_scales_out_then_back_to_min_replica_count(tmp_path) -> None:
    # lagThreshold 500 in the CI ScaledObject: 4000 lag -> 8 replicas wanted.
    so, scaler, deployment = _run(tmp_path, [(0, 0), (10, 4000), (40, 0)], until_s=150)
    assert max(deployment.scaled_to) == 8
    assert deployment.desired_replicas == so.min_replica_count
    # Scale-up obeyed the Pods 4 / 5 s policy: the first step from 1 went to at most 5.
    assert deployment.scaled_to[0] <= 5


def test_event_log_replays_to_the_same_hpa_decisions(tmp_path) -> None:
    so, scaler, _ = _run(tmp_path, [(0, 0), (10, 4000), (40, 0)], until_s=150)
    syncs = [e for e in read_events(tmp_path / "controller.events.jsonl")
             if e["event"] == "hpa_sync"]
    assert len(syncs) >= 40  # every 3 s over 150 s
    # Replay through the public API with the YAML-shaped behavior dict, as a user would.
    doc = yaml.safe_load(open("k8s/scaledobject-ci.yaml"))
    behavior = doc["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    replay = HorizontalPodAutoscaler(so.hpa_min_replicas, so.hpa_max_replicas, behavior,
                                     so.harness.hpa_tolerance,
                                     so.harness.hpa_downscale_stabilization_s)
    replayed = [replay.decide(e["now_s"], e["replicas_before"], e["proposal"]) for e in syncs]
    assert replayed == [e["replicas_after"] for e in syncs]


def test_every_scale_change_is_one_decision_event(tmp_path) -> None:
    _, _, deployment = _run(tmp_path, [(0, 0), (10, 4000), (40, 0)], until_s=150)
    decisions = [e for e in read_events(tmp_path / "controller.events.jsonl")
                 if e["event"] == "decision"]
    assert [e["desired_replicas"] for e in decisions] == deployment.scaled_to
    assert all(e["desired_replicas"] != e["current_replicas"] for e in decisions)
    assert decisions[0]["desired_replicas"] > decisions[0]["current_replicas"]


def test_lag_read_failures_are_trigger_errors_not_crashes(tmp_path) -> None:
    so = load_scaled_object("k8s/scaledobject-ci.yaml")
    lag, deployment = ScriptedLag(), CountingDeployment(desired_replicas=3)
    lag.fail = True
    scaler = LocalAutoscaler(build_policy(so), deployment, lag,
                             tmp_path / "c.jsonl", clock=FakeClock())
    decisions = scaler.step(0.0)
    assert decisions[0].is_error and decisions[0].replicas_after == 3
    assert [e["event"] for e in read_events(tmp_path / "c.jsonl")][:1] == ["lag_read_failed"]
