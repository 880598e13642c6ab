"""A Deployment of replica processes on this machine (the ``local`` platform).

:class:`LocalDeployment` behaves like a Kubernetes Deployment's pods as far as the experiments can
tell: ``scale(n)`` sets the desired count; new replicas are processes started from the
Deployment's container command/args/env; a replica is *ready* once its readiness endpoint
answers 200 (probed every ``readiness_period_s`` as a kubelet would); scale-down removes the
newest replicas first by SIGTERM and, after ``terminationGracePeriodSeconds``, SIGKILL; a replica
that exits on its own is replaced (the ReplicaSet keeps the count). Every process runs in its own
process group, and :meth:`LocalDeployment.stop` reaps them all on every exit path.

A replica of the replica program gets ``--replica-id``, ``--metrics-port`` (a free loopback
port), ``--event-log`` and ``--store`` appended to its args; a command consumer
(:attr:`ReplicaTemplate.kind` ``command``: docs/byo-consumer.md) gets nothing appended, and is
ready by its probe (:class:`ProbeCheck`) or, without one, by group membership
(:meth:`LocalDeployment.use_group_membership`). Output and event logs live in
``<run_dir>/replicas/<replica id>/``. Platform events (``replica_started``, ``replica_ready``,
``replica_terminating``, ``replica_stopped``, ``replica_exited`` with the exit code, the signal's
name and the last 20 log lines, ``scaled``) go to ``<run_dir>/platform.events.jsonl``.

Identity, as a StatefulSet gives it (:mod:`.identity`): each replica holds the lowest free slot
and is named ``<name>-<ordinal>``, given to it as ``POD_NAME`` and ``$(POD_NAME)`` in its args, so
``--instance-id=$(POD_NAME)`` makes a replacement rejoin as the same static member.

Liveness, as a kubelet runs a ``livenessProbe`` (:class:`LivenessCheck`, from the Deployment's
probe): after ``failure_threshold`` consecutive failed probes the platform writes
``replica_liveness_failed`` and restarts the container in the same slot (SIGTERM, then SIGKILL
after the grace period); the pod stays, so :attr:`LocalDeployment.current_replicas` does not
change. Timing, events and what is not modelled: docs/experiments.md, "Notes moved from
module docstrings", "platform/local.py". ``--platform kubernetes``'s node agent: readiness only.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..contract.clock import Clock, RealClock
from ..contract.flags import PLATFORM_FLAGS
from ..contract.rundir import RunDir
from ..contract.errors import ConfigError, ReplicaError
from ..contract.eventlog import EventLog
from ..exit_status import describe_exit, exit_signal
from ..kafka.embedded import free_port
from ..lifecycle import StartStop
from ..process import ManagedProcess
from ..wait import probe_http, run_probe
from .identity import POD_NAME_VAR, expand_pod_fields, flag_value, lowest_free_ordinal, pod_name
from .image import PreparedImage, prepare_template_image

if TYPE_CHECKING:
    from ..config.deployment import DeploymentConfig

log = logging.getLogger(__name__)

#: Seconds a replica's readiness probe waits for the answer (a kubelet's ``timeoutSeconds``).
READINESS_PROBE_TIMEOUT_S = 0.5


@dataclass(frozen=True)
class LivenessCheck:
    """A container's ``livenessProbe`` as the local platform runs it (see the module docstring).

    Attributes:
        path: HTTP path on the metrics port (``/healthz``).
        period_s: seconds between probes.
        failure_threshold: consecutive failures that restart the replica.
        timeout_s: seconds a probe waits for the answer.
        initial_delay_s: seconds after the start before probing begins.
        termination_grace_period_s: SIGTERM -> SIGKILL of the restart, or None: the template's.
        probe: a command consumer's probe (httpGet, tcpSocket or exec), or None: ``path``.
    """

    path: str = "/healthz"
    period_s: float = 10.0
    failure_threshold: int = 3
    timeout_s: float = 1.0
    initial_delay_s: float = 0.0
    termination_grace_period_s: float | None = None
    probe: "ProbeCheck | None" = None


@dataclass(frozen=True)
class ProbeCheck:
    """A command consumer's probe as a kubelet runs it.

    Attributes:
        kind: ``httpGet`` (success: status 200-399), ``tcpSocket`` (a connection) or ``exec``
            (exit 0).
        port: the container port probed (the replica's own port when it is the template's
            :attr:`ReplicaTemplate.container_port`); 0 for exec.
        path: the HTTP path (httpGet).
        command: the argv (exec), run with the replica's env.
        timeout_s: seconds a probe may take.
    """

    kind: str
    port: int = 0
    path: str = "/"
    command: tuple[str, ...] = ()
    timeout_s: float = 1.0


@dataclass(frozen=True)
class ReplicaTemplate:
    """How to start one replica: the Deployment's pod template, reduced to a process.

    Attributes:
        argv: command and args (the container's ``command`` + ``args``).
        env: environment added to the harness's own.
        termination_grace_period_s: seconds between SIGTERM and SIGKILL on removal.
        readiness_path: HTTP path of the readiness probe on the metrics port (``/ready``).
        readiness_period_s: seconds between readiness probes.
        cpu_request_millicores: the container's CPU request (for CPU utilization), or None.
        manifest: the Deployment manifest the template was read from (a platform that
            applies it, ``kubernetes``), or None.
        liveness: the liveness probe, or None when the Deployment has none.
        kind: ``spark_consumer`` (the replica program: flags appended, ``/ready``) or
            ``command`` (any consumer: nothing appended, :attr:`readiness`).
        readiness: a command consumer's readiness probe, or None: group membership.
        port_env: the env variable a command consumer's replica finds its own port in, or None.
        container_port: the manifest's value of that port (probes on it go to the replica's).
        image: the container's image (a command consumer's may be built here:
            :func:`~.image.prepare_command_image`).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    termination_grace_period_s: float = 30.0
    readiness_path: str = "/ready"
    readiness_period_s: float = 1.0
    cpu_request_millicores: float | None = None
    manifest: str | None = None
    liveness: LivenessCheck | None = None
    kind: str = "spark_consumer"
    readiness: ProbeCheck | None = None
    port_env: str | None = None
    container_port: int | None = None
    image: str = ""


@dataclass
class Replica:
    """One replica process and what the platform knows of it.

    Attributes:
        replica_id: ``replica-0001``, ... in creation order (newest = highest).
        process: the running process.
        metrics_port: loopback port of its ``/metrics`` and readiness endpoints.
        started_s: monotonic start time; ``ready_s`` when the probe first passed, else None.
        terminating: True once SIGTERM was sent by a scale-down.
        ordinal: its identity slot (0, 1, ...); a replacement takes the slot of the replica it
            replaces.
        pod_name: ``<deployment name>-<ordinal>``, its ``POD_NAME``.
        instance_id: its ``--instance-id`` (static membership) after expansion, or None.
        signalled: the signal :meth:`LocalDeployment.kill_replica` last sent it, or None.
        restarting: True from its liveness restart's SIGTERM until its successor replaces it
            (it still counts as a replica, not as ready).
        restarts: liveness restarts of its slot before it (the container's restartCount).
        restart_of: the replica id it replaced in a liveness restart, or None.
        liveness_failures: consecutive failed liveness probes; ``liveness_reason`` the last
            failure's text; ``liveness_due_s`` when the next probe is due (monotonic).
    """

    replica_id: str
    process: ManagedProcess
    metrics_port: int
    directory: Path
    started_s: float
    ready_s: float | None = None
    terminating: bool = False
    ordinal: int = 0
    pod_name: str = ""
    instance_id: str | None = None
    signalled: int | None = None
    restarting: bool = False
    restarts: int = 0
    restart_of: str | None = None
    liveness_failures: int = 0
    liveness_failing_since_s: float | None = None
    liveness_reason: str = ""
    liveness_due_s: float = 0.0

    @property
    def ready(self) -> bool:
        return self.ready_s is not None and not self.terminating and not self.restarting


class LocalDeployment(StartStop):
    """Replica processes scaled like a Kubernetes Deployment.

    Args:
        template: the pod template as a process.
        run_dir: the run directory (or its path): replica logs, event logs, the shared store.
        graceful: False makes scale-down SIGKILL at once (experiment 6's "no graceful drain").
        clock: time source for event timestamps.

    Raises:
        ConfigError: a bad template value (names the field).
        ReplicaError: from :meth:`scale` when a replica cannot be started.

    Example:
        >>> with LocalDeployment(template, run_dir) as deployment:  # doctest: +SKIP
        ...     deployment.scale(3)
        ...     deployment.wait_ready(3, within_s=60)
    """

    def __init__(self, template: ReplicaTemplate, run_dir: RunDir | str | Path, *,
                 graceful: bool = True,
                 clock: Clock | None = None, name: str = "lagscale-consumer"):
        if template.termination_grace_period_s < 0:
            raise ConfigError(f"'terminationGracePeriodSeconds': "
                              f"{template.termination_grace_period_s!r} is negative; use >= 0")
        if not template.argv:
            raise ConfigError("'containers[0].command': empty; give the replica command")
        live = template.liveness
        if live is not None and (live.period_s <= 0 or live.timeout_s <= 0
                                 or live.failure_threshold < 1 or live.initial_delay_s < 0):
            raise ConfigError(f"'livenessProbe': {live!r} has a period or timeout <= 0 s, a "
                              "failure threshold < 1 or a negative initial delay; use "
                              "periodSeconds >= 1, timeoutSeconds >= 1, failureThreshold >= 1, "
                              "initialDelaySeconds >= 0")
        self.template = template
        self.name = name
        self.layout = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
        self.run_dir = self.layout.root
        self.store_dir = self.layout.store
        self.graceful = graceful
        self.clock = clock or RealClock()
        self.events = EventLog(self.layout.source_events("platform"), source="platform",
                               clock=self.clock)
        self.desired_replicas = 0
        self._replicas: list[Replica] = []
        self._terminating: list[tuple[Replica, threading.Thread]] = []
        self._next_index = 1
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self.image: PreparedImage | None = None
        self._group_members: Callable[[], int | None] | None = None
        self._image_env: dict[str, str] = {}

    def use_group_membership(self, members: Callable[[], int | None]) -> None:
        """Readiness of a command consumer without a readiness probe: ``members()`` is the
        number of group members holding partitions (None when unknown); that many replicas,
        oldest first, are ready. Processes share one host, so a member is not told apart by
        its host; the count is what the group shows."""
        self._group_members = members

    # -- public API ----------------------------------------------------------------------
    def start(self) -> "LocalDeployment":
        """Run the image build step once (:func:`~pytest_lagscale.platform.image.prepare_image`,
        event ``image_prepared``), start the readiness/liveness monitor thread; returns self.

        Raises:
            ReplicaError: the image build step failed.
        """
        self.store_dir.mkdir(parents=True, exist_ok=True)
        if self.image is None:
            self.image, self._image_env = prepare_template_image(self.template,
                                                                 self.layout.image_build_log)
            self.events.emit("image_prepared", engine=self.image.engine,
                             image=self.template.image, cds_archive=self.image.cds_archive,
                             duration_s=self.image.duration_s)
        if self._monitor is None:
            self._monitor = threading.Thread(target=self._monitor_loop, name=f"{self.name}-probe",
                                             daemon=True)
            self._monitor.start()
        return self

    def scale(self, replicas: int) -> None:
        """Set the desired replica count; starts or removes (newest first) processes now.

        Removal is asynchronous like pod termination: the process gets SIGTERM at once and is
        reaped by a background thread after it exits or its grace period ends.
        """
        if replicas < 0:
            raise ConfigError(f"replicas: {replicas!r} is negative; use >= 0")
        with self._lock:
            before = self.desired_replicas
            self.desired_replicas = replicas
            while len(self._replicas) < replicas:
                self._start_replica()
            while len(self._replicas) > replicas:
                self._terminate(self._replicas.pop())
        if before != replicas:
            self.events.emit("scaled", replicas_before=before, replicas_after=replicas)

    @property
    def current_replicas(self) -> int:
        """Replicas that exist and are not terminating (the Deployment's status.replicas)."""
        with self._lock:
            return len(self._replicas)

    @property
    def ready_replicas(self) -> int:
        """Replicas whose readiness probe passed and that are not terminating."""
        with self._lock:
            return sum(r.ready for r in self._replicas)

    def replicas(self) -> list[Replica]:
        """Snapshot of the live (non-terminating) replicas, oldest first."""
        with self._lock:
            return list(self._replicas)

    def metrics_targets(self) -> list[str]:
        """``127.0.0.1:<port>`` of every live replica (Prometheus file service discovery);
        none for a command consumer without a port variable."""
        if self.template.kind == "command" and self.template.port_env is None:
            return []
        return [f"127.0.0.1:{r.metrics_port}" for r in self.replicas()]

    def kill_replica(self, replica_id: str, signum: int) -> None:
        """Send ``signum`` to the process group of live replica ``replica_id`` (writes
        ``replica_signalled``); if it exits, the monitor replaces it as a ReplicaSet would.

        Raises:
            ConfigError: no live replica has that id (the message lists the live ones).
        """
        live = {r.replica_id: r for r in self.replicas()}
        replica = live.get(replica_id)
        if replica is None:
            raise ConfigError(f"kill_replica: replica_id {replica_id!r} is not a live replica; "
                              f"live: {', '.join(live) or 'none'}")
        self.events.emit("replica_signalled", replica_id=replica_id, signal=int(signum))
        replica.signalled = int(signum)
        replica.process.signal(signum)

    def wait_ready(self, n: int, within_s: float) -> float:
        """Block until ``n`` replicas are ready; returns seconds waited.

        Raises:
            ReplicaError: not ready within ``within_s`` (message lists each replica's state and
                the last log lines of those not ready).
        """
        started = self.clock.now()
        while self.ready_replicas < n:
            if self.clock.now() - started > within_s:
                raise ReplicaError(self._not_ready_report(n, within_s))
            self.clock.sleep(0.2)
        return self.clock.now() - started

    def wait_terminated(self, within_s: float) -> None:
        """Block until every scale-down termination finished (bounded by ``within_s``)."""
        deadline = time.monotonic() + within_s
        for _, thread in list(self._terminating):
            thread.join(max(0.0, deadline - time.monotonic()))

    def stop(self, timeout_s: float | None = None) -> None:
        """Terminate every replica (in parallel, each with its grace period) and the monitor.

        Idempotent; safe on any exit path.
        """
        self._stop.set()
        with self._lock:
            live, self._replicas = self._replicas, []
            self.desired_replicas = 0
        for replica in live:
            self._terminate(replica, timeout_s=timeout_s)
        for _, thread in list(self._terminating):
            thread.join()
        if self._monitor is not None:
            self._monitor.join(timeout=5)
        self.events.close()

    # -- internals -----------------------------------------------------------------------
    def _taken_ordinals(self) -> set[int]:
        """Slots of the live replicas and of those whose termination is still in progress."""
        return ({r.ordinal for r in self._replicas}
                | {r.ordinal for r, thread in self._terminating if thread.is_alive()})

    def _start_replica(self, ordinal: int | None = None, replace: Replica | None = None) -> Replica:
        """Start one replica in slot ``ordinal`` (default: the lowest free one); lock held.

        ``replace``: the replica a liveness restart replaces (its list position, restart count).
        """
        replica_id = f"replica-{self._next_index:04d}"
        self._next_index += 1
        if ordinal is None:
            ordinal = lowest_free_ordinal(self._taken_ordinals())
        name = pod_name(self.name, ordinal)
        directory = self.layout.replica_dir(replica_id)
        directory.mkdir(parents=True, exist_ok=True)
        port = free_port()
        env = {**self.template.env, **self._image_env, POD_NAME_VAR: name}
        if self.template.kind == "command":
            if self.template.port_env is not None:
                env[self.template.port_env] = str(port)
            argv = list(expand_pod_fields(self.template.argv, env))
            if "PATH" in env:  # the image's PATH (a program built here) finds the command
                argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
        else:
            argv = [*expand_pod_fields(self.template.argv, {POD_NAME_VAR: name}),
                    "--replica-id", replica_id, "--metrics-port", str(port),
                    "--event-log", str(self.layout.replica_events(replica_id)),
                    "--store", str(self.store_dir)]
        process = ManagedProcess(replica_id, argv, env=env,
                                 log_path=self.layout.replica_log(replica_id))
        try:
            process.start()
        except Exception as exc:
            raise ReplicaError(f"{replica_id}: failed to start: {exc}") from exc
        replica = Replica(replica_id, process, port, directory, started_s=self.clock.now(),
                          ordinal=ordinal, pod_name=name,
                          instance_id=flag_value(argv, "--instance-id"))
        if self.template.liveness is not None:
            replica.liveness_due_s = (replica.started_s + self.template.liveness.initial_delay_s
                                      + self.template.liveness.period_s)
        if replace is not None:
            replica.restarts, replica.restart_of = replace.restarts + 1, replace.replica_id
            self._replicas[self._replicas.index(replace)] = replica
        else:
            self._replicas.append(replica)
        self.events.emit("replica_started", replica_id=replica_id, pid=process.pid,
                         metrics_port=port, ordinal=ordinal, pod_name=name,
                         instance_id=replica.instance_id, restart_of=replica.restart_of,
                         restarts=replica.restarts)
        return replica

    def _terminate(self, replica: Replica, timeout_s: float | None = None) -> None:
        replica.terminating = True
        grace = self.template.termination_grace_period_s if timeout_s is None else timeout_s
        self.events.emit("replica_terminating", replica_id=replica.replica_id,
                         graceful=self.graceful, grace_period_s=grace)

        def _reap() -> None:
            outcome = replica.process.stop(grace, graceful=self.graceful)
            self.events.emit("replica_stopped", replica_id=replica.replica_id, outcome=outcome,
                             exit_code=replica.process.poll())

        thread = threading.Thread(target=_reap, name=f"stop-{replica.replica_id}", daemon=True)
        self._terminating.append((replica, thread))
        thread.start()

    def _monitor_loop(self) -> None:
        live = self.template.liveness
        tick_s = self.template.readiness_period_s if live is None else min(
            self.template.readiness_period_s, live.period_s)
        while not self._stop.wait(tick_s):
            for replica in self.replicas():
                self._probe(replica)
                self._probe_liveness(replica)

    def _probe(self, replica: Replica) -> None:
        if replica.restarting:
            return  # its exit is the restart's: no replica_exited, no second replacement
        code = replica.process.poll()
        if code is not None:
            with self._lock:
                if replica not in self._replicas:
                    return
                self._replicas.remove(replica)
                self.events.emit("replica_exited", replica_id=replica.replica_id, exit_code=code,
                                 signal=exit_signal(code), log_tail=replica.process.tail(20))
                # an exit the run did not cause (a crash) is a warning; one it caused, info
                log.log(logging.INFO if replica.signalled else logging.WARNING, "%s",
                        replica.process.exit_report())
                replica.process.stop(0)
                if len(self._replicas) < self.desired_replicas and not self._stop.is_set():
                    # the ReplicaSet replaces a failed pod; a StatefulSet under the same name
                    self._start_replica(ordinal=replica.ordinal)
            return
        if replica.ready_s is None and self._passes_readiness(replica):
            replica.ready_s = self.clock.now()
            self.events.emit("replica_ready", replica_id=replica.replica_id,
                             cold_start_s=round(replica.ready_s - replica.started_s, 3))

    def _passes_readiness(self, replica: Replica) -> bool:
        """One readiness probe of ``replica`` (see the module docstring)."""
        if self.template.kind != "command":
            return probe_http(replica.metrics_port, self.template.readiness_path,
                              READINESS_PROBE_TIMEOUT_S)[0]
        probe = self.template.readiness
        if probe is None:
            members = self._group_members() if self._group_members is not None else None
            if members is None:
                return False
            with self._lock:
                ready = sum(1 for r in self._replicas if r.ready_s is not None)
                first_unready = next((r for r in self._replicas if r.ready_s is None), None)
            return first_unready is replica and members > ready
        return self._run_probe(replica, probe)

    def _run_probe(self, replica: Replica, probe: ProbeCheck) -> bool:
        port = (replica.metrics_port if probe.port == self.template.container_port
                and self.template.port_env is not None else probe.port)
        env = {**self.template.env, POD_NAME_VAR: replica.pod_name}
        if self.template.port_env is not None:
            env[self.template.port_env] = str(replica.metrics_port)
        return run_probe(probe.kind, port=port, path=probe.path, timeout_s=probe.timeout_s,
                         command=expand_pod_fields(probe.command, env), env=env)[0]

    def _probe_liveness(self, replica: Replica) -> None:
        """One liveness probe of ``replica`` if one is due; restarts it at the threshold."""
        live = self.template.liveness
        now = self.clock.now()
        if (live is None or replica.terminating or replica.restarting
                or now < replica.liveness_due_s or replica.process.poll() is not None):
            return
        replica.liveness_due_s += live.period_s  # on schedule, as a prober's ticker
        if replica.liveness_due_s <= now:
            replica.liveness_due_s = now + live.period_s
        if self.template.kind == "command" and isinstance(live.probe, ProbeCheck):
            ok, text = self._run_probe(replica, live.probe), f"{live.probe.kind} probe failed"
        else:
            ok, text = probe_http(replica.metrics_port, live.path, live.timeout_s)
        if ok:
            replica.liveness_failures, replica.liveness_failing_since_s = 0, None
            return
        replica.liveness_failures += 1
        replica.liveness_reason = text
        if replica.liveness_failing_since_s is None:
            replica.liveness_failing_since_s = now
        if replica.liveness_failures >= live.failure_threshold:
            self._restart(replica)

    def _restart(self, replica: Replica) -> None:
        """Restart ``replica``'s container: stop it in a background thread (SIGTERM, grace,
        SIGKILL), then start its successor in the same slot and list position."""
        live = self.template.liveness
        assert live is not None
        with self._lock:
            if (replica not in self._replicas or replica.terminating or replica.restarting
                    or self._stop.is_set()):
                return
            replica.restarting = True
        grace = (self.template.termination_grace_period_s
                 if live.termination_grace_period_s is None else live.termination_grace_period_s)
        failing_for = self.clock.now() - (replica.liveness_failing_since_s or self.clock.now())
        self.events.emit("replica_liveness_failed", replica_id=replica.replica_id,
                         failures=replica.liveness_failures, reason=replica.liveness_reason,
                         failing_for_s=round(failing_for, 3), ordinal=replica.ordinal,
                         pod_name=replica.pod_name)
        log.warning("%s (%s): liveness probe failed %d times in a row (%s); restarting it",
                    replica.replica_id, replica.pod_name, replica.liveness_failures,
                    replica.liveness_reason)
        self.events.emit("replica_terminating", replica_id=replica.replica_id,
                         graceful=self.graceful, grace_period_s=grace, reason="liveness")

        def _run() -> None:
            outcome = replica.process.stop(grace, graceful=self.graceful)
            self.events.emit("replica_stopped", replica_id=replica.replica_id, outcome=outcome,
                             exit_code=replica.process.poll(), reason="liveness")
            with self._lock:
                if replica not in self._replicas or self._stop.is_set():
                    return  # scaled away or stopped meanwhile: nothing to restart
                try:
                    self._start_replica(ordinal=replica.ordinal, replace=replica)
                except ReplicaError as exc:
                    self._replicas.remove(replica)
                    self.events.emit("replica_restart_failed", replica_id=replica.replica_id,
                                     error=str(exc))
                    log.warning("%s: restart failed: %s", replica.replica_id, exc)

        thread = threading.Thread(target=_run, name=f"restart-{replica.replica_id}", daemon=True)
        self._terminating.append((replica, thread))
        thread.start()

    def _not_ready_report(self, n: int, within_s: float) -> str:
        lines = [f"{self.name}: {self.ready_replicas} of {n} replicas ready after "
                 f"{within_s:.0f} s; raise the timeout or check the replica logs"]
        for r in self.replicas():
            code = r.process.poll()
            how = "running" if code is None else describe_exit(code)
            state = "ready" if r.ready else f"not ready ({how})"
            lines.append(f"  {r.replica_id}: {state}")
            if not r.ready:
                lines.extend(f"    | {line}" for line in r.process.tail(20))
        return "\n".join(lines)


def template_from_deployment(deployment: "DeploymentConfig", bootstrap_servers: str, *,
                             flag_overrides: Mapping[str, str] | None = None,
                             python: str | None = None,
                             connection: Mapping[str, str] | None = None) -> ReplicaTemplate:
    """Turn the committed Deployment into a process template for this machine.

    The replica program (``spark_consumer``): the container's ``python`` becomes this
    interpreter, ``--bootstrap`` becomes the running broker, the per-replica flags
    (:data:`~pytest_lagscale.contract.flags.PLATFORM_FLAGS`: pods differ by IP, local replicas
    by port and path) are left to :class:`LocalDeployment`, and ``flag_overrides`` (e.g.
    ``{"--engine": "arrow"}``) replace or add flags. A command consumer: its command and args
    as written, its env with ``KAFKA_BOOTSTRAP`` set to the broker and ``connection``
    (``{"KAFKA_TOPIC": ..., "KAFKA_GROUP": ...}``) applied; flags are not touched.

    Args:
        deployment: the loaded ``k8s/consumer-deployment.yaml``.
        bootstrap_servers: the broker the replicas must join.
        flag_overrides: ``{"--flag": "value"}`` applied last (the replica program only).
        python: interpreter for ``python`` in the command (default ``sys.executable``).
        connection: env values a command consumer gets from the run (topic, group, ...).
    """
    import sys

    if deployment.command is not None:
        return _command_template(deployment, bootstrap_servers, dict(connection or {}),
                                 dict(flag_overrides or {}))
    command_len = len(deployment.argv) - len(_args_of(deployment))
    command = [python or sys.executable if part in ("python", "python3") else part
               for part in deployment.argv[:command_len]]
    flags: dict[str, str] = {}
    for arg in deployment.argv[command_len:]:
        key, _, value = arg.partition("=")
        flags[key] = value
    for key in PLATFORM_FLAGS:
        flags.pop(key, None)
    flags["--bootstrap"] = bootstrap_servers
    flags.update(flag_overrides or {})
    argv = tuple(command) + tuple(f"{k}={v}" for k, v in flags.items())
    assert deployment.readiness is not None
    return ReplicaTemplate(
        argv=argv, env=dict(deployment.env),
        termination_grace_period_s=float(deployment.termination_grace_period_s),
        readiness_path=deployment.readiness.path,
        readiness_period_s=min(1.0, float(deployment.readiness.period_s)),
        cpu_request_millicores=deployment.cpu_request_millicores,
        manifest=deployment.source,
        liveness=_liveness_check(deployment))


def _command_template(deployment: "DeploymentConfig", bootstrap_servers: str,
                      connection: dict[str, str], overrides: dict[str, str]) -> ReplicaTemplate:
    """A command consumer's template: ``overrides`` ``{arg key: value}`` rewrite the args
    written ``key=value`` (the plan's ``--balancer``), nothing else of its command changes."""
    command = deployment.command
    assert command is not None
    env = {**deployment.env, "KAFKA_BOOTSTRAP": bootstrap_servers, **connection}
    args = tuple(_override(arg, overrides) for arg in command.raw_args)
    probe = deployment.readiness
    return ReplicaTemplate(
        argv=args, env=env,
        termination_grace_period_s=float(deployment.termination_grace_period_s),
        readiness_period_s=min(1.0, float(probe.period_s)) if probe is not None else 1.0,
        cpu_request_millicores=deployment.cpu_request_millicores,
        manifest=deployment.source, liveness=_liveness_check(deployment), kind="command",
        readiness=_probe_check(probe), port_env=command.port_env, container_port=command.port,
        image=deployment.image)


def _override(arg: str, overrides: Mapping[str, str]) -> str:
    """``key=value`` with the value of ``overrides[key]`` when there is one; else ``arg``."""
    key, eq, _ = arg.partition("=")
    return f"{key}={overrides[key]}" if eq and key in overrides else arg


def _probe_check(probe: Any) -> ProbeCheck | None:
    if probe is None:
        return None
    return ProbeCheck(kind=probe.kind, port=probe.port, path=probe.path or "/",
                      command=tuple(probe.command), timeout_s=float(probe.timeout_s))


def _liveness_check(deployment: "DeploymentConfig") -> LivenessCheck | None:
    """The Deployment's livenessProbe as a :class:`LivenessCheck` (None without one)."""
    probe = getattr(deployment, "liveness", None)
    if probe is None:
        return None
    grace = probe.termination_grace_period_s
    return LivenessCheck(path=probe.path, period_s=float(probe.period_s),
                         failure_threshold=int(probe.failure_threshold),
                         timeout_s=float(probe.timeout_s),
                         initial_delay_s=float(probe.initial_delay_s),
                         termination_grace_period_s=None if grace is None else float(grace),
                         probe=_probe_check(probe) if deployment.command is not None else None)


def _args_of(deployment: "DeploymentConfig") -> list[str]:
    """The ``--flag=value`` tail of the container's argv (everything from the first flag)."""
    for i, part in enumerate(deployment.argv):
        if part.startswith("--"):
            return list(deployment.argv[i:])
    return []
