"""From :class:`RunSettings` to a :class:`RunPlan`: every file read and checked, every override
applied, nothing started. A bad profile, manifest or override fails here with all its
problems, before a broker or a replica exists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..config.deployment import DeploymentConfig, load_deployment
from ..config.scaledobject import ScaledObjectConfig, load_scaled_object
from ..errors import ConfigError
from ..load.profiles import Profile, load_profile
from .settings import RunSettings


@dataclass(frozen=True)
class RunPlan:
    """A validated run.

    Attributes:
        settings: the settings it came from.
        profile: the traffic profile after overrides (partitions).
        scaled_object: the policy after overrides (lagThreshold).
        deployment: the consumer Deployment.
        flag_overrides: replica flags replacing the Deployment's (balancer, engine).
        lag_threshold: the kafka trigger's lagThreshold, records.
        capacity_per_s: one replica's nominal records/s (inflight x 1000 / process-ms), or None
            when process-ms is 0.
        engine, balancer: what the replicas run with.
        spike: ``(start_s, end_s)`` of the profile's spike (steps labelled ``spike``), or None.
    """

    settings: RunSettings
    profile: Profile
    scaled_object: ScaledObjectConfig
    deployment: DeploymentConfig
    flag_overrides: dict[str, str]
    lag_threshold: int
    capacity_per_s: float | None
    engine: str
    balancer: str
    spike: tuple[float, float] | None

    @property
    def min_replicas(self) -> int:
        """minReplicaCount, at least 1 (a run starts with one replica ready)."""
        return max(1, self.scaled_object.min_replica_count)

    @property
    def max_replicas(self) -> int:
        """maxReplicaCount."""
        return self.scaled_object.max_replica_count

    @property
    def policy_name(self) -> str:
        """The ScaledObject file's stem, e.g. ``scaledobject-ci``."""
        return Path(self.scaled_object.source).stem


def with_lag_threshold(config: ScaledObjectConfig, lag_threshold: int) -> ScaledObjectConfig:
    """``config`` with every kafka trigger's lagThreshold set to ``lag_threshold`` records.

    Raises:
        ConfigError: the ScaledObject has no kafka trigger to override.
    """
    triggers = []
    for trigger in config.triggers:
        if trigger.kafka is not None:
            trigger = replace(trigger, kafka=replace(trigger.kafka, lag_threshold=lag_threshold),
                              metadata={**trigger.metadata, "lagThreshold": str(lag_threshold)})
        triggers.append(trigger)
    if not any(t.kafka is not None for t in triggers):
        raise ConfigError(f"--lag-threshold: {config.source} has no kafka trigger to override; "
                          "drop --lag-threshold or add a kafka trigger")
    return replace(config, triggers=tuple(triggers))


def profile_spike_window(profile: Profile) -> tuple[float, float] | None:
    """``(start_s, end_s)`` of the contiguous steps labelled ``spike``, or None."""
    spikes = [s for s in profile.schedule() if s.label == "spike"]
    if not spikes:
        return None
    end = spikes[0].end_s
    for step in spikes[1:]:
        if step.start_s != end:
            break
        end = step.end_s
    return spikes[0].start_s, end


def plan_run(settings: RunSettings) -> RunPlan:
    """Read, check and combine the run's inputs.

    Raises:
        ConfigError: any bad setting, profile or manifest (all problems of a file together).
    """
    settings.check()
    files = settings.manifest_files()
    overrides = {"partitions": settings.partitions} if settings.partitions is not None else None
    profile = load_profile(settings.profile, overrides)
    scaled_object = load_scaled_object(files["scaled_object"])
    deployment = load_deployment(files["deployment"])
    if settings.lag_threshold is not None:
        scaled_object = with_lag_threshold(scaled_object, settings.lag_threshold)
    kafka = [t.kafka for t in scaled_object.triggers if t.kafka is not None]
    if not kafka:
        raise ConfigError(f"{scaled_object.source}: 'spec.triggers' has no kafka trigger; a lag "
                          "experiment needs one (type: kafka)")
    flag_overrides: dict[str, str] = {}
    if settings.balancer:
        flag_overrides["--balancer"] = settings.balancer
    if settings.engine:
        flag_overrides["--engine"] = settings.engine
    replica = deployment.replica
    capacity = (replica.inflight * 1000.0 / replica.process_ms) if replica.process_ms else None
    return RunPlan(settings=settings, profile=profile, scaled_object=scaled_object,
                   deployment=deployment, flag_overrides=flag_overrides,
                   lag_threshold=kafka[0].lag_threshold, capacity_per_s=capacity,
                   engine=settings.engine or replica.engine,
                   balancer=settings.balancer or replica.balancer, spike=profile_spike_window(profile))
