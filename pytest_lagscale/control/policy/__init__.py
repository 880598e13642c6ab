"""Scaling policies: the seam between the runner and whatever decides the replica count.

* :mod:`.base`: :class:`ScalingPolicy` (``due``, ``decide``, facts), :class:`Decision`,
  :class:`PolicyStep`;
* :mod:`.keda_hpa`: :class:`KedaHpaPolicy` (a ScaledObject, or a plain HPA: cpu or a Pods metric);
* :mod:`.lag_per_slot`: :class:`LagPerSlotPolicy` (the recipe "Kafka Lag Autoscaler"'s
  lag-per-slot halving policy, a ``LagPerSlotPolicy`` manifest);
* :data:`POLICIES`: manifest ``kind`` -> builder ``(config, *, created_at_s) -> ScalingPolicy``.

A new policy is one module here and one line in :data:`POLICIES` (plus its manifest parser in
:data:`pytest_lagscale.config.policy.MANIFEST_KINDS`); the runner does not change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_lagscale.control.policy.base import Decision, PolicyStep, ScalingPolicy
from pytest_lagscale.control.policy.keda_hpa import KedaHpaPolicy
from pytest_lagscale.control.policy.lag_per_slot import LagPerSlotPolicy

#: Manifest kind -> ``build(config, *, created_at_s=0.0) -> ScalingPolicy``.
POLICIES: dict[str, Callable[..., Any]] = {
    "ScaledObject": KedaHpaPolicy.from_scaled_object,
    "HorizontalPodAutoscaler": KedaHpaPolicy.from_hpa,
    "LagPerSlotPolicy": LagPerSlotPolicy.from_config,
}

__all__ = ["POLICIES", "Decision", "KedaHpaPolicy", "LagPerSlotPolicy", "PolicyStep", "ScalingPolicy"]
