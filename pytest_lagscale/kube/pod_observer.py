"""What the kubelet did to the run's pods, read from the API: the ``--node kubelet`` events.

With a real kubelet the harness starts and stops nothing itself: :class:`PodObserver` lists
the Deployment's pods every ``period_s`` seconds and turns what changed into the events the
analysis reads from the node agent (the same names, so a run reads the same on both nodes),
each with the pod's name as the replica id and the kubelet's own facts:

* ``replica_started``: the consumer container is running (its ``containerd://`` id, the
  kubelet's ``startedAt``, the pod's ``PodScheduled`` time);
* ``replica_ready``: the pod's ``Ready`` condition turned True (the kubelet's probe results);
  ``cold_start_s`` from ``replica_started`` on the run's clock;
* ``replica_terminating``: the pod has a ``deletionTimestamp`` (its grace period);
* ``replica_stopped``: the container terminated or the pod is gone, with the kubelet's exit
  code and reason (``outcome`` ``terminated`` after the SIGTERM, ``killed`` on 137, ``gone``
  when the pod went before its container's end was seen);
* ``replica_exited`` and ``replica_restarted``: the container ended while its pod stayed, and
  the kubelet started a new one (``restartCount``, the new container id).

A replica's metrics port is the one it wrote to its port file
(:data:`~.pod_template.PORT_FILE`); :meth:`PodObserver.signal` signals its container through
containerd (``ctr tasks kill``). Times are observations on the run's clock, up to ``period_s``
late; the kubelet's timestamps (whole seconds) are kept beside them.
"""

from __future__ import annotations

import signal as signals
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..contract.clock import Clock, RealClock
from ..contract.eventlog import EventLog
from ..lifecycle import StartStop
from .pod_template import PORT_FILE

PERIOD_S = 0.25


@dataclass
class PodRecord:
    """One pod of the run as the observer last saw it.

    Attributes:
        replica_id: the pod's name (also ``pod_name``).
        uid: the pod's UID.
        container_ids: every ``containerd://`` id its consumer container had, oldest first.
        restarts: the kubelet's ``restartCount``.
        metrics_port: the port the replica wrote, None until it did.
        started_s, ready_s: run-clock times of the first running and Ready observations.
        terminating: the pod has a deletionTimestamp.
        running: the consumer container is running.
        stopped: ``replica_stopped`` was written.
        facts: the kubelet's timestamps and exit (for the benchmark JSON).
    """

    replica_id: str
    uid: str
    container_ids: list[str] = field(default_factory=list)
    restarts: int = 0
    metrics_port: int | None = None
    started_s: float | None = None
    ready_s: float | None = None
    terminating: bool = False
    running: bool = False
    stopped: bool = False
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def pod_name(self) -> str:
        return self.replica_id

    @property
    def container_id(self) -> str | None:
        return self.container_ids[-1] if self.container_ids else None

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.replica_id, "uid": self.uid, "container_ids": self.container_ids,
                "restarts": self.restarts, **self.facts}


def _consumer_status(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return statuses[0] if statuses else None


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or []
                 if c.get("type") == kind), None)


def stop_outcome(exit_code: int | None) -> str:
    """How a terminating pod's container ended, in the node agent's words: ``killed`` for 137
    (the kubelet's SIGKILL at the grace period's end), ``terminated`` otherwise (it exited after
    the SIGTERM: 0, or 143)."""
    return "killed" if exit_code == 128 + signals.SIGKILL else "terminated"


class PodObserver(StartStop):
    """Turns the run's pods, as the kubelet runs them, into replica events.

    Args:
        api: a ``kubernetes.client.ApiClient``.
        namespace, selector: the run namespace and the Deployment's ``matchLabels``.
        replicas_dir: the run's replica directory (each pod's port file).
        events: the platform event log.
        socket: the node's containerd socket (for :meth:`signal`); None on a cluster whose
            nodes are other machines (no signals).
        metrics_port: every pod's metrics port (a cluster's pods each have their own address);
            None: each replica's port file.
        clock: time source; ``period_s`` seconds between two lists.
    """

    def __init__(self, api: Any, namespace: str, selector: Mapping[str, str],
                 replicas_dir: Path, events: EventLog, socket: Path | None, *,
                 metrics_port: int | None = None, clock: Clock | None = None,
                 period_s: float = PERIOD_S):
        from kubernetes import client

        self.api = api
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.selector = ",".join(f"{k}={v}" for k, v in selector.items())
        self.replicas_dir = replicas_dir
        self.events = events
        self.socket = socket
        self.metrics_port = metrics_port
        self.clock = clock or RealClock()
        self.period_s = period_s
        self.errors = 0
        self._pods: dict[str, PodRecord] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what the platform reads ------------------------------------------------------------
    def replicas(self) -> list[PodRecord]:
        """Pods whose consumer container runs and that are not terminating, oldest first."""
        with self._lock:
            return [p for p in self._pods.values() if p.running and not p.terminating]

    def by_replica_id(self, replica_id: str) -> PodRecord | None:
        with self._lock:
            return next((p for p in self._pods.values() if p.replica_id == replica_id), None)

    def pods(self) -> list[dict[str, Any]]:
        """Every pod seen, as JSON (name, uid, container ids, restarts, the kubelet's times)."""
        with self._lock:
            return [p.to_json() for p in self._pods.values()]

    def live_pod_count(self) -> int:
        with self._lock:
            return sum(1 for p in self._pods.values() if not p.stopped)

    def signal(self, replica_id: str, signum: int) -> None:
        """Send ``signum`` to the replica's container through containerd.

        Raises:
            ValueError: no running container for ``replica_id``, or no containerd socket (a
                cluster's node).
            RuntimeError: ctr failed (its message).
        """
        if self.socket is None:
            raise ValueError(f"{replica_id}: its container is on a cluster node, not signalled "
                             "from here")
        record = self.by_replica_id(replica_id)
        if record is None or record.container_id is None:
            raise ValueError(f"{replica_id}: no container")
        cid = record.container_id.split("://", 1)[-1]
        done = subprocess.run(["ctr", "--address", str(self.socket), "--namespace", "k8s.io",
                               "tasks", "kill", "--signal", str(int(signum)), cid],
                              capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            raise RuntimeError(f"ctr tasks kill {cid}: {done.stderr.strip()}")

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> "PodObserver":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="lagscale-pod-observer",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop listing (one last list first, so the final stops are written). Idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.observe_once()
        except Exception as exc:  # the API may be gone already; recorded
            self.events.emit("pod_observer_error", error=f"{type(exc).__name__}: {exc}")

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self.observe_once()
            except Exception as exc:  # the next list retries; the failure is in the event log
                self.errors += 1
                self.events.emit("pod_observer_error", error=f"{type(exc).__name__}: {exc}")

    # -- one observation --------------------------------------------------------------------
    def observe_once(self) -> None:
        """List the pods and write the events of what changed since the last list."""
        listed = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector)
        pods = self.api.sanitize_for_serialization(listed).get("items") or []
        seen = set()
        with self._lock:
            for pod in pods:
                meta = pod.get("metadata") or {}
                uid = str(meta.get("uid"))
                seen.add(uid)
                record = self._pods.get(uid)
                if record is None:
                    record = self._pods[uid] = PodRecord(str(meta.get("name")), uid)
                self._update(record, pod)
            for uid, record in self._pods.items():
                if uid not in seen and not record.stopped:
                    self._stopped(record, None, "pod deleted")

    def _update(self, record: PodRecord, pod: Mapping[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        now = self.clock.now()
        scheduled = _condition(pod, "PodScheduled")
        if scheduled and scheduled.get("status") == "True":
            record.facts.setdefault("scheduled_at", scheduled.get("lastTransitionTime"))
        status = _consumer_status(pod) or {}
        state = status.get("state") or {}
        cid = status.get("containerID")
        restarts = int(status.get("restartCount") or 0)
        if "running" in state and cid:
            if cid not in record.container_ids:
                if record.running:  # the end fell between two lists: the kubelet's lastState
                    self._exited(record, record.container_id,
                                 (status.get("lastState") or {}).get("terminated") or {})
                record.container_ids.append(cid)
                record.restarts = restarts
                record.running, record.stopped = True, False
                fields = dict(replica_id=record.replica_id, pod_name=record.replica_id,
                              pod_uid=record.uid, container_id=cid, restart_count=restarts,
                              started_at=state["running"].get("startedAt"), pid=None,
                              metrics_port=None, ordinal=None, instance_id=None)
                if record.started_s is None:
                    record.started_s = now
                    record.facts["started_at"] = state["running"].get("startedAt")
                    self.events.emit("replica_started", **fields)
                else:
                    self.events.emit("replica_restarted", **fields)
        elif "terminated" in state and record.running:
            record.running = False
            end = state["terminated"]
            if record.terminating:
                self._stopped(record, end, None)
            else:
                self._exited(record, cid, end)
        if record.metrics_port is None and record.running and self.metrics_port is not None:
            record.metrics_port = self.metrics_port
        elif record.metrics_port is None and record.running:
            record.metrics_port = _read_port(self.replicas_dir / record.replica_id / PORT_FILE)
        ready = _condition(pod, "Ready")
        if (ready and ready.get("status") == "True" and record.ready_s is None
                and record.started_s is not None):
            record.ready_s = now
            record.facts["ready_at"] = ready.get("lastTransitionTime")
            self.events.emit("replica_ready", replica_id=record.replica_id,
                             pod_name=record.replica_id,
                             cold_start_s=round(now - record.started_s, 3),
                             ready_at=ready.get("lastTransitionTime"))
        if meta.get("deletionTimestamp") and not record.terminating:
            record.terminating = True
            grace = meta.get("deletionGracePeriodSeconds")
            self.events.emit("replica_terminating", replica_id=record.replica_id,
                             pod_name=record.replica_id, graceful=bool(grace),
                             grace_period_s=grace)

    def _exited(self, record: PodRecord, cid: str | None, end: Mapping[str, Any]) -> None:
        self.events.emit("replica_exited", replica_id=record.replica_id,
                         pod_name=record.replica_id, container_id=cid,
                         exit_code=end.get("exitCode"), reason=end.get("reason"),
                         signal=None, log_tail=None)

    def _stopped(self, record: PodRecord, end: Mapping[str, Any] | None, why: str | None) -> None:
        record.stopped, record.running = True, False
        code = None if end is None else end.get("exitCode")
        record.facts.update(exit_code=code, finished_at=None if end is None
                            else end.get("finishedAt"), reason=why if end is None
                            else end.get("reason"))
        self.events.emit("replica_stopped", replica_id=record.replica_id,
                         outcome=stop_outcome(code) if end is not None else "gone",
                         exit_code=code, reason=record.facts["reason"],
                         container_id=record.container_id)


def _read_port(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None

