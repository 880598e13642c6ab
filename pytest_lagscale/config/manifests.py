"""Load the committed manifests together and check that they agree with each other.

The bundled manifests (``pytest_lagscale/data/k8s/``, symlinked from the repository's ``k8s/``)
are one ScaledObject (full or ``-ci`` scale), the consumer Deployment and the CPU HPA of
experiment 1; each file is validated on its own first, then across files.
:func:`manifest_paths` lives in :mod:`pytest_lagscale.config.bundled` and is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_lagscale.config._problems import Problems
from pytest_lagscale.config.bundled import SCALES, data_path, manifest_paths
from pytest_lagscale.config.deployment import DeploymentConfig, load_deployment
from pytest_lagscale.config.hpa import CpuHpaConfig, load_cpu_hpa
from pytest_lagscale.config.scaledobject import ScaledObjectConfig, load_scaled_object
from pytest_lagscale.contract.errors import ConfigError

K8S_DIR = data_path("k8s")
__all__ = ["K8S_DIR", "SCALES", "Manifests", "check_manifests", "load_manifests", "manifest_paths"]


@dataclass(frozen=True)
class Manifests:
    """The consistent set of manifests for one run.

    Attributes:
        scaled_object: the KEDA policy (None when only the CPU HPA is used).
        deployment: the consumer Deployment.
        cpu_hpa: the CPU HPA of experiment 1 (None when not loaded).
    """

    deployment: DeploymentConfig
    scaled_object: ScaledObjectConfig | None = None
    cpu_hpa: CpuHpaConfig | None = None


def load_manifests(deployment: str | Path, scaled_object: str | Path | None = None,
                   cpu_hpa: str | Path | None = None) -> Manifests:
    """Load the given files and check them against each other.

    Raises:
        ConfigError: every problem of every file (file by file), then the cross-file problems.
    """
    lines: list[str] = []
    loaded: dict[str, object] = {}
    for key, path, loader in (("deployment", deployment, load_deployment),
                              ("scaled_object", scaled_object, load_scaled_object),
                              ("cpu_hpa", cpu_hpa, load_cpu_hpa)):
        if path is None:
            continue
        try:
            loaded[key] = loader(path)
        except ConfigError as exc:
            lines.extend(exc.problems)
    if lines:
        raise ConfigError(lines)
    manifests = Manifests(**loaded)  # type: ignore[arg-type]
    check_manifests(manifests)
    return manifests


def check_manifests(manifests: Manifests) -> None:
    """Cross-file rules: same Deployment, same topic and group, a CPU request for cpu scaling.

    Raises:
        ConfigError: one line per disagreement, subject in the ScaledObject or HPA file.
    """
    deployment = manifests.deployment
    lines: list[str] = []
    so = manifests.scaled_object
    if so is not None:
        p = Problems(so.source)
        _same_target(so.scale_target_ref.name, deployment, p)
        for trigger in so.triggers:
            base = f"spec.triggers[{trigger.index}].metadata"
            if trigger.kafka is not None:
                command = deployment.replica is None
                for key, mine, theirs, flag in (("topic", trigger.kafka.topic, deployment.topic,
                                                 "KAFKA_TOPIC" if command else "--topic"),
                                                ("consumerGroup", trigger.kafka.consumer_group,
                                                 deployment.group, "KAFKA_GROUP" if command else "--group")):
                    if mine and mine != theirs:
                        p.add(f"{base}.{key}", mine, f"the Deployment's {flag} ({theirs!r}, {deployment.source})",
                              f"use the same {key} in both files")
            elif trigger.type == "cpu" and deployment.cpu_request_millicores is None:
                p.add(f"spec.triggers[{trigger.index}].type", "cpu",
                      f"a Deployment with resources.requests.cpu ({deployment.source})",
                      "add a CPU request to the consumer container")
        lines.extend(p.lines)
    if manifests.cpu_hpa is not None:
        p = Problems(manifests.cpu_hpa.source)
        _same_target(manifests.cpu_hpa.scale_target_ref.name, deployment, p)
        if deployment.cpu_request_millicores is None:
            p.add("spec.metrics[0].resource.name", "cpu", f"a Deployment with resources.requests.cpu "
                  f"({deployment.source})", "add a CPU request to the consumer container")
        lines.extend(p.lines)
    if lines:
        raise ConfigError(lines)


def _same_target(name: str, deployment: DeploymentConfig, p: Problems) -> None:
    if name != deployment.name:
        p.add("spec.scaleTargetRef.name", name, f"the Deployment's name ({deployment.name!r}, {deployment.source})",
              f"set it to {deployment.name!r}")
