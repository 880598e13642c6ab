"""The scaling policy's manifest: load any supported kind, override lagThreshold.

The file I/O happens here, outside ``control``; ``config`` never imports ``control``.
``build_policy`` in ``control/policy/build.py`` turns the validated config into a policy.

Kinds (:data:`MANIFEST_KINDS`): a KEDA ``ScaledObject`` (keda.sh/v1alpha1), an
autoscaling/v2 ``HorizontalPodAutoscaler`` with one metric (cpu Utilization, or a Pods metric
with an AverageValue target), or the lag-per-slot halving policy's ``LagPerSlotPolicy``
(lagscale.dev/v1alpha1, :mod:`.lag_per_slot`).

Example:
    >>> config = load_policy_manifest("k8s/hpa-cpu-ci.yaml")  # doctest: +SKIP
    >>> policy = build_policy(config, created_at_s=clock.now())  # doctest: +SKIP
    >>> policy.needs_cpu, policy.needs_lag  # doctest: +SKIP
    (True, False)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_lagscale.config import _read
from pytest_lagscale.config._problems import MISSING, Problems
from pytest_lagscale.config.hpa import HpaConfig, parse_hpa
from pytest_lagscale.config.lag_per_slot import LagPerSlotConfig, parse_lag_per_slot
from pytest_lagscale.config.scaledobject import ScaledObjectConfig, parse_scaled_object
from pytest_lagscale.config.trigger_metadata import TRIGGER_TYPES
from pytest_lagscale.contract.errors import ConfigError

#: A validated policy manifest (one of the kinds in :data:`MANIFEST_KINDS`).
PolicyConfig = ScaledObjectConfig | HpaConfig | LagPerSlotConfig

#: Manifest ``kind`` -> ``parse(doc, *, source) -> PolicyConfig``.
MANIFEST_KINDS: dict[str, Callable[..., Any]] = {
    "ScaledObject": parse_scaled_object,
    "HorizontalPodAutoscaler": parse_hpa,
    "LagPerSlotPolicy": parse_lag_per_slot,
}


def load_policy_manifest(path: str | Path) -> PolicyConfig:
    """Read and validate a policy manifest of any kind in :data:`MANIFEST_KINDS`.

    Raises:
        ConfigError: unreadable file, an unknown ``kind`` (naming it and the allowed kinds), or
            every problem of the manifest, one line each.
    """
    return parse_policy_manifest(_read.load_yaml(path), source=str(path))


def parse_policy_manifest(doc: Any, *, source: str = "<string>") -> PolicyConfig:
    """Validate a loaded policy document, dispatching on its ``kind``.

    Raises:
        ConfigError: see :func:`load_policy_manifest`.
    """
    kind = doc.get("kind", MISSING) if isinstance(doc, Mapping) else MISSING
    parse = MANIFEST_KINDS.get(kind) if isinstance(kind, str) else None
    if parse is None:
        p = Problems(source)
        allowed = "one of {" + ", ".join(repr(k) for k in MANIFEST_KINDS) + "}"
        p.add("kind", kind, allowed, "use a KEDA ScaledObject, an autoscaling/v2 "
              "HorizontalPodAutoscaler or a lagscale.dev/v1alpha1 LagPerSlotPolicy")
        p.raise_if_any()
    return parse(doc, source=source)


def with_lag_threshold(config: PolicyConfig, lag_threshold: int) -> PolicyConfig:
    """``config`` with every lag trigger's lagThreshold set to ``lag_threshold`` records.

    Raises:
        ConfigError: the manifest has no lag trigger to override (e.g. a CPU HPA).
    """
    triggers = []
    changed = False
    for trigger in getattr(config, "triggers", ()):
        settings = TRIGGER_TYPES[trigger.type].with_lag_threshold(trigger.settings, lag_threshold)
        if settings is not None:
            trigger = replace(trigger, settings=settings,
                              metadata={**trigger.metadata, "lagThreshold": str(lag_threshold)})
            changed = True
        triggers.append(trigger)
    if not changed:
        fix = ("set spec.lagPerSlot in the manifest" if config.kind == "LagPerSlotPolicy"
               else "add a kafka trigger")
        raise ConfigError(f"--lag-threshold: {config.source} has no kafka trigger to override; "
                          f"drop --lag-threshold or {fix}")
    return replace(config, triggers=tuple(triggers))
