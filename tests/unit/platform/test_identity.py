"""Stable replica identities on the local platform (a StatefulSet's pod names): the pure helpers,
and the slots LocalDeployment hands out, with fake processes (nothing is started)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.platform import local
from pytest_lagscale.platform.identity import (expand_pod_fields, flag_value, lowest_free_ordinal,
                                               pod_name)
from pytest_lagscale.platform.local import LocalDeployment, ReplicaTemplate


@pytest.mark.parametrize(("taken", "expected"), [
    pytest.param((), 0, id="none-taken"),
    pytest.param((0, 1, 2), 3, id="dense"),
    pytest.param((1, 2), 0, id="first-free"),
    pytest.param((0, 2, 3), 1, id="hole"),
])
def test_lowest_free_ordinal(taken: tuple[int, ...], expected: int) -> None:
    assert lowest_free_ordinal(taken) == expected


def test_pod_name_is_name_dash_ordinal() -> None:
    assert pod_name("lagscale-consumer", 3) == "lagscale-consumer-3"
    with pytest.raises(ValueError, match=r"ordinal: -1 is negative; use >= 0"):
        pod_name("lagscale-consumer", -1)


def test_only_the_given_references_are_expanded() -> None:
    argv = ["python", "--instance-id=$(POD_NAME)", "--bootstrap=$(KAFKA_BOOTSTRAP)", "$(POD_NAME)x"]
    assert expand_pod_fields(argv, {"POD_NAME": "c-1"}) == (
        "python", "--instance-id=c-1", "--bootstrap=$(KAFKA_BOOTSTRAP)", "c-1x")


@pytest.mark.parametrize(("argv", "expected"), [
    pytest.param(["p", "--instance-id=a"], "a", id="equals"),
    pytest.param(["p", "--instance-id", "a"], "a", id="separate"),
    pytest.param(["p", "--instance-id=a", "--instance-id", "b"], "b", id="last-wins"),
    pytest.param(["p", "--instance-idx=a"], None, id="other-flag"),
    pytest.param(["p", "--instance-id"], None, id="no-value"),
])
def test_flag_value(argv: list[str], expected: str | None) -> None:
    assert flag_value(argv, "--instance-id") == expected


# -- slots in LocalDeployment, with fake processes ---------------------------------------------
class _FakeProcess:
    """A ManagedProcess stand-in: ``exit()`` makes it exit; ``stop`` blocks until ``released``."""

    count = 0

    def __init__(self, name: str, argv: list[str], *, env: dict[str, str], log_path: Any):
        self.name, self.argv, self.env = name, list(argv), dict(env)
        self.code: int | None = None
        self.released = threading.Event()
        self.released.set()
        _FakeProcess.count += 1
        self.pid = 10_000 + _FakeProcess.count

    def start(self) -> "_FakeProcess":
        return self

    def poll(self) -> int | None:
        return self.code

    def signal(self, signum: int) -> None:
        pass

    def stop(self, timeout_s: float = 10.0, *, graceful: bool = True) -> str:
        self.released.wait(5)
        self.code = 0
        return "terminated"

    def tail(self, lines: int = 20) -> list[str]:
        return []

    def exit_report(self, lines: int = 20) -> str:
        return f"{self.name}: exited with code {self.code}; no log"


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalDeployment:
    monkeypatch.setattr(local, "ManagedProcess", _FakeProcess)
    monkeypatch.setattr(local, "free_port", lambda: 9400)
    template = ReplicaTemplate(argv=("python", "-m", "spark_consumer",
                                     "--instance-id=$(POD_NAME)"))
    return LocalDeployment(template, tmp_path)  # not started: no monitor thread, no image step


def _slots(deployment: LocalDeployment) -> list[tuple[str, int, str | None]]:
    return [(r.replica_id, r.ordinal, r.instance_id) for r in deployment.replicas()]


def _exit(deployment: LocalDeployment, replica_id: str) -> None:
    """The replica exits and the monitor's next probe sees it (as after SIGTERM)."""
    replica = next(r for r in deployment.replicas() if r.replica_id == replica_id)
    replica.process.code = 0
    deployment._probe(replica)


def test_replicas_get_the_lowest_free_slot_and_their_name_in_args_and_env(
        deployment: LocalDeployment, tmp_path: Path) -> None:
    deployment.scale(2)
    assert _slots(deployment) == [("replica-0001", 0, "lagscale-consumer-0"),
                                  ("replica-0002", 1, "lagscale-consumer-1")]
    process = deployment.replicas()[1].process
    assert "--instance-id=lagscale-consumer-1" in process.argv
    assert process.env["POD_NAME"] == "lagscale-consumer-1"
    started = [e for e in read_events(tmp_path / "platform.events.jsonl")
               if e["event"] == "replica_started"]
    assert [(e["replica_id"], e["ordinal"], e["pod_name"], e["instance_id"]) for e in started] \
        == [("replica-0001", 0, "lagscale-consumer-0", "lagscale-consumer-0"),
            ("replica-0002", 1, "lagscale-consumer-1", "lagscale-consumer-1")]


def test_a_replaced_replica_keeps_its_slot_even_when_a_lower_one_is_free(
        deployment: LocalDeployment) -> None:
    deployment.scale(3)
    deployment.scale(2)  # removes the newest, replica-0003 (slot 2)
    deployment.wait_terminated(5)
    _exit(deployment, "replica-0001")  # slot 0 -> replaced in slot 0
    assert _slots(deployment) == [("replica-0002", 1, "lagscale-consumer-1"),
                                  ("replica-0004", 0, "lagscale-consumer-0")]
    deployment.scale(1)  # removes the newest, replica-0004: slot 0 is free now
    deployment.wait_terminated(5)
    _exit(deployment, "replica-0002")  # slot 1 comes back as slot 1, not the free slot 0
    assert _slots(deployment) == [("replica-0005", 1, "lagscale-consumer-1")]


def test_a_terminating_replica_keeps_its_slot_until_it_exited(
        deployment: LocalDeployment) -> None:
    deployment.scale(2)
    draining = deployment.replicas()[1].process
    draining.released.clear()  # replica-0002 drains until released
    deployment.scale(1)
    deployment.scale(2)  # slot 1 is still held by the draining replica-0002
    assert _slots(deployment)[-1] == ("replica-0003", 2, "lagscale-consumer-2")
    draining.released.set()
    deployment.wait_terminated(5)
    deployment.scale(3)
    assert _slots(deployment)[-1] == ("replica-0004", 1, "lagscale-consumer-1")


def test_without_instance_id_the_slot_is_recorded_and_no_instance_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "ManagedProcess", _FakeProcess)
    monkeypatch.setattr(local, "free_port", lambda: 9400)
    deployment = LocalDeployment(ReplicaTemplate(argv=("python", "-m", "spark_consumer")),
                                 tmp_path, name="c")
    deployment.scale(1)
    replica = deployment.replicas()[0]
    assert (replica.ordinal, replica.pod_name, replica.instance_id) == (0, "c-0", None)
    assert not any("--instance-id" in arg for arg in replica.process.argv)
