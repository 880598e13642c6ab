"""The KEDA + HPA policy: a ScaledObject (KEDA's polling loop, then the HPA it generates), or a
plain autoscaling/v2 HPA on cpu or a Pods metric (the HPA alone), run on their own schedules.

Schedule (what the runner's loop did before this module owned it): the KEDA poll every
``pollingInterval`` with the first at the first :meth:`~KedaHpaPolicy.decide`; the HPA sync
every sync period (``lagscale.dev/hpa-sync-period-seconds``), the first one sync period after
the first decide. A sync due at the same instant as a poll that changed the replica count sees
that count, as the runner re-observing the local platform would: spec and status replicas the
new count, ready pods at most that many.

Example:
    >>> from pytest_lagscale.config.scaledobject import parse_scaled_object
    >>> from pytest_lagscale.control.observation import Observation
    >>> so = parse_scaled_object({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
    ...     "metadata": {"name": "c", "annotations": {"lagscale.dev/hpa-sync-period-seconds": "3"}},
    ...     "spec": {"scaleTargetRef": {"name": "c"}, "pollingInterval": 2, "minReplicaCount": 1,
    ...              "triggers": [{"type": "kafka", "metadata": {"bootstrapServers": "k:9092",
    ...                  "consumerGroup": "g", "topic": "t", "lagThreshold": "10"}}]}})
    >>> policy = KedaHpaPolicy.from_scaled_object(so)
    >>> lag_40 = {p: (0, 10) for p in range(4)}
    >>> [s.event for s in policy.decide(Observation(1, lag_40), 0.0).steps]
    ['keda_poll']
    >>> decision = policy.decide(Observation(1, lag_40), 3.0)
    >>> [s.event for s in decision.steps], decision.desired_replicas, decision.reason
    (['keda_poll', 'hpa_sync'], 4, 'DesiredWithinRange')
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_lagscale.config.hpa import HpaConfig
from pytest_lagscale.config.scaledobject import ScaledObjectConfig
from pytest_lagscale.control.controller import PollDecision, ScalingController, SyncDecision
from pytest_lagscale.control.keda.base import Trigger
from pytest_lagscale.control.keda.external import ExternalScalerCall, ExternalTrigger
from pytest_lagscale.control.observation import Observation
from pytest_lagscale.control.policy.base import Decision


class KedaHpaPolicy:
    """KEDA's polling loop and the HPA's sync for one Deployment, as a :class:`ScalingPolicy`.

    Args:
        controller: the pure decision maker (its ``poll`` / ``sync``).
        name: the policy kind (``keda-hpa`` for a ScaledObject, ``hpa`` for a plain HPA).
        metrics_name: the manifest's ``metadata.name`` (Prometheus labels).
        replica_range: ``(min_replicas, max_replicas)`` the policy sets (KEDA's
            minReplicaCount/maxReplicaCount, or the HPA's minReplicas/maxReplicas).
        source: the manifest file (informational).
        namespace: the manifest's ``metadata.namespace`` (``default`` when unset).

    Attributes:
        name, metrics_name: as given.
        min_replicas, max_replicas: ``replica_range``.

    Source: kedacore/keda pkg/scaling/scale_handler.go startScaleLoop (pollingInterval ticker)
    v2.20.2; kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go (resync period)
    v1.28.0; docs/semantics.md §2.2, §3.2
    """

    def __init__(self, controller: ScalingController, *, name: str, metrics_name: str,
                 replica_range: tuple[int, int], source: str = "", namespace: str = "default"):
        self.controller = controller
        self.name, self.metrics_name, self.namespace = name, metrics_name, namespace
        self.min_replicas, self.max_replicas = replica_range
        self.source = source
        self._next_poll_s: float | None = None
        self._next_sync_s: float | None = None

    @classmethod
    def from_scaled_object(cls, config: ScaledObjectConfig, *, created_at_s: float = 0.0) -> KedaHpaPolicy:
        """A ScaledObject's policy (``created_at_s``: its creation time on the runner's clock,
        which initialCooldownPeriod counts from)."""
        return cls(ScalingController.from_scaled_object(config, created_at_s=created_at_s), name="keda-hpa",
                   metrics_name=config.name, replica_range=(config.min_replica_count, config.max_replica_count),
                   source=config.source, namespace=config.meta.namespace or "default")

    @classmethod
    def from_hpa(cls, config: HpaConfig, *, created_at_s: float = 0.0) -> KedaHpaPolicy:
        """A plain HPA's policy, cpu or Pods metric (no KEDA polling loop; ``created_at_s`` is
        unused)."""
        return cls(ScalingController.from_hpa(config), name="hpa", metrics_name=config.name,
                   replica_range=(config.min_replicas, config.max_replicas), source=config.source)

    from_cpu_hpa = from_hpa

    # -- facts -------------------------------------------------------------------------------
    @property
    def manifest_name(self) -> str:
        """The manifest file's stem (``scaledobject-ci``), or :attr:`metrics_name` without a file."""
        return Path(self.source).stem if self.source else self.metrics_name

    @property
    def lag_threshold_records(self) -> int | None:
        """The first lag trigger's lagThreshold in records (None: no lag trigger)."""
        return next((t.lag_threshold_records for t in self.controller.triggers
                     if t.lag_threshold_records is not None), None)

    @property
    def needs_lag(self) -> bool:
        """Some trigger reads the group's offsets."""
        return any(t.needs_lag for t in self.controller.triggers)

    @property
    def needs_cpu(self) -> bool:
        """Some trigger reads per-pod CPU."""
        return any(t.needs_cpu for t in self.controller.triggers)

    @property
    def external_scalers(self) -> tuple[ExternalScalerCall, ...]:
        """One call per ``type: external`` trigger: whom the runner asks over gRPC before each
        step, and the ``ScaledObjectRef`` it sends (name, namespace, the trigger's metadata)."""
        local = self.controller.spec.harness.local_scaler_address
        return tuple(t.call(self.metrics_name, self.namespace, local) for t in self.controller.triggers
                     if isinstance(t, ExternalTrigger))

    @property
    def value_triggers(self) -> tuple[Trigger, ...]:
        """The value-reading triggers (``prometheus``, ``aws-cloudwatch``, ``metrics-api``): the
        runner fetches each one's answer into ``observation.values`` before each step."""
        return tuple(t for t in self.controller.triggers if getattr(t, "needs_value", False))

    @property
    def needs_local_scaler(self) -> bool:
        """Some external trigger is served by the run's own scaler (the run starts one)."""
        return any(call.local for call in self.external_scalers)

    @property
    def local_scaler_kind(self) -> str:
        """The kind of scaler the run serves for its local triggers (the ScaledObject's
        ``lagscale.dev/local-scaler-kind``, default ``persistent-lag``)."""
        return self.controller.spec.harness.local_scaler_kind

    @property
    def needs_pod_metrics(self) -> bool:
        """Some metric is a Pods metric (reads ``observation.pod_metrics``)."""
        return any(getattr(t, "needs_pod_metrics", False) for t in self.controller.triggers)

    @property
    def pod_metric_name(self) -> str | None:
        """The Pods metric the runner reads per pod (None: the policy has none)."""
        return next((t.metric_name for t in self.controller.triggers if getattr(t, "needs_pod_metrics", False)),
                    None)

    @property
    def polling_interval_s(self) -> float | None:
        """Seconds between KEDA polls (None: a plain HPA, no polling loop)."""
        return self.controller.polling_interval_s

    @property
    def sync_period_s(self) -> float:
        """Seconds between HPA syncs."""
        return self.controller.sync_period_s

    @property
    def first_decision_within_s(self) -> float:
        """The first HPA sync comes one sync period after the first decide."""
        return self.sync_period_s

    # -- schedule and steps --------------------------------------------------------------------
    def due(self, now_s: float) -> bool:
        """A poll or sync is due at ``now_s``, or the schedule has not started."""
        return self._next_sync_s is None or self._poll_due(now_s) or now_s >= self._next_sync_s

    def decide(self, observation: Observation, now_s: float) -> Decision:
        """The poll (if due), then the sync (if due), on ``observation``.

        Args:
            observation: replicas, offsets and CPU pods read just before.
            now_s: time in seconds on the runner's monotonic clock.
        """
        steps: list[PollDecision | SyncDecision] = []
        if self._poll_due(now_s):
            assert self.polling_interval_s is not None
            self._next_poll_s = now_s + self.polling_interval_s
            poll = self.controller.poll(now_s, observation)
            steps.append(poll)
            observation = _after(observation, poll.replicas_before, poll.replicas_after)
        if self._next_sync_s is None:
            self._next_sync_s = now_s + self.sync_period_s
        elif now_s >= self._next_sync_s:
            self._next_sync_s = now_s + self.sync_period_s
            steps.append(self.controller.sync(now_s, observation))
        return Decision.from_steps(now_s, tuple(steps))

    def _poll_due(self, now_s: float) -> bool:
        every = self.polling_interval_s
        return every is not None and (self._next_poll_s is None or now_s >= self._next_poll_s)


def _after(observation: Observation, before: int, after: int) -> Observation:
    """The observation once a step moved the replicas from ``before`` to ``after`` (local
    platform: replicas start and stop at once, new ones not ready yet)."""
    if after == before:
        return observation
    return replace(observation, current_replicas=after, status_replicas=after,
                   ready_replicas=min(observation.ready, after))
