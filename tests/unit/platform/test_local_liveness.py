"""The local platform's liveness restarts, with fake processes, a fake clock and scripted probes
(the real-process flow: tests/integration/test_local_platform.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.platform import local
from pytest_lagscale.platform.local import (LivenessCheck, LocalDeployment, ReplicaTemplate,
                                            template_from_deployment)

K8S = Path(__file__).resolve().parents[3] / "k8s"


class _FakeProcess:
    """A ManagedProcess stand-in whose ``stop`` blocks until ``released`` (a drain)."""

    count = 0

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], log_path: Any):
        self.name, self.argv = name, list(argv)
        self.code: int | None = None
        self.stops = 0
        self.released = threading.Event()
        self.released.set()
        _FakeProcess.count += 1
        self.pid = 20_000 + _FakeProcess.count

    def start(self) -> "_FakeProcess":
        return self

    def poll(self) -> int | None:
        return self.code

    def signal(self, signum: int) -> None:
        pass

    def stop(self, timeout_s: float = 10.0, *, graceful: bool = True) -> str:
        self.stops += 1
        self.code = -15  # SIGTERM arrived: the process exits (after its drain)
        self.released.wait(5)
        return "terminated"

    def tail(self, lines: int = 20) -> list[str]:
        return []

    def exit_report(self, lines: int = 20) -> str:
        return f"{self.name}: exited with code {self.code}; no log"


class _Probes:
    """Scripted ``probe_http``: ``/ready`` always 200; ``/healthz`` per port (default 200)."""

    def __init__(self) -> None:
        self.failing: dict[int, str] = {}
        self.calls: list[int] = []

    def __call__(self, port: int, path: str, timeout_s: float) -> tuple[bool, str]:
        if path == "/ready":
            return True, "HTTP 200: ready"
        assert path == "/healthz"
        self.calls.append(port)
        reason = self.failing.get(port)
        return (False, reason) if reason else (True, "HTTP 200: ok")


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> _Probes:
    ports = iter(range(9400, 9500))
    monkeypatch.setattr(local, "ManagedProcess", _FakeProcess)
    monkeypatch.setattr(local, "free_port", lambda: next(ports))
    fake = _Probes()
    monkeypatch.setattr(local, "probe_http", fake)
    return fake


def _deployment(tmp_path: Path, threshold: int = 3) -> tuple[LocalDeployment, FakeClock]:
    clock = FakeClock()
    template = ReplicaTemplate(argv=("python", "-m", "spark_consumer"),
                               termination_grace_period_s=45.0,
                               liveness=LivenessCheck(path="/healthz", period_s=5.0,
                                                      failure_threshold=threshold))
    return LocalDeployment(template, tmp_path, clock=clock), clock  # no monitor thread


def _tick(deployment: LocalDeployment, clock: FakeClock, seconds: float) -> None:
    """Advance the clock and run the monitor's pass over every replica."""
    clock.advance(seconds)
    for replica in deployment.replicas():
        deployment._probe(replica)
        deployment._probe_liveness(replica)


def _events(tmp_path: Path, name: str) -> list[dict]:
    return [e for e in read_events(tmp_path / "platform.events.jsonl") if e["event"] == name]


def test_the_threshold_counts_consecutive_failures_and_a_success_resets_it(
        tmp_path: Path, probes: _Probes) -> None:
    deployment, clock = _deployment(tmp_path)
    deployment.scale(1)
    replica = deployment.replicas()[0]
    _tick(deployment, clock, 4.9)
    assert probes.calls == []  # the first probe comes one period after the start
    probes.failing[replica.metrics_port] = "HTTP 503: r: not live"
    _tick(deployment, clock, 0.1)
    _tick(deployment, clock, 5.0)
    assert replica.liveness_failures == 2
    del probes.failing[replica.metrics_port]
    _tick(deployment, clock, 5.0)  # one success: the count starts over
    probes.failing[replica.metrics_port] = "HTTP 503: r: not live"
    _tick(deployment, clock, 5.0)
    _tick(deployment, clock, 5.0)
    assert replica.liveness_failures == 2 and not replica.restarting
    assert len(probes.calls) == 5 and _events(tmp_path, "replica_liveness_failed") == []


def test_a_restart_keeps_the_slot_and_the_count_and_starts_exactly_one_successor(
        tmp_path: Path, probes: _Probes) -> None:
    deployment, clock = _deployment(tmp_path)
    deployment.scale(3)
    broken = deployment.replicas()[1]
    broken.process.released.clear()  # its drain takes a while
    probes.failing[broken.metrics_port] = "HTTP 503: replica-0002: not live: group broken"
    for _ in range(3):
        _tick(deployment, clock, 5.0)
    assert broken.restarting and not broken.ready
    assert deployment.current_replicas == 3  # the pod stays while its container restarts
    for _ in range(3):  # the monitor goes on while the old process drains, and it has exited
        _tick(deployment, clock, 5.0)
    assert broken.process.code is not None and broken.process.stops == 1
    assert [r.replica_id for r in deployment.replicas()] == [
        "replica-0001", "replica-0002", "replica-0003"]
    broken.process.released.set()
    deployment.wait_terminated(5)
    assert [(r.replica_id, r.ordinal, r.restarts, r.restart_of) for r in deployment.replicas()] \
        == [("replica-0001", 0, 0, None), ("replica-0004", 1, 1, "replica-0002"),
            ("replica-0003", 2, 0, None)]
    _tick(deployment, clock, 5.0)
    assert deployment.current_replicas == 3
    failed = _events(tmp_path, "replica_liveness_failed")
    assert [(e["replica_id"], e["failures"], e["failing_for_s"], e["reason"]) for e in failed] \
        == [("replica-0002", 3, 10.0, "HTTP 503: replica-0002: not live: group broken")]
    started = _events(tmp_path, "replica_started")
    assert [(e["replica_id"], e["ordinal"], e["restart_of"], e["restarts"]) for e in started] \
        == [("replica-0001", 0, None, 0), ("replica-0002", 1, None, 0),
            ("replica-0003", 2, None, 0), ("replica-0004", 1, "replica-0002", 1)]
    assert _events(tmp_path, "replica_exited") == []
    terminating = _events(tmp_path, "replica_terminating")
    assert [(e["replica_id"], e["grace_period_s"], e["reason"]) for e in terminating] == [
        ("replica-0002", 45.0, "liveness")]


def test_a_replica_scaled_away_during_its_restart_gets_no_successor(
        tmp_path: Path, probes: _Probes) -> None:
    deployment, clock = _deployment(tmp_path, threshold=1)
    deployment.scale(2)
    broken = deployment.replicas()[1]
    broken.process.released.clear()
    probes.failing[broken.metrics_port] = "no answer within 1 s: timed out"
    _tick(deployment, clock, 5.0)
    assert broken.restarting
    deployment.scale(1)  # the newest goes: the restarting one
    broken.process.released.set()
    deployment.wait_terminated(5)
    assert [r.replica_id for r in deployment.replicas()] == ["replica-0001"]
    assert len(_events(tmp_path, "replica_started")) == 2


def test_terminating_replicas_are_not_probed(tmp_path: Path, probes: _Probes) -> None:
    deployment, clock = _deployment(tmp_path, threshold=1)
    deployment.scale(1)
    replica = deployment.replicas()[0]
    replica.process.released.clear()
    deployment.scale(0)
    clock.advance(5.0)
    deployment._probe_liveness(replica)
    assert probes.calls == []
    replica.process.released.set()
    deployment.wait_terminated(5)


def test_without_a_liveness_probe_nothing_is_probed(tmp_path: Path, probes: _Probes) -> None:
    deployment = LocalDeployment(ReplicaTemplate(argv=("python", "-m", "spark_consumer")), tmp_path)
    deployment.scale(1)
    deployment._probe_liveness(deployment.replicas()[0])
    assert probes.calls == []


def test_the_committed_deployments_probe_becomes_the_template_s() -> None:
    for name in ("consumer-deployment.yaml", "consumer-deployment-ci.yaml"):
        template = template_from_deployment(load_deployment(K8S / name), "127.0.0.1:9092")
        assert template.liveness == LivenessCheck(path="/healthz", period_s=2.0,
                                                  failure_threshold=8, timeout_s=1.0,
                                                  initial_delay_s=0.0)


def test_a_bad_liveness_check_is_refused(tmp_path: Path) -> None:
    template = ReplicaTemplate(argv=("x",), liveness=LivenessCheck(period_s=0.0))
    with pytest.raises(ConfigError, match="'livenessProbe': .*periodSeconds >= 1"):
        LocalDeployment(template, tmp_path)
