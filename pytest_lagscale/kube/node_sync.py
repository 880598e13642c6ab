"""The node agent's decisions: what to do for each pod, given the pods and the replica processes.

Pure: :func:`sync` compares the pods the apiserver has (the API's JSON, as a watch or list
gives them) with what the agent runs (:class:`ReplicaState` per pod UID) and returns the
actions a kubelet would take, in order. The agent's loop (:class:`~pytest_lagscale.kube.node_agent.NodeAgent`)
executes them: it binds and starts, probes, signals, patches status and deletes, then calls
:func:`sync` again on the next event or tick.

Rules (a kubelet's, reduced to one container per pod and no restarts in place):

* a pod of the Deployment (selector match), not being deleted, with no replica -> ``start``
  (bind it to the node if ``spec.nodeName`` is empty, start the process, patch Running);
* a running replica whose probe answer differs from the pod's ``Ready`` condition ->
  ``report_ready``;
* a pod being deleted (``deletionTimestamp``) whose replica runs and was not yet signalled ->
  ``terminate`` with the pod's grace period (SIGTERM now, SIGKILL after it);
* a pod being deleted whose replica has exited (or never started) -> ``final_delete``;
* a replica that exited while its pod was not being deleted -> ``report_failed`` (phase
  Failed with the exit code, then delete: the ReplicaSet replaces it);
* a replica whose pod is gone from the API -> ``forget`` (kill it if still running).

Source: kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle ("Termination of Pods",
"Pod conditions"); kubernetes pkg/controller/replicaset (Failed pods are not active).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping

from . import pod_replica as pr

ActionKind = Literal["start", "report_ready", "terminate", "final_delete", "report_failed", "forget"]


@dataclass(frozen=True)
class ReplicaState:
    """What the agent knows of the replica process of one pod.

    Attributes:
        running: the process is alive.
        exit_code: its exit code once it exited, else None.
        terminating: SIGTERM was sent because the pod is being deleted.
        probe_ready: the last readiness answer (None: not probed yet).
    """

    running: bool = True
    exit_code: int | None = None
    terminating: bool = False
    probe_ready: bool | None = None


@dataclass(frozen=True)
class Action:
    """One thing to do.

    Attributes:
        kind: see the module docstring.
        uid, name: the pod's UID and ``namespace/name``.
        bind: for ``start``: the pod has no node yet.
        ready: for ``report_ready``: the value to report.
        grace_s: for ``terminate``: seconds before SIGKILL.
        exit_code: for ``report_failed``.
    """

    kind: ActionKind
    uid: str
    name: str
    bind: bool = False
    ready: bool | None = None
    grace_s: float | None = None
    exit_code: int | None = None


def sync(pods: Iterable[Mapping[str, Any]], replicas: Mapping[str, ReplicaState],
         selector: Mapping[str, str]) -> list[Action]:
    """The actions for ``pods`` (the namespace's pods) and ``replicas`` (by pod UID).

    Returns:
        Actions in pod order, then ``forget`` for replicas whose pod is gone (UID order).
    """
    actions: list[Action] = []
    seen: set[str] = set()
    for pod in pods:
        if not pr.matches_selector(pod, selector):
            continue
        meta = pod.get("metadata") or {}
        uid, name = str(meta.get("uid", "")), pr.pod_id(pod)
        seen.add(uid)
        state = replicas.get(uid)
        deleting = pr.is_terminating(pod)
        if state is None:
            if deleting:
                actions.append(Action("final_delete", uid, name))
            elif (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                actions.append(Action("start", uid, name,
                                      bind=not (pod.get("spec") or {}).get("nodeName")))
            continue
        if deleting:
            if state.running and not state.terminating:
                actions.append(Action("terminate", uid, name, grace_s=pr.termination_grace_s(pod)))
            elif not state.running:
                actions.append(Action("final_delete", uid, name))
            continue
        if not state.running:
            actions.append(Action("report_failed", uid, name, exit_code=state.exit_code))
            continue
        if state.probe_ready is not None and pr.current_ready(pod) is not state.probe_ready:
            actions.append(Action("report_ready", uid, name, ready=state.probe_ready))
    actions += [Action("forget", uid, "") for uid in sorted(set(replicas) - seen)]
    return actions
