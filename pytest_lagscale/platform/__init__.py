"""Where replicas run: the :class:`~pytest_lagscale.platform.base.Platform` seam and its registry.

* ``local`` (:mod:`.local`): replica processes on this machine, scaled like a Deployment's pods;
* ``kubernetes`` (:mod:`.kubernetes`): the real KEDA and HPA on a local control plane, pods run
  by a node agent;
* :mod:`.autoscaler`: runs a scaling policy against a platform.

A new platform is one module implementing :class:`~.base.Platform` plus one line in
:data:`PLATFORMS`. Importing this package is cheap: implementations load when built.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

#: ``--platform`` name -> ``"module:class"`` (relative to this package) of its implementation,
#: built as ``cls(template, run_dir, graceful=..., clock=...)``.
PLATFORMS: dict[str, str] = {
    "local": ".local:LocalDeployment",
    "kubernetes": ".kubernetes:KubernetesDeployment",
}
#: What runs ``--platform kubernetes``'s pods (``--node``): a real kubelet, or the node agent.
NODES: tuple[str, ...] = ("kubelet", "process")


def platform_class(kind: str) -> Any:
    """The implementation class of ``kind``.

    Raises:
        ConfigError: unknown ``kind``.
    """
    target = PLATFORMS.get(kind)
    if target is None:
        from ..contract.errors import ConfigError

        raise ConfigError(f"--platform: {kind!r} is not one of {', '.join(PLATFORMS)}; use "
                          "--platform=local")
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module, __name__), name)


def check_plan(kind: str, plan: Any) -> None:
    """Let platform ``kind`` refuse a plan before anything starts (its optional
    ``check_plan(plan)``).

    Raises:
        ConfigError: unknown ``kind``, or what the platform refuses.
    """
    check = getattr(platform_class(kind), "check_plan", None)
    if check is not None:
        check(plan)


def make_platform(kind: str, template: Any, run_dir: Path | Any, *, graceful: bool = True,
                  clock: Any = None) -> Any:
    """Build (not start) the platform ``kind`` for one run.

    Args:
        kind: a key of :data:`PLATFORMS`.
        template: the replica template (:func:`.local.template_from_deployment`).
        run_dir: the run directory (a :class:`~pytest_lagscale.contract.rundir.RunDir` or path).
        graceful: False: scale-down SIGKILLs replicas.
        clock: time source for event timestamps (``RealClock`` when None).

    Raises:
        ConfigError: unknown ``kind``.
    """
    return platform_class(kind)(template, run_dir, graceful=graceful, clock=clock)
