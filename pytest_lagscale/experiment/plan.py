"""From :class:`RunSettings` to a :class:`RunPlan`: every file read and checked, every override
applied, nothing started. A bad profile, manifest, scheduled action or override fails here with
all its problems, before a broker or a replica exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..config.deployment import DeploymentConfig, load_deployment
from ..contract.errors import ConfigError
from ..load.profiles import Profile, load_profile
from .actions import PlanFacts, Scheduled, plan_actions
from .lag_signal import LagSourcePlan, plan_lag_source
from .settings import RunSettings


@dataclass(frozen=True)
class RunPlan:
    """A validated run.

    Attributes:
        settings: the settings it came from.
        profile: the traffic profile after overrides (partitions).
        policy_config: the scaling policy's manifest, after overrides (lagThreshold);
            :meth:`build_policy` turns it into a fresh policy.
        deployment: the consumer Deployment.
        flag_overrides: replica flags replacing the Deployment's (balancer, engine).
        lag_threshold: the policy's lagThreshold in records, or None (no lag trigger).
        capacity_per_s: one replica's nominal records/s (inflight x 1000 / process-ms), or None
            when process-ms is 0.
        engine, balancer: what the replicas run with.
        trigger_interval_s: the replicas' micro-batch trigger interval, seconds.
        spark_remote: the spark-connect engine's server URL, or None (the run starts a
            server when the engine is spark-connect).
        spike: ``(start_s, end_s)`` of the profile's spike (steps labelled ``spike``), or None.
        actions: the scheduled actions, checked, ordered by time.
        max_partitions: the most partitions the topic has during the run (after the actions).
        reference_lag_threshold: the lagThreshold the analysis holds lag to (drain, SLO): the
            policy's, else (a policy without a lag trigger, e.g. a CPU HPA) the scale's
            committed ScaledObject's, so that both variants of experiment 1 are held to one.
        policy_kind: the policy's registry name (e.g. ``keda-hpa``).
        replica_range: ``(minReplicaCount, maxReplicaCount)`` of the policy (read once here;
            the runner's settle loop asks every second).
        lag_source: where the policy reads lag and what the ``sources`` phase starts
            (:func:`~.lag_signal.plan_lag_source`).
        group_type: what the replicas join: ``consumer`` (a consumer group) or ``share`` (a
            KIP-932 share group: the run reads the share group's lag, docs/experiments.md).
    """

    settings: RunSettings
    profile: Profile
    policy_config: Any
    deployment: DeploymentConfig
    flag_overrides: dict[str, str]
    lag_threshold: int | None
    capacity_per_s: float | None
    engine: str
    balancer: str
    spike: tuple[float, float] | None
    actions: tuple[Scheduled, ...] = ()
    max_partitions: int = 0
    reference_lag_threshold: int = 0
    policy_kind: str = ""
    replica_range: tuple[int, int] = (1, 1)
    trigger_interval_s: float = 0.0
    spark_remote: str | None = None
    lag_source: LagSourcePlan = LagSourcePlan()
    group_type: str = "consumer"

    def build_policy(self, *, created_at_s: float = 0.0) -> Any:
        """A fresh :class:`~pytest_lagscale.control.policy.base.ScalingPolicy` of this plan."""
        from ..control.policy.build import build_policy

        return build_policy(self.policy_config, created_at_s=created_at_s)

    @property
    def lag_poll_interval_s(self) -> float | None:
        """Seconds between the policy's lag reads: KEDA's ``pollingInterval``, else the
        policy's sync period; None when the policy has neither."""
        policy = self.build_policy()
        for name in ("polling_interval_s", "sync_period_s"):
            value = getattr(policy, name, None)
            if value:
                return float(value)
        return None

    @property
    def min_replicas(self) -> int:
        """minReplicaCount, at least 1 (a run starts with one replica ready)."""
        return max(1, self.replica_range[0])

    @property
    def max_replicas(self) -> int:
        """maxReplicaCount."""
        return self.replica_range[1]

    @property
    def policy_name(self) -> str:
        """The policy manifest file's stem, e.g. ``scaledobject-ci``."""
        return Path(self.policy_config.source).stem


#: Classic-group session timeout of static members, seconds: a restarted replica must rejoin
#: before the broker expires it (a Spark replica's cold start is 5-17 s; 45 s is also the
#: broker's default KIP-848 session timeout).
STATIC_SESSION_TIMEOUT_S = 45.0


def static_membership_flags(balancer: str, flags: Mapping[str, str]) -> dict[str, str]:
    """Replica flag overrides for static membership: ``--instance-id=$(POD_NAME)`` (the
    platform expands the replica's stable name) and, for classic groups, ``--session-timeout``
    of at least :data:`STATIC_SESSION_TIMEOUT_S` (the Deployment's ``flags`` value when higher;
    KIP-848 session timeouts are broker settings, so none for ``consumer``)."""
    out = {"--instance-id": "$(POD_NAME)"}
    if balancer != "consumer":
        current = float(flags.get("--session-timeout") or 0.0)
        out["--session-timeout"] = f"{max(STATIC_SESSION_TIMEOUT_S, current):g}"
    return out


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
        ConfigError: any bad setting, profile, manifest or action (all problems of a file
            together).
    """
    from ..config.bundled import manifest_paths
    from ..config.policy import load_policy_manifest
    from ..control.policy.build import build_policy

    settings.check()
    files = settings.manifest_files()
    overrides = {"partitions": settings.partitions} if settings.partitions is not None else None
    profile = load_profile(settings.profile_path(), overrides)
    policy_config = settings.policy_config()
    deployment = load_deployment(files["deployment"])
    # the replica program's engine when it runs as a cluster's command consumer
    cluster_engine = None
    if settings.replica_image:  # a cluster with kubelets: measured from the broker
        from ..config.cluster_consumer import as_cluster_consumer

        cluster_engine = deployment.replica.engine if deployment.replica is not None else None
        deployment = as_cluster_consumer(deployment)
    actions = plan_actions((*profile.actions, *settings.actions),
                           PlanFacts(partitions=profile.partitions))
    grown = [a.action.to for a in actions if hasattr(a.action, "to")]
    if deployment.replica is None:
        engine, balancer, trigger_interval_s, capacity, flag_overrides, spark_remote = \
            _command_consumer_plan(settings, deployment)
        engine = cluster_engine or engine
    else:
        engine, balancer, trigger_interval_s, capacity, flag_overrides, spark_remote = \
            _replica_program_plan(settings, deployment.replica)
    policy = build_policy(policy_config)
    reference = policy.lag_threshold_records
    if reference is None:
        default = load_policy_manifest(manifest_paths(settings.scale)["scaled_object"])
        reference = build_policy(default).lag_threshold_records
    _check_local_scaler_metadata(policy, policy_config.source)
    lag_source = plan_lag_source(settings, policy)
    group_type = _group_type(settings, deployment, policy, policy_config.source)
    if policy.needs_lag is False and policy.needs_cpu and not deployment.cpu_request_millicores:
        raise ConfigError(f"{deployment.source}: the policy {policy_config.source} scales on "
                          "CPU utilization but the consumer container has no "
                          "resources.requests.cpu; add one")
    plan = RunPlan(settings=settings, profile=profile, policy_config=policy_config,
                   deployment=deployment, flag_overrides=flag_overrides,
                   lag_threshold=policy.lag_threshold_records, capacity_per_s=capacity,
                   engine=engine, spark_remote=spark_remote,
                   trigger_interval_s=trigger_interval_s, balancer=balancer,
                   spike=profile_spike_window(profile), actions=actions,
                   max_partitions=max([profile.partitions, *grown]),
                   reference_lag_threshold=int(reference or 0), policy_kind=policy.name,
                   replica_range=(policy.min_replicas, policy.max_replicas), lag_source=lag_source,
                   group_type=group_type)
    from ..platform import check_plan

    check_plan(settings.platform, plan)
    return plan


def describe_plan(plan: RunPlan) -> list[str]:
    """What a run of ``plan`` would do, one ``name: value`` line each (``lagscale run
    --dry-run`` prints them): run label, profile, policy, Deployment, platform, broker, engine,
    balancer, scale, lag source, scheduled actions and the expected duration (the profile's
    load, then at most ``--settle-timeout`` seconds of settling)."""
    s, prof = plan.settings, plan.profile
    lo, hi = plan.replica_range
    threshold = "-" if plan.lag_threshold is None else f"{plan.lag_threshold:,}"
    actions = ", ".join(f"{a.at_s:g} s {a.action.label()}" for a in plan.actions) or "none"
    duration = prof.duration_s
    return [
        f"run: {s.label()}",
        f"profile: {prof.name} ({prof.source or 'bundled'}): {duration:g} s, "
        f"{prof.partitions} partitions of {prof.topic}",
        f"policy: {plan.policy_name} ({plan.policy_kind}, {plan.policy_config.source}): "
        f"replicas {lo}..{hi}, lagThreshold {threshold}",
        f"deployment: {plan.deployment.source}",
        f"platform: {s.platform}; broker: {s.kafka}; scale: {s.scale}",
        f"replicas: engine {plan.engine}, balancer {plan.balancer}, trigger interval "
        f"{plan.trigger_interval_s:g} s"
        + (", in a share group (KIP-932)" if plan.group_type == "share" else ""),
        f"lag source: {plan.lag_source.kind}"
        + (" (the share group's lag, KIP-1226)" if plan.group_type == "share" else ""),
        f"actions: {actions}",
        f"expected duration: {duration:g} s of load, then up to {s.settle_timeout_s:g} s to "
        f"settle (at most {(duration + s.settle_timeout_s) / 60:.1f} min, plus start-up and "
        f"analysis)",
    ]


def _group_type(settings: Any, deployment: Any, policy: Any, source: str) -> str:
    """What the replicas join (``--group-type``, else the Deployment's replica flag).

    Raises:
        ConfigError: a share group with a policy whose trigger reads a consumer group's
            committed offsets (KEDA's kafka trigger; a share group has none), or with
            ``--static-membership`` (share groups have no static members); a run-served scaler
            of the other group type (share-group for a consumer group, or the reverse).
    """
    replica = deployment.replica
    given = replica.flags.get("--group-type") if replica is not None else None
    group_type = settings.group_type or given or "consumer"
    scaler = policy.local_scaler_kind if getattr(policy, "needs_local_scaler", False) else None
    if scaler is not None and (scaler == "share-group") != (group_type == "share"):
        raise ConfigError(f"--policy: {source} is served by the run's own {scaler} scaler, which reads "
                          f"{'a share group' if scaler == 'share-group' else 'a consumer group'}, and the "
                          f"replicas join a {group_type} group; pass --group-type "
                          f"{'share' if scaler == 'share-group' else 'consumer'} or another policy")
    if group_type != "share":
        return group_type
    if getattr(policy, "needs_lag", False):
        raise ConfigError(f"--group-type share: the policy {source} has a trigger that reads the group's "
                          "committed offsets (KEDA's kafka trigger), and a share group commits none; use "
                          "a policy on the share group's lag (--policy scaledobject-share-group-ci) or on CPU")
    if settings.static_membership:
        raise ConfigError("--static-membership: share groups have no static members (KIP-932); drop it "
                          "or --group-type share")
    return group_type


def _check_local_scaler_metadata(policy: Any, source: str) -> None:
    """Check the metadata of the triggers the run's own scaler serves now, as that scaler (the
    policy's ``local_scaler_kind``) would, with the run's bootstrapServers, group and topic.

    Raises:
        ConfigError: every problem, naming the manifest and the trigger.
    """
    from ..scalers import metadata_parser, run_metadata

    lines: list[str] = []
    for call in getattr(policy, "external_scalers", ()):
        if not call.local:
            continue
        kind = policy.local_scaler_kind
        try:
            metadata_parser(kind)({**call.metadata, **run_metadata(kind, "run", "run", "run")},
                                  source=f"{source} spec.triggers[{call.trigger_index}].metadata")
        except ConfigError as exc:
            lines.extend(exc.problems)
    if lines:
        raise ConfigError(lines)


__all__ = ["STATIC_SESSION_TIMEOUT_S", "RunPlan", "plan_run", "profile_spike_window",
           "static_membership_flags"]


def _replica_program_plan(settings: Any, replica: Any
                          ) -> tuple[str, str, float, float | None, dict[str, str], str | None]:
    """(engine, balancer, trigger interval s, capacity records/s, flag overrides, Spark
    remote) of the replica program, with the run's options applied.

    Raises:
        ConfigError: ``--spark-remote`` without the spark-connect engine.
    """
    flag_overrides: dict[str, str] = {}
    if settings.balancer:
        flag_overrides["--balancer"] = settings.balancer
    if settings.engine:
        flag_overrides["--engine"] = settings.engine
    if settings.trigger_interval_s is not None:
        flag_overrides["--trigger-interval"] = f"{settings.trigger_interval_s:g}"
    if settings.group_type:
        flag_overrides["--group-type"] = settings.group_type
    if settings.static_membership:
        flag_overrides.update(static_membership_flags(settings.balancer or replica.balancer,
                                                      replica.flags))
    engine = settings.engine or replica.engine
    spark_remote = settings.spark_remote or replica.flags.get("--spark-remote") or None
    if settings.spark_remote:
        flag_overrides["--spark-remote"] = settings.spark_remote
    if spark_remote and engine != "spark-connect":
        raise ConfigError(f"--spark-remote: {spark_remote!r} is only for --engine spark-connect "
                          f"(the replicas run {engine!r}); drop it or pass --engine spark-connect")
    capacity = (replica.inflight * 1000.0 / replica.process_ms) if replica.process_ms else None
    interval = (settings.trigger_interval_s if settings.trigger_interval_s is not None
                else replica.trigger_interval_s)
    return engine, settings.balancer or replica.balancer, interval, capacity, flag_overrides, \
        spark_remote


#: Run options that set the replica program's flags: a command consumer has none of them.
_REPLICA_PROGRAM_OPTIONS = (("engine", "--engine"), ("trigger_interval_s", "--trigger-interval"),
                            ("group_type", "--group-type"),
                            ("spark_remote", "--spark-remote"),
                            ("static_membership", "--static-membership"))


def _command_consumer_plan(settings: Any, deployment: Any
                           ) -> tuple[str, str, float, float | None, dict[str, str], None]:
    """The same facts for a command consumer: engine ``command``, the balancer its args name
    (an arg ``-balancer=X`` or ``--balancer=X``, which ``--balancer`` rewrites), no trigger
    interval, no nominal capacity.

    Raises:
        ConfigError: an option that sets a replica-program flag, or ``--balancer`` when the
            args name no balancer.
    """
    given = [flag for field, flag in _REPLICA_PROGRAM_OPTIONS if getattr(settings, field, None)]
    if given:
        raise ConfigError(f"{', '.join(given)}: {'sets' if len(given) == 1 else 'set'} a flag of "
                          "the replica program, but "
                          f"{deployment.source} runs a command consumer "
                          f"({deployment.command.raw_args[0]}); drop the option or set it in "
                          "the Deployment's args or env")
    named = _named_balancer(deployment.command.raw_args)
    overrides: dict[str, str] = {}
    if settings.balancer:
        if named is None:
            raise ConfigError(f"--balancer: {settings.balancer!r} cannot be applied: the args of "
                              f"{deployment.source} name no balancer (an arg -balancer=X or "
                              "--balancer=X); add one or drop --balancer")
        overrides[named[0]] = settings.balancer
    return "command", settings.balancer or (named[1] if named else "unknown"), 0.0, None, \
        overrides, None


def _named_balancer(args: tuple[str, ...]) -> tuple[str, str] | None:
    """(the arg's key, its value) of the last ``-balancer=X``/``--balancer=X`` in ``args``."""
    found = None
    for arg in args:
        key, eq, value = arg.partition("=")
        if eq and key.lstrip("-") == "balancer":
            found = (key, value)
    return found
