"""LocalAutoscaler runs any ScalingPolicy: what it observes, set_policy, has_decided, and a CPU
HPA scaling the local stand-in Deployment (experiment 1's path), all on a FakeClock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.config.policy import load_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.platform.autoscaler import LocalAutoscaler, ScaledDeployment
from pytest_lagscale.sources import LagSource

from .test_autoscaler_loop import CountingDeployment, ScriptedLag

K8S = Path(__file__).resolve().parents[3] / "k8s"


@dataclass(frozen=True)
class Pod:
    replica_id: str
    ready: bool = True


@dataclass
class PodDeployment(CountingDeployment):
    """CountingDeployment whose replicas are listed (for the CPU sampler)."""

    def replicas(self) -> list:
        return [Pod(f"replica-{i:04d}") for i in range(self.desired_replicas)]


@dataclass
class ScriptedCpu:
    """Every replica uses ``millicores``; counts the samples taken."""

    millicores: float = 0.0
    samples: list[float] = field(default_factory=list)

    def sample(self, replicas: list, now_s: float) -> dict[str, float]:
        self.samples.append(now_s)
        return {r.replica_id: self.millicores for r in replicas}


def policy(name: str, **kwargs):
    return build_policy(load_policy_manifest(K8S / name), **kwargs)


def tick(scaler: LocalAutoscaler, clock: FakeClock, until_s: float, step_s: float = 0.5) -> None:
    while clock.now() <= until_s:
        scaler.step(clock.now())
        clock.advance(step_s)


def test_fakes_implement_the_protocols() -> None:
    assert isinstance(ScriptedLag(), LagSource)
    assert isinstance(CountingDeployment(), ScaledDeployment)


def test_lag_is_read_once_per_due_tick_and_cpu_recorded_with_it(tmp_path) -> None:
    """CI ScaledObject (poll 2 s, sync 3 s) over [0, 6] s in 0.5 s ticks: steps are due at
    0, 2, 3, 4 and 6 s (poll and sync together at 6 s share one observation). CPU is sampled
    with each observation (recorded as replica_cpu; the lag policy does not decide on it)."""
    clock, lag, cpu = FakeClock(0.0), ScriptedLag(), ScriptedCpu()
    scaler = LocalAutoscaler(policy("scaledobject-ci.yaml"), CountingDeployment(), lag, tmp_path / "c.jsonl",
                             clock=clock, cpu_request_millicores=500, cpu_sampler=cpu)
    tick(scaler, clock, until_s=6.0)
    assert lag.reads == 5 and cpu.samples == [0.0, 2.0, 3.0, 4.0, 6.0]
    assert [(d.event, d.now_s) for d in scaler.decisions] == [
        ("keda_poll", 0.0), ("keda_poll", 2.0), ("hpa_sync", 3.0), ("keda_poll", 4.0), ("keda_poll", 6.0),
        ("hpa_sync", 6.0)]


def test_cpu_hpa_scales_out_on_cpu_without_reading_lag(tmp_path) -> None:
    """hpa-cpu-ci.yaml (70 % of 500m, sync 3 s): replicas at 100 % of their request scale out;
    the lag source is never read, whatever the lag."""
    clock, lag, cpu = FakeClock(0.0), ScriptedLag(), ScriptedCpu(millicores=500.0)
    lag.total = 10**6
    deployment = PodDeployment(desired_replicas=1)
    scaler = LocalAutoscaler(policy("hpa-cpu-ci.yaml"), deployment, lag, tmp_path / "c.jsonl",
                             clock=clock, cpu_request_millicores=500, cpu_sampler=cpu)
    assert not scaler.has_decided()
    tick(scaler, clock, until_s=9.0)
    assert scaler.has_decided() and lag.reads == 0
    assert cpu.samples == [0.0, 3.0, 6.0, 9.0]
    assert deployment.scaled_to == [2, 3, 5]
    syncs = [e for e in read_events(tmp_path / "c.jsonl") if e["event"] == "hpa_sync"]
    assert [(e["replicas_before"], e["proposal"], e["reason"]) for e in syncs] == [
        (1, 2, "DesiredWithinRange"), (2, 3, "DesiredWithinRange"), (3, 5, "DesiredWithinRange")]


def test_set_policy_switches_mid_run_with_a_fresh_schedule(tmp_path) -> None:
    clock, lag, cpu = FakeClock(0.0), ScriptedLag(), ScriptedCpu(millicores=100.0)
    deployment = PodDeployment(desired_replicas=2)
    scaler = LocalAutoscaler(policy("scaledobject-ci.yaml"), deployment, lag, tmp_path / "c.jsonl",
                             clock=clock, cpu_request_millicores=500, cpu_sampler=cpu)
    tick(scaler, clock, until_s=4.0)
    reads = lag.reads
    hpa = policy("hpa-cpu-ci.yaml", created_at_s=clock.now())
    scaler.set_policy(hpa, clock.now())
    assert scaler.policy is hpa and scaler.controller is hpa
    tick(scaler, clock, until_s=8.0)
    assert lag.reads == reads and cpu.samples == [0.0, 2.0, 3.0, 4.0, 4.5, 7.5]
    events = list(read_events(tmp_path / "c.jsonl"))
    switched = [e for e in events if e["event"] == "policy_switched"]
    assert [{k: e[k] for k in ("now_s", "from_policy", "to_policy", "to_object", "lag_threshold_records")}
            for e in switched] == [{"now_s": 4.5, "from_policy": "keda-hpa", "to_policy": "hpa",
                                    "to_object": "lagscale-consumer-cpu", "lag_threshold_records": None}]
    after = [e["event"] for e in events if e["monotonic_s"] >= 4.5 and e["event"] not in ("policy_switched", "replica_cpu")]
    assert after == ["hpa_sync"]  # no KEDA poll after the switch; first sync one period later


@dataclass
class ScriptedScalers:
    """An ExternalScalerReader stand-in: every read returns ``value``/``active`` (or ``error``)
    for each call, and records the calls."""

    value: float = 0.0
    active: bool = True
    error: str | None = None
    calls: list = field(default_factory=list)
    closed: bool = False

    def read(self, calls):  # type: ignore[no-untyped-def]
        from pytest_lagscale.control.observation import ExternalMetric

        self.calls.append(tuple(calls))
        if self.error is not None:
            return {c.trigger_index: ExternalMetric("persistent-kafka-lag-events", 500.0, error=self.error)
                    for c in calls}
        return {c.trigger_index: ExternalMetric("persistent-kafka-lag-events", 500.0, self.value, self.active)
                for c in calls}

    def close(self) -> None:
        self.closed = True


def test_external_triggers_are_read_through_the_scalers_reader_each_due_step(tmp_path) -> None:
    """scaledobject-persistent-lag-ci.yaml: the scaler's 2,600 over target 500 asks for 6; no
    lag is read (the scaler reads it); a failed read is an external_read_failed event."""
    clock, lag, scalers = FakeClock(0.0), ScriptedLag(), ScriptedScalers(value=2600.0)
    deployment = CountingDeployment()
    scaler = LocalAutoscaler(policy("scaledobject-persistent-lag-ci.yaml"), deployment, lag,
                             tmp_path / "c.jsonl", clock=clock, external_scalers=scalers)
    tick(scaler, clock, until_s=3.0)
    assert lag.reads == 0
    assert len(scalers.calls) == 3  # steps due at 0, 2, 3 s
    call = scalers.calls[0][0]
    assert (call.trigger_index, call.local, call.name, call.namespace) == (0, True, "lagscale-consumer", "default")
    syncs = [d for d in scaler.decisions if d.event == "hpa_sync"]
    assert [(s.proposal, s.replicas_after) for s in syncs] == [(6, 5)]
    scalers.error = "UNAVAILABLE: down"
    tick(scaler, clock, until_s=4.0)
    scaler.stop()
    failed = [e for e in read_events(tmp_path / "c.jsonl") if e["event"] == "external_read_failed"]
    assert [(e["trigger_index"], e["error"]) for e in failed] == [(0, "UNAVAILABLE: down")]
    assert scalers.closed
