"""The node agent: the kubelet of the local control plane, running pods as replica processes.

No kubelet runs on the local control plane, so the Deployment's pods would stay ``Pending``.
:class:`NodeAgent` is a thread of the harness that lists the run namespace's pods matching the
Deployment's selector every ``period_s`` seconds, asks :func:`.node_sync.sync` what a kubelet
would do, and does it with the ``kubernetes`` client:

* ``start``: bind the pod to the node ``lagscale-local`` (``pods/binding``), read it into a
  replica command line with the local platform's per-replica flags
  (:func:`.pod_replica.replica_spec`), start it as a
  :class:`~pytest_lagscale.process.ManagedProcess`, patch the pod ``Running``;
* ``report_ready``: patch the ``Ready``/``ContainersReady`` conditions from the replica's
  readiness (probed every ``min(1 s, periodSeconds)``, like the local platform; a command
  consumer, docs/byo-consumer.md, by its own probe or by group membership);
* ``terminate``: a pod being deleted: SIGTERM, SIGKILL after its grace period (a thread);
* ``final_delete``: once the process is gone, delete the pod (grace 0, UID precondition);
* ``report_failed``: a replica that exited on its own: phase ``Failed``, then delete;
* ``forget``: a pod gone from the API: kill its process if it still runs.

The agent writes the local platform's events (``replica_started``, ``replica_ready``,
``replica_terminating``, ``replica_stopped``, ``replica_exited``) with the pod's name, so the
analysis reads a kubernetes run as it reads a local one. :meth:`NodeAgent.stop` stops every
process it started (each within its grace period) on every exit path.

Polling, not a watch (a list cannot miss an event the way a broken watch can).

Source: kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle ("Termination of Pods");
kubernetes pkg/kubelet/status/status_manager.go (the final delete).
"""

from __future__ import annotations

import datetime as dt
import shutil
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..contract.clock import Clock, RealClock
from ..contract.rundir import RunDir
from ..contract.eventlog import EventLog
from ..exit_status import exit_signal
from ..kafka.embedded import free_port
from ..lifecycle import StartStop
from ..process import ManagedProcess
from ..wait import probe_ready, run_probe
from . import node_sync
from . import pod_replica as pr

PERIOD_S = 0.25
PROBE_TIMEOUT_S = 0.5


@dataclass
class PodProcess:
    """One pod's replica process.

    Attributes:
        replica_id: ``replica-0001``, ... in start order.
        pod: ``namespace/name``; ``pod_name`` the name alone.
        spec: the pod read into a replica.
        process: the running process.
        metrics_port: its loopback metrics/readiness port.
        started_s: monotonic start; ``ready_s`` when first ready.
        terminating: SIGTERM sent because the pod is being deleted.
        probe_ready: the last readiness answer (None: not probed yet).
        reported_failed: the pod was marked Failed (waiting for it to go).
    """

    replica_id: str
    pod: str
    pod_name: str
    spec: pr.ReplicaSpec
    process: ManagedProcess
    metrics_port: int
    started_s: float
    started_at: dt.datetime
    ready_s: float | None = None
    terminating: bool = False
    probe_ready: bool | None = None
    reported_failed: bool = False
    last_probe_s: float = -1e9

    @property
    def ready(self) -> bool:
        """Probe passed and not terminating (the pod's Ready condition as the agent sets it)."""
        return bool(self.probe_ready) and not self.terminating

    def state(self) -> node_sync.ReplicaState:
        code = self.process.poll()
        return node_sync.ReplicaState(running=code is None, exit_code=code,
                                      terminating=self.terminating, probe_ready=self.probe_ready)


class NodeAgent(StartStop):
    """Runs the pods of one Deployment as local replica processes.

    Args:
        api: a ``kubernetes.client.ApiClient`` (the admin's).
        namespace: the run namespace.
        selector: the Deployment's ``matchLabels``.
        layout: the run directory (replica logs and event logs, the shared store).
        events: the platform event log.
        clock: time source (monotonic seconds).
        graceful: False: a pod's deletion SIGKILLs at once (experiment 6's "no graceful drain").
        python: the interpreter replacing ``python`` in pod commands.
        period_s: seconds between two syncs.
        image_env: the env of the pods' image (a command consumer's program built here:
            :func:`~pytest_lagscale.platform.image.prepare_command_image`), under each pod's.

    Raises (from the thread, recorded as ``node_agent_error`` events): nothing escapes; a
    failed API call is retried at the next sync.
    """

    def __init__(self, api: Any, namespace: str, selector: Mapping[str, str], layout: RunDir,
                 events: EventLog, *, clock: Clock | None = None, graceful: bool = True,
                 python: str | None = None, period_s: float = PERIOD_S,
                 image_env: Mapping[str, str] | None = None):
        from kubernetes import client

        self.api = api
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.selector = dict(selector)
        self.layout = layout
        self.events = events
        self.clock = clock or RealClock()
        self.graceful = graceful
        self.python = python or sys.executable
        self.period_s = period_s
        self.image_env = dict(image_env or {})
        self._group_members: Callable[[], int | None] | None = None
        self._pods: dict[str, PodProcess] = {}
        self._reaping: list[threading.Thread] = []
        self._next_index = 1
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0
        self._handlers: dict[str, Callable[[node_sync.Action, Any], None]] = {
            "start": self._start, "report_ready": self._report_ready,
            "terminate": self._terminate_action, "final_delete": self._final_delete,
            "report_failed": self._report_failed, "forget": self._forget}

    # -- what the platform reads ------------------------------------------------------------
    def replicas(self) -> list[PodProcess]:
        """Live (running, not terminating) replicas, oldest first."""
        with self._lock:
            return [p for p in self._pods.values()
                    if not p.terminating and p.process.poll() is None]

    def by_replica_id(self, replica_id: str) -> PodProcess | None:
        with self._lock:
            return next((p for p in self._pods.values() if p.replica_id == replica_id), None)

    def wait_terminated(self, within_s: float) -> None:
        """Join the termination threads (bounded by ``within_s`` seconds in total)."""
        deadline = self.clock.now() + within_s
        for thread in list(self._reaping):
            thread.join(max(0.0, deadline - self.clock.now()))

    def use_group_membership(self, members: Callable[[], int | None]) -> None:
        """Readiness of a command consumer without a readiness probe: ``members()`` is the
        number of group members holding partitions (None when unknown); that many live pods,
        oldest first, are ready (pods share this host, so members are counted, not matched)."""
        self._group_members = members

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "NodeAgent":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="lagscale-node-agent",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop syncing, then stop every process (each within its grace period, in parallel)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            pods = list(self._pods.values())
        for pod in pods:
            if pod.process.poll() is None and not pod.terminating:
                self._terminate(pod, pod.spec.termination_grace_period_s
                                if timeout_s is None else timeout_s)
        for thread in list(self._reaping):
            thread.join()

    # -- the loop -------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except Exception as exc:  # the next sync retries; the failure is in the event log
                self.errors += 1
                self.events.emit("node_agent_error", error=f"{type(exc).__name__}: {exc}")
            self._stop.wait(self.period_s)

    def sync_once(self) -> list[node_sync.Action]:
        """One sync: list the pods, probe the replicas due, execute the actions; returns them."""
        selector = ",".join(f"{k}={v}" for k, v in self.selector.items())
        listed = self.core.list_namespaced_pod(self.namespace, label_selector=selector)
        pods = self.api.sanitize_for_serialization(listed).get("items") or []
        by_uid = {str((p.get("metadata") or {}).get("uid")): p for p in pods}
        self._probe_due()
        with self._lock:
            states = {uid: p.state() for uid, p in self._pods.items()}
        actions = node_sync.sync(pods, states, self.selector)
        for action in actions:
            if self._stop.is_set():
                break
            self._execute(action, by_uid.get(action.uid))
        return actions

    def _probe_due(self) -> None:
        now = self.clock.now()
        live = self.replicas()
        for rank, pod in enumerate(live):
            if now - pod.last_probe_s < min(1.0, pod.spec.readiness_period_s):
                continue
            pod.last_probe_s = now
            ok = self._passes_readiness(pod, rank)
            pod.probe_ready = ok
            if ok and pod.ready_s is None:
                pod.ready_s = self.clock.now()
                self.events.emit("replica_ready", replica_id=pod.replica_id, pod_name=pod.pod_name,
                                 cold_start_s=round(pod.ready_s - pod.started_s, 3))

    def _passes_readiness(self, pod: PodProcess, rank: int) -> bool:
        """One readiness probe of ``pod``, the ``rank``-th live pod (oldest first)."""
        spec = pod.spec
        if spec.kind != "command":
            return spec.readiness_path is None or probe_ready(pod.metrics_port,
                                                              spec.readiness_path, PROBE_TIMEOUT_S)
        probe = spec.readiness
        if probe is None:  # as the local platform: once a member, ready for good
            if pod.ready_s is not None:
                return True
            members = self._group_members() if self._group_members is not None else None
            ready = sum(1 for p in self.replicas() if p.ready_s is not None)
            return members is not None and rank == ready and members > ready
        return run_probe(probe.kind, port=probe.port, path=probe.path, command=probe.command,
                         env={**self.image_env, **spec.env}, timeout_s=probe.timeout_s)[0]

    def _execute(self, action: node_sync.Action, pod: Mapping[str, Any] | None) -> None:
        self._handlers[action.kind](action, pod)

    # -- actions --------------------------------------------------------------------------
    def _start(self, action: node_sync.Action, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        port = free_port()
        spec = pr.replica_spec(pod, python=self.python, port=port)
        if action.bind:
            # the python client cannot deserialize a Binding's answer (its 'target' is absent)
            self.core.create_namespaced_binding(meta["namespace"], pr.binding(pod),
                                                _preload_content=False)
        with self._lock:
            replica_id = f"replica-{self._next_index:04d}"
            self._next_index += 1
        self.layout.replica_dir(replica_id).mkdir(parents=True, exist_ok=True)
        self.layout.store.mkdir(parents=True, exist_ok=True)
        env = {**self.image_env, **spec.env}
        if spec.kind == "command":
            argv = list(spec.argv)
            if "PATH" in env:  # the image's PATH (a program built here) finds the command
                argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
        else:
            argv = list(pr.replica_argv(spec, {
                "--replica-id": replica_id, "--metrics-port": str(port),
                "--event-log": str(self.layout.replica_events(replica_id)),
                "--store": str(self.layout.store)}))
        process = ManagedProcess(replica_id, argv, env=env,
                                 log_path=self.layout.replica_log(replica_id))
        process.start()
        started_at = dt.datetime.now(dt.timezone.utc)
        record = PodProcess(replica_id, action.name, meta["name"], spec, process, port,
                            started_s=self.clock.now(), started_at=started_at)
        with self._lock:
            self._pods[action.uid] = record
        self.events.emit("replica_started", replica_id=replica_id, pid=process.pid,
                         metrics_port=port, pod_name=meta["name"], pod_uid=action.uid,
                         ordinal=None, instance_id=None)
        self.core.patch_namespaced_pod_status(meta["name"], meta["namespace"],
                                              pr.running_status(spec, started_at))

    def _report_ready(self, action: node_sync.Action, pod: Mapping[str, Any]) -> None:
        record = self._pods.get(action.uid)
        if record is None:
            return
        body = pr.ready_patch(pod, record.spec, bool(action.ready),
                              dt.datetime.now(dt.timezone.utc))
        if body is not None:
            meta = pod["metadata"]
            self.core.patch_namespaced_pod_status(meta["name"], meta["namespace"], body)

    def _terminate_action(self, action: node_sync.Action, pod: Mapping[str, Any]) -> None:
        record = self._pods.get(action.uid)
        if record is not None:
            self._terminate(record, float(action.grace_s or 0.0))

    def _terminate(self, record: PodProcess, grace_s: float) -> None:
        record.terminating = True
        self.events.emit("replica_terminating", replica_id=record.replica_id,
                         pod_name=record.pod_name, graceful=self.graceful, grace_period_s=grace_s)

        def reap() -> None:
            outcome = record.process.stop(grace_s, graceful=self.graceful)
            self.events.emit("replica_stopped", replica_id=record.replica_id, outcome=outcome,
                             exit_code=record.process.poll())

        thread = threading.Thread(target=reap, name=f"stop-{record.replica_id}", daemon=True)
        self._reaping.append(thread)
        thread.start()

    def _final_delete(self, action: node_sync.Action, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        self._delete(meta, pr.final_delete_options(pod))
        with self._lock:
            self._pods.pop(action.uid, None)

    def _report_failed(self, action: node_sync.Action, pod: Mapping[str, Any]) -> None:
        record = self._pods.get(action.uid)
        if record is None or record.reported_failed:
            return
        record.reported_failed = True
        code = record.process.poll()
        self.events.emit("replica_exited", replica_id=record.replica_id, pod_name=record.pod_name,
                         exit_code=code, signal=exit_signal(code),
                         log_tail=record.process.tail(20))
        record.process.stop(0)
        meta = pod["metadata"]
        self.core.patch_namespaced_pod_status(
            meta["name"], meta["namespace"],
            pr.failed_status(record.spec, int(code if code is not None else -1),
                             record.started_at, dt.datetime.now(dt.timezone.utc)))
        self._delete(meta, pr.final_delete_options(pod))
        with self._lock:
            self._pods.pop(action.uid, None)

    def _forget(self, action: node_sync.Action, pod: Any) -> None:
        with self._lock:
            record = self._pods.pop(action.uid, None)
        if record is not None and record.process.poll() is None and not record.terminating:
            self._terminate(record, 0.0)

    def _delete(self, meta: Mapping[str, Any], options: Mapping[str, Any]) -> None:
        from kubernetes.client import V1DeleteOptions, V1Preconditions
        from kubernetes.client.exceptions import ApiException

        body = V1DeleteOptions(grace_period_seconds=options["gracePeriodSeconds"],
                               preconditions=V1Preconditions(uid=options["preconditions"]["uid"]))
        try:
            self.core.delete_namespaced_pod(meta["name"], meta["namespace"], body=body)
        except ApiException as exc:
            if exc.status not in (404, 409):  # gone already, or a later pod of the same name
                raise
