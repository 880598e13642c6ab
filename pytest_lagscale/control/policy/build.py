"""Build a scaling policy from a validated policy manifest (the factory beside the registry).

``config`` reads and validates manifests (:func:`pytest_lagscale.config.policy.load_policy_manifest`)
and never imports ``control``; this function hands the result to the policy registry
(:data:`pytest_lagscale.control.policy.POLICIES`).

Example:
    >>> from pytest_lagscale.config.policy import load_policy_manifest
    >>> from pytest_lagscale.control.policy.build import build_policy
    >>> config = load_policy_manifest("k8s/hpa-cpu-ci.yaml")  # doctest: +SKIP
    >>> policy = build_policy(config, created_at_s=clock.now())  # doctest: +SKIP
    >>> policy.needs_cpu, policy.needs_lag  # doctest: +SKIP
    (True, False)
"""

from __future__ import annotations

from pytest_lagscale.config.policy import PolicyConfig
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.control.policy import POLICIES
from pytest_lagscale.control.policy.base import ScalingPolicy


def build_policy(config: PolicyConfig, *, created_at_s: float = 0.0) -> ScalingPolicy:
    """A fresh scaling policy for ``config`` (no history, schedule not started).

    Args:
        config: a validated manifest (:func:`pytest_lagscale.config.policy.load_policy_manifest`).
        created_at_s: the policy object's creation time on the runner's clock, in seconds
            (KEDA counts initialCooldownPeriod from it).

    Raises:
        ConfigError: ``config`` is not a manifest kind with a policy.
    """
    build = POLICIES.get(config.kind) if hasattr(config, "kind") else None
    if build is None:
        raise ConfigError(f"'kind': got {getattr(config, 'kind', type(config).__name__)!r}, expected one of "
                          f"{{{', '.join(repr(k) for k in POLICIES)}}} in build_policy(); "
                          "load the manifest with load_policy_manifest")
    return build(config, created_at_s=created_at_s)


__all__ = ["build_policy"]
