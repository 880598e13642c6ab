"""Where replicas run: the :class:`~pytest_lagscale.platform.base.Platform` seam and its registry.

* ``local`` (:mod:`.local`): replica processes on this machine, scaled like a Deployment's pods;
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
}


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
    target = PLATFORMS.get(kind)
    if target is None:
        from ..errors import ConfigError

        raise ConfigError(f"--platform: {kind!r} is not one of {', '.join(PLATFORMS)}; use "
                          "--platform=local")
    module, _, name = target.partition(":")
    cls = getattr(importlib.import_module(module, __name__), name)
    return cls(template, run_dir, graceful=graceful, clock=clock)
