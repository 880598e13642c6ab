"""What every scaling policy offers the runner: a schedule, a decision and a few facts.

A policy is pure (no I/O, no clock, no logging): the runner asks :meth:`ScalingPolicy.due`
each tick, observes only then (lag when :attr:`~ScalingPolicy.needs_lag`, CPU when
:attr:`~ScalingPolicy.needs_cpu`), calls :meth:`ScalingPolicy.decide` and applies the
:class:`Decision`: it writes each step to the event log under the step's ``event`` name and
scales the Deployment when a step changed the replica count. A policy that decides on a
``type: Pods`` metric also has ``pod_metric_name`` (str; absent or None otherwise): the runner then
reads that metric per pod into ``observation.pod_metrics``. One module per policy
(:mod:`.keda_hpa`, :mod:`.lag_per_slot`), registered in
:data:`pytest_lagscale.control.policy.POLICIES` by manifest kind.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pytest_lagscale.control.observation import Observation


@runtime_checkable
class PolicyStep(Protocol):
    """One step of a decision (e.g. KEDA's ``keda_poll``, the HPA's ``hpa_sync``).

    A frozen dataclass: :func:`step_record` (equal to ``dataclasses.asdict``) gives the
    event-log record.

    Attributes:
        event: the event-log name (snake_case).
        now_s: time of the step in seconds.
        replicas_before: replicas observed (``spec.replicas``).
        replicas_after: replicas the step sets (= before: no change).
        reason: why, CamelCase (``ScaleUpLimit``, ``Active``, ...).
        sets_desired_replicas: the step's ``replicas_after`` is the policy's desired count
            (exported as ``kube_horizontalpodautoscaler_status_desired_replicas``).
    """

    event: str
    now_s: float
    replicas_before: int
    replicas_after: int
    reason: str
    sets_desired_replicas: bool


def step_record(step: PolicyStep) -> dict[str, Any]:
    """The event-log record of ``step``: equal to ``dataclasses.asdict(step)`` (nested
    dataclasses become dicts, tuples and lists are rebuilt, anything else is deep-copied), with
    each class's field names cached and scalars passed as they are: the controller writes one
    record per step, and ``asdict``'s general path was most of a twin draw's controller time.
    """
    return _plain(step)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_SCALARS = (int, float, str, bool, type(None))


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    names = _FIELD_NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if kind is tuple or kind is list:
        return kind(_plain(v) for v in value)
    if kind is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    return copy.deepcopy(value)


@dataclass(frozen=True)
class Decision:
    """What a policy decided at ``now_s``.

    Attributes:
        now_s: time of the decision in seconds.
        desired_replicas: the replica count the steps set, None to leave the Deployment as is.
        steps: the steps that ran, in order (empty when none was due).
        reason: the last step's reason, ``NotDue`` when no step ran (CamelCase).
    """

    now_s: float
    desired_replicas: int | None
    steps: tuple[PolicyStep, ...] = ()
    reason: str = "NotDue"

    @classmethod
    def from_steps(cls, now_s: float, steps: tuple[PolicyStep, ...]) -> Decision:
        """The decision of ``steps``: desired is the last changing step's ``replicas_after``."""
        changed = [s for s in steps if s.replicas_after != s.replicas_before]
        return cls(now_s, changed[-1].replicas_after if changed else None, steps,
                   steps[-1].reason if steps else "NotDue")


@runtime_checkable
class ScalingPolicy(Protocol):
    """A scaling policy: when to decide, what to decide, and what it needs observed.

    Attributes:
        name: the policy's kind, e.g. ``keda-hpa`` (KEDA ScaledObject + HPA) or ``hpa``.
        metrics_name: the object name in Prometheus labels (the manifest's ``metadata.name``).
        min_replicas: the fewest replicas it sets (KEDA's minReplicaCount may be 0).
        max_replicas: the most replicas it sets.
        lag_threshold_records: the per-replica lag target in records, None without a lag trigger.
        needs_lag: it reads ``observation.offsets``.
        needs_cpu: it reads ``observation.cpu_pods``.
        first_decision_within_s: seconds after the first :meth:`decide` by which a step with
            ``sets_desired_replicas`` has run (the runner waits for it before the load).
    """

    name: str
    metrics_name: str
    min_replicas: int
    max_replicas: int
    lag_threshold_records: int | None
    needs_lag: bool
    needs_cpu: bool
    first_decision_within_s: float

    def due(self, now_s: float) -> bool:
        """Whether :meth:`decide` has work at ``now_s`` (always True before the first decide,
        which starts the schedule). Reads state only."""

    def decide(self, observation: Observation, now_s: float) -> Decision:
        """Run the steps due at ``now_s`` on ``observation`` and return them.

        Args:
            observation: what the runner measured just before (offsets None: lag read failed).
            now_s: time in seconds on the runner's monotonic clock.
        """
