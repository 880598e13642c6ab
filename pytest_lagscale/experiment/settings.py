"""What one experiment run is given: :class:`RunSettings`, validated before anything starts.

The same settings come from the ``lagscale run`` command line and from the pytest options
(``--profile``, ``--lag-threshold``, ``--balancer``, ``--partitions``, ``--lagscale-scale``,
``--lagscale-out``, ``--platform``, ``--kafka``); :meth:`RunSettings.check` reports every bad
value at once, naming the option and the allowed range, so a run never half-starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError

PLATFORMS = ("local", "kubernetes")
SCALES = ("ci", "full")
BALANCERS = ("cooperative-sticky", "range", "roundrobin", "consumer")
ENGINES = ("spark", "arrow")
KAFKA_KINDS = ("embedded", "testcontainers", "external")
MAX_PARTITIONS = 1024
MAX_LAG_THRESHOLD = 10_000_000


@dataclass(frozen=True)
class RunSettings:
    """Inputs of one run (every path relative to the working directory).

    Attributes:
        profile: traffic profile YAML (``fixtures/profiles/*.yaml``).
        scale: ``ci`` or ``full``: picks the committed ``-ci`` manifests when ``scaled_object``
            or ``deployment`` is None.
        scaled_object: KEDA ScaledObject YAML; None = ``k8s/scaledobject[-ci].yaml``.
        deployment: consumer Deployment YAML; None = ``k8s/consumer-deployment[-ci].yaml``.
        platform: ``local`` (processes) or ``kubernetes`` (not runnable here: kind/KEDA needed).
        kafka: ``embedded``, ``testcontainers`` or ``external`` (``kafka_bootstrap`` required).
        kafka_bootstrap: ``host:port`` of an external broker.
        kafka_config: extra librdkafka client settings (``--kafka-config KEY=VALUE``).
        lag_threshold: overrides the kafka trigger's ``lagThreshold``, records (1..10M).
        balancer: overrides the replicas' ``--balancer``.
        partitions: overrides the profile's partition count (1..1024).
        engine: overrides the replicas' ``--engine``.
        graceful: False: scale-down SIGKILLs replicas (experiment 6 without graceful drain).
        out_dir: parent of the run directory.
        name: run name (the directory is ``<out_dir>/<UTC stamp>-<name>``); default: the
            profile's name.
        settle_timeout_s: after the profile ends, seconds to wait for lag <= lagThreshold and
            replicas == minReplicaCount before recording (0..7200).
    """

    profile: Path
    scale: str = "ci"
    scaled_object: Path | None = None
    deployment: Path | None = None
    platform: str = "local"
    kafka: str = "embedded"
    kafka_bootstrap: str | None = None
    kafka_config: Mapping[str, str] = field(default_factory=dict)
    lag_threshold: int | None = None
    balancer: str | None = None
    partitions: int | None = None
    engine: str | None = None
    graceful: bool = True
    out_dir: Path = Path("lagscale-runs")
    name: str | None = None
    settle_timeout_s: float = 300.0

    def check(self) -> "RunSettings":
        """Return self when every value is allowed.

        Raises:
            ConfigError: one problem per bad value (option name, value, allowed range).
        """
        problems: list[str] = []

        def choice(option: str, value: Any, allowed: tuple[str, ...]) -> None:
            if value is not None and value not in allowed:
                problems.append(f"{option}: got {value!r}; allowed: {', '.join(allowed)}")

        def integer(option: str, value: Any, lo: int, hi: int) -> None:
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not lo <= value <= hi):
                problems.append(f"{option}: got {value!r}; allowed: an integer in [{lo}, {hi}]")

        def readable(option: str, path: Path | None) -> None:
            if path is not None and not Path(path).is_file():
                problems.append(f"{option}: {str(path)!r} is not a readable file; give the "
                                "path of a committed YAML file")

        readable("--profile", self.profile)
        readable("--scaledobject", self.scaled_object)
        readable("--deployment", self.deployment)
        choice("--lagscale-scale", self.scale, SCALES)
        choice("--platform", self.platform, PLATFORMS)
        choice("--kafka", self.kafka, KAFKA_KINDS)
        choice("--balancer", self.balancer, BALANCERS)
        choice("--engine", self.engine, ENGINES)
        integer("--lag-threshold", self.lag_threshold, 1, MAX_LAG_THRESHOLD)
        integer("--partitions", self.partitions, 1, MAX_PARTITIONS)
        if not 0 <= self.settle_timeout_s <= 7200:
            problems.append(f"--settle-timeout: got {self.settle_timeout_s!r}; allowed: "
                            "seconds in [0, 7200]")
        if self.kafka == "external" and not self.kafka_bootstrap:
            problems.append("--kafka=external needs --kafka-bootstrap HOST:PORT")
        if self.platform == "kubernetes":
            problems.append("--platform=kubernetes: not runnable by `lagscale run` yet; apply "
                            "k8s/ with kubectl and KEDA, or use --platform=local")
        if problems:
            raise ConfigError(problems)
        return self

    def with_overrides(self, **changes: Any) -> "RunSettings":
        """A copy with ``changes`` applied (dataclasses.replace)."""
        return replace(self, **changes)

    def manifest_files(self) -> dict[str, Path]:
        """``{'scaled_object': path, 'deployment': path}`` after the scale defaults."""
        from ..config.manifests import manifest_paths

        defaults = manifest_paths(self.scale)
        return {"scaled_object": Path(self.scaled_object or defaults["scaled_object"]),
                "deployment": Path(self.deployment or defaults["deployment"])}

    def label(self) -> str:
        """Short id of what differs from the defaults, for run names and test ids."""
        parts = [self.name or Path(self.profile).stem]
        if self.lag_threshold is not None:
            parts.append(f"lt{self.lag_threshold}")
        if self.balancer:
            parts.append(self.balancer)
        if self.partitions is not None:
            parts.append(f"p{self.partitions}")
        if not self.graceful:
            parts.append("sigkill")
        return "-".join(parts)
