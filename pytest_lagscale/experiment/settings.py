"""What one experiment run is given: :class:`RunSettings`, the one typed form of a run's inputs.

The settings come from the run options (:data:`pytest_lagscale.options.RUN_OPTIONS`, the same
table for ``pytest`` and ``lagscale run``) through :meth:`RunSettings.from_options`, or are built
in code by a test. :meth:`RunSettings.check` applies every option's rule to the typed values and
reports every bad value at once, so a run never half-starts. A run's ``benchmark.json`` records
them under ``inputs.settings`` (:meth:`RunSettings.to_document`) and
:meth:`RunSettings.from_document` reads them back unchanged; :meth:`RunSettings.policy_config`
is the one place an override (``lag_threshold``) is applied to the policy manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from ..contract.errors import ConfigError
from ..options import cross_problems, setting_values, value_problems


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
        replica_image: with ``kubeconfig``, the image the cluster's kubelets run the consumer
            in (a cluster with Ready nodes); None = a cluster without nodes (the node agent).
        node: ``--platform kubernetes``'s pods run by a real kubelet as containers
            (``kubelet``) or by the node agent as local processes (``process``); None =
            kubelet, process for a command consumer.
        kafka: ``embedded``, ``testcontainers`` or ``external`` (``kafka_bootstrap`` required).
        kafka_bootstrap: ``host:port`` of an external broker.
        kafka_config: extra librdkafka client settings (``--kafka-config KEY=VALUE``).
        lag_threshold: overrides the lag trigger's ``lagThreshold``, records (1..10M).
        balancer: overrides the replicas' ``--balancer``.
        group_type: overrides the replicas' ``--group-type`` (``consumer`` or ``share``).
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
    replica_image: str | None = None
    node: str | None = None
    kafka: str = "embedded"
    kafka_bootstrap: str | None = None
    kafka_config: Mapping[str, str] = field(default_factory=dict)
    lag_threshold: int | None = None
    balancer: str | None = None
    group_type: str | None = None
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

    @classmethod
    def from_options(cls, values: Mapping[str, Any], **fields: Any) -> "RunSettings":
        """The settings of parsed run-option ``values`` (by dest), not yet checked.

        Each option's value goes to its field (:func:`pytest_lagscale.options.setting_values`;
        a sweep gives its first value); ``fields`` override anything (e.g. the sweep value of
        this test). Options not given keep the defaults.
        """
        return cls(**{**setting_values(values), **fields})

    def check(self) -> "RunSettings":
        """Return self when every value is allowed.

        Raises:
            ConfigError: one problem per bad value (option name, value, allowed range), by
                the run options' rules applied to the typed values, then the cross-option
                checks (conflicts, files, the output directory).
        """
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        problems = value_problems(values) + cross_problems(values)
        if problems:
            raise ConfigError(problems)
        return self

    def policy_config(self) -> Any:
        """The policy manifest of these settings with their overrides applied (the one place:
        ``lag_threshold`` sets every lag trigger's lagThreshold).

        Raises:
            ConfigError: the manifest's problems; a lagThreshold override for a policy with no
                lag trigger.
        """
        from ..config.policy import load_policy_manifest, with_lag_threshold

        config = load_policy_manifest(self.manifest_files()["policy"])
        if self.lag_threshold is not None:
            config = with_lag_threshold(config, self.lag_threshold)
        return config

    def to_document(self) -> dict[str, Any]:
        """These settings as JSON values, every field (``inputs.settings`` of benchmark.json):
        paths as text, actions as their YAML entries, and the value of a ``kafka_config`` key
        that names a secret replaced by ``<redacted>`` (never written to a run's files)."""
        from ..sources.credentials import redact

        doc: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif f.name == "kafka_config":
                value = redact(dict(value))
            elif f.name == "actions":
                value = [a.to_dict() if hasattr(a, "to_dict") else dict(a) for a in value]
            doc[f.name] = value
        return doc

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> "RunSettings":
        """The settings :meth:`to_document` wrote (``inputs.settings`` of benchmark.json).

        Raises:
            ConfigError: ``doc`` is not an object, or names a field RunSettings does not have.
        """
        from ..load.profiles import ActionSpec

        if not isinstance(doc, Mapping):
            raise ConfigError(f"'inputs.settings': got {type(doc).__name__}, expected an object "
                              "of run settings; give a benchmark.json of lagscale run")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(doc) - names)
        if unknown:
            raise ConfigError([f"'inputs.settings.{key}': not a run setting; allowed: "
                               f"{', '.join(sorted(names))}" for key in unknown])
        values = dict(doc)
        if values.get("out_dir") is not None:
            values["out_dir"] = Path(values["out_dir"])
        if "kafka_config" in values:
            values["kafka_config"] = dict(values["kafka_config"] or {})
        if "actions" in values:
            values["actions"] = tuple(
                ActionSpec(at_s=a["at_s"], action=a["action"],
                           params={k: v for k, v in a.items() if k not in ("at_s", "action")})
                for a in values["actions"] or ())
        return cls(**values)

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
        if self.group_type == "share":
            parts.append("share")
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
