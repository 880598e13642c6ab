"""``rolling_restart``: restart every live replica one at a time, oldest first, as a rolling
update of a StatefulSet does (experiment 3's static-membership variant).

Per replica: SIGTERM (the replica drains: finishes its batch, commits and leaves the group, or,
as a static member, keeps its partitions without leaving); wait until it exited (SIGKILL if it is
still there :data:`EXIT_DETECT_S` after the Deployment's ``terminationGracePeriodSeconds``, as
the kubelet would); wait until the replica the platform started in its place is ready; then
``pause_s`` before the next. The replacement is the platform's own: the Deployment replaces a
replica that exits (the path ``kill_replica`` uses), in the same slot, so it has the same
``POD_NAME`` and, with ``--static-membership``, the same ``group.instance.id``
(:mod:`pytest_lagscale.platform.identity`). The action only signals and waits.

Events in ``runner.events.jsonl``, so the analysis can find the rebalances each restart caused:
``replica_restart_started`` (replica_id, pod_name, instance_id, index, of) when SIGTERM is sent,
and ``replica_restarted`` (the same plus replacement_id, killed, exit_wait_s, downtime_s) when
the replacement is ready. The ``action`` event, written when the last one is done, lists them
under ``replicas``.

A replica already gone at its turn (scaled down) is recorded as ``skipped``; one the Deployment
does not replace, or whose replacement it removes before it is ready (scaled down meanwhile), has
``replacement_id`` None. The action runs in its own
thread (``background``), so later actions keep their times; one still under way when the load
ends runs on while the run settles. When the scheduler stops (the run stopped settling, or is
stopping) it stops waiting and returns what it did with ``interrupted: true``; a replica it had
signalled is still replaced by the platform.

Source: kubernetes.io/docs/concepts/workloads/controllers/statefulset, "Rolling Updates" (one
pod at a time, each Ready before the next; highest ordinal first there, oldest first here) and
KIP-345 (a static member that rejoins within the session timeout keeps its partitions).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from ...contract.errors import ConfigError, ReplicaError
from .base import ActionContext, ParamsChecked, PlanFacts

#: Seconds after the grace period before SIGKILL (the platform notices an exit within its
#: readiness period, at most 1 s).
EXIT_DETECT_S = 2.0
#: Grace period when the platform does not say (Kubernetes' default).
DEFAULT_GRACE_S = 30.0
#: Seconds between checks of the platform's replicas.
POLL_S = 0.1
#: ``(lowest, highest, default)`` seconds of each parameter.
LIMITS = {"pause_s": (0.0, 600.0, 0.0), "timeout_s": (1.0, 3600.0, 180.0)}


class _Interrupted(Exception):
    """The scheduler stopped while the restart waited."""


@dataclass(frozen=True)
class RollingRestart(ParamsChecked):
    """Restart every live replica, one at a time, oldest first.

    Attributes:
        pause_s: seconds from one replacement being ready to the next SIGTERM (0..600).
        timeout_s: seconds a replacement may take from the old replica's exit to ready
            (1..3600); past it the action fails (``action_failed``).
    """

    pause_s: float = LIMITS["pause_s"][2]
    timeout_s: float = LIMITS["timeout_s"][2]
    name: ClassVar[str] = "rolling_restart"
    background: ClassVar[bool] = True

    @classmethod
    def check_params(cls, params: Mapping[str, Any], where: str, facts: PlanFacts) -> list[str]:
        problems = []
        for key, (lo, hi, default) in LIMITS.items():
            value = params.get(key, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not lo <= value <= hi:
                problems.append(f"{where}.{key}: {value!r} is not allowed; allowed: seconds in "
                                f"[{lo:g}, {hi:g}]; set '{key}'")
        return problems

    def label(self) -> str:
        return "rolling_restart" + (f" pause_s={self.pause_s:g}" if self.pause_s else "")

    def run(self, ctx: ActionContext) -> dict[str, Any]:
        """Restart the replicas live now; returns ``replicas`` (one record each, in order),
        ``restarted`` (count), ``interrupted`` and ``duration_s``.

        Raises:
            ReplicaError: a replica did not exit after SIGKILL, or its replacement was not
                ready within ``timeout_s``.
        """
        started_s = ctx.now_s()
        targets = [(r.replica_id, getattr(r, "pod_name", None)) for r in ctx.platform.replicas()]
        records: list[dict[str, Any]] = []
        interrupted = False
        try:
            for index, (replica_id, pod) in enumerate(targets):
                if index and self.pause_s:
                    _wait_until(ctx, lambda: False, self.pause_s)
                records.append(self._restart_one(ctx, replica_id, pod, index, len(targets)))
        except _Interrupted:
            interrupted = True
        return {"replicas": records, "interrupted": interrupted,
                "restarted": sum(1 for r in records if "skipped" not in r),
                "duration_s": round(ctx.now_s() - started_s, 3)}

    def _restart_one(self, ctx: ActionContext, replica_id: str, pod: str | None, index: int,
                     of: int) -> dict[str, Any]:
        platform = ctx.platform
        live = {r.replica_id: r for r in platform.replicas()}
        base = {"replica_id": replica_id, "pod_name": pod,
                "instance_id": getattr(live.get(replica_id), "instance_id", None)}
        if replica_id not in live:
            return {**base, "skipped": "gone before its turn (scaled down)"}
        _emit(ctx, "replica_restart_started", **base, index=index, of=of)
        signalled_s = ctx.now_s()
        try:
            platform.kill_replica(replica_id, int(signal.SIGTERM))
        except ConfigError:  # scaled down between the check and the signal
            return {**base, "skipped": "gone before its turn (scaled down)"}
        killed = _wait_exit(ctx, replica_id)
        exit_wait_s = round(ctx.now_s() - signalled_s, 3)

        def settled() -> bool:  # the replacement is ready, or there is none (scaled down)
            new = _replacement(platform, pod, set(live))
            return new is None or bool(new.ready)

        if not _wait_until(ctx, settled, self.timeout_s):
            raise ReplicaError(f"rolling_restart: {pod or replica_id}: the replacement of "
                               f"{replica_id} was not ready within {self.timeout_s:g} s; "
                               "raise timeout_s or check the replica logs")
        new = _replacement(platform, pod, set(live))
        replacement = None if new is None else new.replica_id
        record = {**base, "replacement_id": replacement, "killed": killed,
                  "exit_wait_s": exit_wait_s,
                  "downtime_s": (round(ctx.now_s() - signalled_s, 3) if replacement else None)}
        _emit(ctx, "replica_restarted", **record)
        return record


def _wait_exit(ctx: ActionContext, replica_id: str) -> bool:
    """Wait until ``replica_id`` is no longer live; SIGKILL it after the grace period.
    Returns True when it had to be killed.

    Raises:
        ReplicaError: still live :data:`EXIT_DETECT_S` seconds after SIGKILL.
        _Interrupted: the scheduler stopped.
    """
    platform = ctx.platform

    def gone() -> bool:
        return replica_id not in {r.replica_id for r in platform.replicas()}

    template = getattr(platform, "template", None)
    grace_s = float(getattr(template, "termination_grace_period_s", DEFAULT_GRACE_S))
    if _wait_until(ctx, gone, grace_s + EXIT_DETECT_S):
        return False
    try:
        platform.kill_replica(replica_id, int(signal.SIGKILL))
    except ConfigError:  # it exited just now
        return False
    if not _wait_until(ctx, gone, EXIT_DETECT_S):
        raise ReplicaError(f"rolling_restart: {replica_id} still runs {EXIT_DETECT_S:g} s after "
                           "SIGKILL; check the replica's process group")
    return True


def _replacement(platform: Any, pod: str | None, before: set[str]) -> Any:
    """The live replica started since ``before`` (ids) in slot ``pod`` (any new one when the
    platform names no slots), or None."""
    for r in platform.replicas():
        if r.replica_id not in before and (pod is None or getattr(r, "pod_name", None) == pod):
            return r
    return None


def _wait_until(ctx: ActionContext, condition: Callable[[], Any], within_s: float) -> bool:
    """Check ``condition`` every :data:`POLL_S` seconds: True once it holds, False when
    ``within_s`` seconds passed first.

    Raises:
        _Interrupted: ``ctx.stopping`` was set while waiting.
    """
    deadline = ctx.now_s() + within_s
    while True:
        if condition():
            return True
        if ctx.now_s() >= deadline:
            return False
        if ctx.stopping.wait(POLL_S):
            raise _Interrupted


def _emit(ctx: ActionContext, event: str, **fields: Any) -> None:
    if ctx.events is not None:
        ctx.events.emit(event, **fields)
