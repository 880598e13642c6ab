"""What the local control plane takes of a policy manifest: which ones it runs, and its HPA timing.

Both ``lagscale kube up`` (:mod:`.cli`) and a run with ``--platform kubernetes``
(:mod:`pytest_lagscale.platform.kubernetes`) start the control plane from a policy manifest:
:func:`check_policy` refuses one the real KEDA here cannot run, :func:`hpa_timing` turns a
ScaledObject's ``lagscale.dev/hpa-*`` annotations into the controller-manager's HPA flags, and
:data:`NAMESPACE` is the namespace whose start-up objects the control plane applies.

Example:
    >>> from pytest_lagscale.config.policy import load_policy_manifest  # doctest: +SKIP
    >>> config = load_policy_manifest("k8s/scaledobject-ci.yaml")  # doctest: +SKIP
    >>> check_policy(config)  # a kafka ScaledObject: no error  # doctest: +SKIP
    >>> hpa_timing(config).sync_period_s  # doctest: +SKIP
    3
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..contract.errors import ConfigError

#: The namespace of a run's objects on the control plane it starts (and of ``kube up``'s
#: start-up objects); a ``--kubeconfig`` cluster gives each run its own instead.
NAMESPACE = "lagscale"


def hpa_timing(policy_config: Any) -> Any:
    """The controller-manager's HPA timing from a ScaledObject's ``lagscale.dev/hpa-*``
    annotations (the same values the embedded controller uses).

    Args:
        policy_config: a loaded ScaledObject (its ``harness`` holds the annotations).

    Returns:
        A :class:`~pytest_lagscale.kube.commands.HpaTiming`.
    """
    from .commands import HpaTiming

    harness = policy_config.harness
    return HpaTiming(sync_period_s=harness.hpa_sync_period_s, tolerance=harness.hpa_tolerance,
                     downscale_stabilization_s=harness.hpa_downscale_stabilization_s)


def check_policy(policy_config: Any) -> None:
    """Refuse a policy the real KEDA cannot run.

    Raises:
        ConfigError: not a ScaledObject, or a trigger other than ``kafka`` (the local
            control plane's KEDA reaches the run's broker; the other lag sources' counterparts
            are the harness's).
    """
    kind = getattr(policy_config, "kind", type(policy_config).__name__)
    if kind != "ScaledObject":
        raise ConfigError(f"--platform kubernetes: policy {Path(policy_config.source).name!r} is a "
                          f"{kind}; only KEDA ScaledObjects run on the local control plane "
                          "(e.g. --policy scaledobject-ci); use --platform local for it")
    bad = [t.type for t in policy_config.triggers if t.type != "kafka"]
    if bad:
        raise ConfigError(f"--platform kubernetes: trigger type(s) {', '.join(bad)} of "
                          f"{Path(policy_config.source).name!r}: only 'kafka' runs on the local "
                          "control plane; use --platform local for it")


__all__ = ["NAMESPACE", "check_policy", "hpa_timing"]
