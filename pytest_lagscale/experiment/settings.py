"""What one experiment run is given: :class:`RunSettings`, validated before anything starts.

The settings come from the run options (:data:`pytest_lagscale.options.RUN_OPTIONS`, the same
table for ``pytest`` and ``lagscale run``) through
:func:`pytest_lagscale.options.settings_from_options`, or are built in code by a test.
:meth:`RunSettings.check` validates every value with the option's own parser and reports every
bad value at once, so a run never half-starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from ..contract.errors import ConfigError



@dataclass(frozen=True)
class RunSettings:
    """Inputs of one run (paths relative to the working directory).

    Attributes:
        profile: traffic profile: a bundled name (``spike-ci``; ``spike`` resolves by scale) or a
            YAML path; None = ``spike``.
        scale: ``ci`` or ``full``: picks the committed ``-ci`` manifests and profiles.
        policy: scaling policy manifest (ScaledObject or HPA), a bundled name or a path; None =
            ``scaled_object``, else the scale's ScaledObject.
        scaled_object: KEDA ScaledObject YAML (give ``policy`` or this, not both).
        deployment: consumer Deployment, a bundled name or a path; None = the scale's.
        platform: where replicas run (``local``).
        kubeconfig: ``--platform kubernetes`` on the cluster this kubeconfig names (its
            current context) instead of a control plane the run starts; None = start one.
        kafka: ``embedded``, ``testcontainers`` or ``external`` (``kafka_bootstrap`` required).
        kafka_bootstrap: ``host:port`` of an external broker.
        kafka_config: extra librdkafka client settings (``--kafka-config KEY=VALUE``).
        lag_threshold: overrides the lag trigger's ``lagThreshold``, records (1..10M).
        balancer: overrides the replicas' ``--balancer``.
        partitions: overrides the profile's partition count (1..1024).
        engine: overrides the replicas' ``--engine``.
        trigger_interval_s: overrides the replicas' ``--trigger-interval`` (seconds, 0..300).
        spark_remote: the spark-connect engine's server URL (``sc://HOST:PORT``); None = the
            Deployment's ``--spark-remote``, else a server the run starts itself.
        graceful: False: scale-down SIGKILLs replicas (experiment 6 without graceful drain).
        static_membership: True: the replicas are static group members
            (``--instance-id=$(POD_NAME)``, a stable name per replica slot) with a classic
            session timeout of at least 45 s (see ``plan.static_membership_flags``).
        out_dir: parent of the run directory.
        name: run name (the directory is ``<out_dir>/<UTC stamp>-<name>``); default: the
            profile's name.
        settle_timeout_s: after the profile ends, seconds to wait for lag <= lagThreshold and
            replicas == minReplicaCount before recording (0..7200).
        actions: actions scheduled in addition to the profile's
            (:class:`~pytest_lagscale.load.profiles.ActionSpec`).
        lag_source: where a total-lag policy reads lag (``--lag-source``: broker, prometheus,
            cloudwatch, confluent).
        cloudwatch_period_s: seconds between published SumOffsetLag datapoints and the
            cloudwatch source's period; None = the aws-cloudwatch trigger's, else 60.
        cloudwatch_window_s: seconds the cloudwatch source looks back; None = the trigger's
            metricCollectionTime, else 300.
    """

    profile: str | Path | None = None
    scale: str = "ci"
    policy: str | Path | None = None
    scaled_object: str | Path | None = None
    deployment: str | Path | None = None
    platform: str = "local"
    kubeconfig: str | Path | None = None
    kafka: str = "embedded"
    kafka_bootstrap: str | None = None
    kafka_config: Mapping[str, str] = field(default_factory=dict)
    lag_threshold: int | None = None
    balancer: str | None = None
    partitions: int | None = None
    engine: str | None = None
    trigger_interval_s: float | None = None
    spark_remote: str | None = None
    graceful: bool = True
    static_membership: bool = False
    out_dir: Path = Path("lagscale-runs")
    name: str | None = None
    settle_timeout_s: float = 300.0
    actions: tuple[Any, ...] = ()
    lag_source: str = "broker"
    cloudwatch_period_s: float | None = None
    cloudwatch_window_s: float | None = None

    def check(self) -> "RunSettings":
        """Return self when every value is allowed.

        Raises:
            ConfigError: one problem per bad value (option name, value, allowed range), from
                the run options' own parsers and cross-option checks.
        """
        from ..options import RUN_OPTIONS, check_run_options

        problems = [problem for option in RUN_OPTIONS if option.field
                    if (problem := option.check(getattr(self, option.field)))]
        problems += check_run_options(self.option_values())
        if problems:
            raise ConfigError(problems)
        return self

    def option_values(self) -> dict[str, Any]:
        """The settings as run-option values by destination (see ``options.RUN_OPTIONS``)."""
        from ..options import RUN_OPTIONS

        return {option.dest: getattr(self, option.field) for option in RUN_OPTIONS
                if option.field}

    def with_overrides(self, **changes: Any) -> "RunSettings":
        """A copy with ``changes`` applied (dataclasses.replace).

        Raises:
            ConfigError: a change names no field (the message lists the fields).
        """
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ConfigError([f"{key!r}: not a run setting; allowed: {', '.join(sorted(names))}"
                               for key in unknown])
        return replace(self, **changes)

    def profile_path(self) -> Path:
        """The profile file after resolving a bundled name by scale.

        Raises:
            ConfigError: neither an existing file nor a bundled profile name.
        """
        from ..config.bundled import resolve_profile

        return resolve_profile(str(self.profile or "spike"), self.scale)

    def manifest_files(self) -> dict[str, Path]:
        """``{'policy': path, 'deployment': path}`` after the scale defaults.

        Raises:
            ConfigError: a name that is neither a file nor a bundled manifest.
        """
        from ..config.bundled import manifest_paths, resolve_manifest

        defaults = manifest_paths(self.scale)
        policy = self.policy or self.scaled_object
        return {"policy": (resolve_manifest(str(policy), "--policy") if policy
                           else Path(defaults["scaled_object"])),
                "deployment": (resolve_manifest(str(self.deployment), "--deployment")
                               if self.deployment else Path(defaults["deployment"]))}

    def label(self) -> str:
        """Short id of what differs from the defaults, for run names and test ids."""
        try:
            profile = self.profile_path().stem
        except ConfigError:
            profile = Path(str(self.profile)).stem
        parts = [self.name or profile]
        policy = self.policy or self.scaled_object
        if policy:
            parts.append(Path(str(policy)).stem)
        if self.lag_threshold is not None:
            parts.append(f"lt{self.lag_threshold}")
        if self.balancer:
            parts.append(self.balancer)
        if self.partitions is not None:
            parts.append(f"p{self.partitions}")
        if self.engine:
            parts.append(self.engine)
        if self.trigger_interval_s is not None:
            parts.append(f"ti{self.trigger_interval_s:g}")
        if not self.graceful:
            parts.append("sigkill")
        if self.static_membership:
            parts.append("static")
        if self.lag_source != "broker":
            parts.append(self.lag_source)
        if self.platform != "local":
            parts.append(self.platform)
        return "-".join(parts)
