"""The control plane's start order, readiness waits and failure paths, with fake processes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.errors import LagscaleError, ReadinessTimeout
from pytest_lagscale.kube import control_plane as cp

pytest.importorskip("cryptography", reason="cryptography missing: pip install -e '.[kubernetes]'")

INSTALLS = {"etcd": Path("/c/etcd"), "kubernetes": Path("/c/kubernetes"), "keda": Path("/c/keda")}


class FakeProcess:
    def __init__(self, name, journal, exit_code=None):
        self.name, self.journal, self.exit_code = name, journal, exit_code

    def start(self):
        self.journal.append(("start", self.name))
        return self

    def poll(self):
        return self.exit_code

    def stop(self, timeout_s=10.0):
        self.journal.append(("stop", self.name))
        return "terminated"

    def tail(self, lines=20):
        return [f"{self.name}: last log line"]


class World:
    """Fakes for spawn/probe/ports; ``ready_after`` = probes before a process answers ok."""

    def __init__(self, ready_after=None, exits=None):
        self.journal: list[tuple[str, str]] = []
        self.ready_after = ready_after or {}
        self.exits = exits or {}
        self.probes: dict[str, int] = {}
        self.ports = itertools.count(30000)

    def spawn(self, cmd, log_path):
        self.journal.append(("spawn", cmd.name))
        return FakeProcess(cmd.name, self.journal, self.exits.get(cmd.name))

    def probe(self, cmd, layout):
        n = self.probes[cmd.name] = self.probes.get(cmd.name, 0) + 1
        return n > self.ready_after.get(cmd.name, 0), f"{cmd.name} probe {n}"

    def plane(self, tmp_path, **kwargs):
        return cp.ControlPlane(tmp_path / "kube", installs=INSTALLS, spawn=self.spawn,
                               probe=self.probe, free_port=lambda: next(self.ports),
                               apply_bootstrap=lambda layout: self.journal.append(("apply", "bootstrap")),
                               clock=FakeClock(), **kwargs)


def test_starts_in_order_with_the_manifests_before_keda_and_stops_in_reverse(tmp_path):
    world = World(ready_after={"kube-apiserver": 3})
    with world.plane(tmp_path) as plane:
        started = [n for kind, n in world.journal if kind == "start"]
        assert started == ["etcd", "kube-apiserver", "kube-controller-manager", "keda-operator",
                           "keda-adapter"]
        assert world.journal.index(("apply", "bootstrap")) == world.journal.index(
            ("spawn", "keda-operator")) - 1
        assert plane.ready_s["kube-apiserver"] == pytest.approx(3 * cp.POLL_INTERVAL_S)
        assert plane.layout.binaries["kube-apiserver"] == Path("/c/kubernetes/bin/kube-apiserver")
        assert (tmp_path / "kube" / "pki" / "apiserver.crt").exists()
        assert (tmp_path / "kube" / "kubeconfig" / "admin.kubeconfig").exists()
    stopped = [n for kind, n in world.journal if kind == "stop"]
    assert stopped == ["keda-adapter", "keda-operator", "kube-controller-manager",
                       "kube-apiserver", "etcd"]


def test_a_process_that_exits_before_ready_stops_the_others(tmp_path):
    world = World(ready_after={"kube-controller-manager": 5}, exits={"kube-controller-manager": 255})
    with pytest.raises(LagscaleError) as err:
        with world.plane(tmp_path):
            pass
    assert str(err.value).splitlines() == [
        f"kube-controller-manager: exited with code 255 before it was ready; see "
        f"{tmp_path / 'kube' / 'kube-controller-manager.log'}",
        "kube-controller-manager: last log line"]
    assert [n for kind, n in world.journal if kind == "stop"] == [
        "kube-controller-manager", "kube-apiserver", "etcd"]


def test_readiness_timeout_names_the_check_and_the_last_answer(tmp_path):
    world = World(ready_after={"etcd": 10_000})
    with pytest.raises(ReadinessTimeout) as err:
        with world.plane(tmp_path, ready_timeout_s=1.0):
            pass
    first = str(err.value).splitlines()[0]
    assert first.startswith("etcd: timed out after 1 s waiting for GET http://127.0.0.1:")
    assert "/health (last answer: etcd probe 7); raise ready_timeout_s or see " in first
    assert [n for kind, n in world.journal if kind == "stop"] == ["etcd"]


def test_missing_binaries_name_the_bootstrap_command(tmp_path, monkeypatch):
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "empty-cache"))
    plane = cp.ControlPlane(tmp_path / "kube")
    with pytest.raises(LagscaleError, match=r"control plane: control-plane binaries not built .*"
                       r"run scripts/bootstrap --with-kube"):
        plane.start()
    assert plane.stop() == {}


def test_pick_ports_skips_duplicates_and_gives_up():
    ports = iter([5, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
    assert cp.pick_ports(lambda: next(ports)) == cp.Ports(5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
    with pytest.raises(LagscaleError, match="only 1 distinct free loopback ports found, 10 needed"):
        cp.pick_ports(lambda: 5)


def test_binaries_from_installs():
    assert cp.binaries_from_installs({"keda": Path("/k")}) == {
        "keda-operator": Path("/k/bin/keda-operator"), "keda-adapter": Path("/k/bin/keda-adapter")}
