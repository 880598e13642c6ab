"""The local control plane as a managed part: start in order, wait ready, stop in reverse.

``ControlPlane(run_dir).start()`` finds the built binaries (:func:`~.build.find_installed`),
picks free loopback ports, writes the run's PKI and kubeconfigs (:func:`prepare`), then starts
each :func:`~.commands.control_plane` command as a :class:`~pytest_lagscale.process.ManagedProcess`
(own process group, pid file, parent-death signal, log ``<run_dir>/<name>.log``) and polls its
readiness check until it passes. Between kube-controller-manager and the KEDA operator it
calls ``apply_bootstrap(layout)`` (KEDA's CRDs and the objects of :mod:`.manifests`). A start
that fails stops what it started (``with ControlPlane(...)``); :meth:`ControlPlane.stop` stops
the processes in reverse order, SIGTERM then SIGKILL after ``stop_timeout_s``. Process
creation, the probe and the clock are injectable, so the ordering and failure paths are tested
without binaries.

With a ``tap`` factory, the metrics tap starts just before the manifests are applied and the
adapter's ExternalName Service names the tap's port, so every external-metrics read of the
HPA passes through it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ..contract.clock import Clock, RealClock
from ..contract.errors import LagscaleError
from ..lifecycle import StartStop
from ..wait import wait_ready
from . import build, certs, kubeconfig, pins
from .commands import Command, HpaTiming, Layout, Ports, control_plane

READY_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.2
PORT_FIELDS = tuple(Ports.__dataclass_fields__)


def binaries_from_installs(installs: Mapping[str, Path]) -> dict[str, Path]:
    """Binary name -> path, from component -> install directory (``<install>/bin/<name>``)."""
    return {b.name: installs[b.component] / "bin" / b.name for b in build.BINARIES
            if b.component in installs}


def pick_ports(free_port: Callable[[], int]) -> Ports:
    """One distinct free port per listener of :class:`~.commands.Ports`.

    Raises:
        LagscaleError: ``free_port`` gave fewer distinct ports than needed in 100 tries.
    """
    chosen: list[int] = []
    for _ in range(100):
        port = free_port()
        if port not in chosen:
            chosen.append(port)
        if len(chosen) == len(PORT_FIELDS):
            return Ports(*chosen)
    raise LagscaleError(f"ports: only {len(chosen)} distinct free loopback ports found, "
                        f"{len(PORT_FIELDS)} needed; free some ports and retry")


def prepare(run_dir: Path, installs: Mapping[str, Path], ports: Ports, now: dt.datetime) -> Layout:
    """Write the run's PKI (``pki/``) and kubeconfigs (``kubeconfig/``); return the Layout."""
    pki = certs.generate(run_dir / "pki", now)
    configs = kubeconfig.write_all(run_dir / "kubeconfig", pki,
                                   kubeconfig.apiserver_url(ports.apiserver))
    return Layout(run_dir, binaries_from_installs(installs), pki, configs, ports)


def _default_spawn(cmd: Command, log_path: Path) -> Any:
    # SIGKILL on the harness's death: on SIGTERM kube-apiserver drains in-flight requests to an
    # etcd that dies at the same moment, and outlived a SIGKILLed harness by more than 30 s.
    from ..process import ManagedProcess
    return ManagedProcess(cmd.name, cmd.argv, env=cmd.env, log_path=log_path,
                          parent_death_signal="KILL")


def _default_probe(cmd: Command, layout: Layout) -> tuple[bool, str]:
    from .readiness import probe
    result = probe(cmd.readiness, layout.pki)
    return result.ok, result.detail


def _default_free_port() -> int:
    from ..kafka.embedded import free_port
    return free_port()


class ControlPlane(StartStop):
    """etcd, kube-apiserver, kube-controller-manager, KEDA operator and adapter for one session.

    Args:
        run_dir: the control plane's directory (PKI, kubeconfigs, etcd data, logs).
        timing: the HPA controller's timing.
        installs: component -> install directory (default: :func:`~.build.find_installed`).
        apply_bootstrap: called with the Layout once the controller-manager is ready, before
            KEDA starts (applies the CRDs and objects; raises on failure).
        spawn: ``(command, log_path) -> process`` with ``start()``, ``poll()``, ``stop(timeout_s)``
            and ``tail(lines)`` (default ManagedProcess).
        probe: ``(command, layout) -> (ok, detail)`` (default :func:`.readiness.probe`).
        clock: time source (``now``/``sleep``, seconds).
        ready_timeout_s: seconds each process may take to become ready.
        tap: ``layout -> part`` with ``start()``, ``stop()`` and ``port``: started before the
            manifests are applied, the adapter's Service then names its port (the metrics tap,
            :class:`~.metrics_tap.MetricsTap`); None: the Service names the adapter.

    Raises (from :meth:`start`):
        LagscaleError: binaries not built (the message names the bootstrap command), or a
            process exited before it was ready (exit code and last 20 log lines).
        ReadinessTimeout: a process still not ready after ``ready_timeout_s`` (last check's
            answer and last 20 log lines).
    """

    def __init__(self, run_dir: Path, *, timing: HpaTiming | None = None,
                 installs: Mapping[str, Path] | None = None,
                 apply_bootstrap: Callable[[Layout], None] | None = None,
                 spawn: Callable[[Command, Path], Any] | None = None,
                 probe: Callable[[Command, Layout], tuple[bool, str]] | None = None,
                 free_port: Callable[[], int] | None = None,
                 clock: Clock | None = None, ready_timeout_s: float = READY_TIMEOUT_S,
                 stop_timeout_s: float = 10.0,
                 tap: Callable[[Layout], Any] | None = None):
        self.run_dir = Path(run_dir)
        self.timing = timing or HpaTiming()
        self._installs = installs
        self._apply_bootstrap = apply_bootstrap
        self._spawn = spawn or _default_spawn
        self._probe = probe or _default_probe
        self._free_port = free_port or _default_free_port
        self.clock = clock or RealClock()
        self.ready_timeout_s = ready_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.layout: Layout | None = None
        self.ready_s: dict[str, float] = {}
        self._processes: list[tuple[str, Any]] = []
        self._tap_factory = tap
        self.tap: Any = None

    def start(self) -> "ControlPlane":
        """Start every process in order, each ready before the next; returns self."""
        if self.layout is not None:
            return self
        installs = self._installs if self._installs is not None else self._find_installs()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        layout = prepare(self.run_dir, installs, pick_ports(self._free_port),
                         dt.datetime.now(dt.timezone.utc))
        self.layout = layout
        for cmd in control_plane(layout, self.timing):
            if cmd.name == "keda-operator" and self._tap_factory is not None:
                self.tap = self._tap_factory(layout)
                self.tap.start()
                layout = self.layout = replace(layout, metrics_service_port=self.tap.port)
            if cmd.name == "keda-operator" and self._apply_bootstrap is not None:
                self._apply_bootstrap(layout)
            process = self._spawn(cmd, self.run_dir / f"{cmd.name}.log")
            self._processes.append((cmd.name, process))
            process.start()
            self.ready_s[cmd.name] = self._wait_ready(cmd, process)
        return self

    def stop(self, timeout_s: float | None = None) -> dict[str, str]:
        """Stop every started process, newest first; returns name -> how it stopped. Idempotent."""
        outcomes = {}
        while self._processes:
            name, process = self._processes.pop()
            outcomes[name] = process.stop(self.stop_timeout_s if timeout_s is None else timeout_s)
        if self.tap is not None:
            self.tap.stop()
            self.tap = None
        return outcomes

    def processes(self) -> list[tuple[str, Any]]:
        """``(name, process)`` of every process started and not stopped, oldest first."""
        return list(self._processes)

    @property
    def versions(self) -> dict[str, str]:
        """The pinned versions (``{"etcd": "v3.6.16", ...}``) for the benchmark JSON."""
        return pins.pinned_versions()

    def _find_installs(self) -> dict[str, Path]:
        reason = build.missing_reason()
        if reason is not None:
            raise LagscaleError(f"control plane: {reason}")
        return {c: build.find_installed(c) for c in pins.CONTROL_PLANE}  # type: ignore[misc]

    def _wait_ready(self, cmd: Command, process: Any) -> float:
        started = self.clock.now()
        if cmd.readiness is None:
            return 0.0
        log_path = self.run_dir / f"{cmd.name}.log"
        detail = ["no answer yet"]  # the last probe's answer, for the timeout

        def answers() -> bool:
            ok, detail[0] = self._probe(cmd, self.layout)
            return ok

        wait_ready(answers, process, timeout_s=self.ready_timeout_s,
                   poll_interval_s=POLL_INTERVAL_S, started=started, clock=self.clock,
                   exited=lambda how: f"{cmd.name}: {how} before it was ready; see {log_path}",
                   timed_out=lambda: (
                       f"{cmd.name}: timed out after {self.ready_timeout_s:g} s waiting for GET "
                       f"{cmd.readiness.url} (last answer: {detail[0]}); raise ready_timeout_s "
                       f"or see {log_path}"))
        return self.clock.now() - started


def keda_control_plane(run_dir: Path, timing: HpaTiming, namespace: str, *,
                       clock: Clock | None = None,
                       tap: Callable[[Layout], Any] | None = None) -> "ControlPlane":
    """The control plane of a run or of ``lagscale kube up``: KEDA's CRDs (from the built KEDA
    install's ``crds/``) and the start-up objects for ``namespace`` applied before KEDA starts
    (:func:`~.apply.bootstrap_applier`); ``tap`` as :class:`ControlPlane`'s. Not started."""
    from .apply import bootstrap_applier

    keda = build.find_installed("keda")
    crd_dir = (keda / "crds") if keda is not None else Path("/nonexistent")
    return ControlPlane(run_dir, timing=timing, clock=clock, tap=tap,
                        apply_bootstrap=bootstrap_applier(namespace, crd_dir, clock=clock))
