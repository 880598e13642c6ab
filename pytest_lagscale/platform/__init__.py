"""Where replicas run: the :class:`~pytest_lagscale.platform.base.Platform` seam and its registry.

* ``local`` (:mod:`.local`): replica processes on this machine, scaled like a Deployment's pods;
* :mod:`.autoscaler`: runs a scaling policy against a platform.

A new platform is one module implementing :class:`~.base.Platform` plus one line in
:data:`PLATFORMS` and one branch of :func:`make_platform`. Importing this package is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The platforms ``--platform`` offers.
PLATFORMS = ("local",)


def make_platform(kind: str, template: Any, run_dir: Path | Any, *, graceful: bool = True,
                  clock: Any = None) -> Any:
    """Build (not start) the platform ``kind`` for one run.

    Args:
        kind: one of :data:`PLATFORMS`.
        template: the replica template (:func:`.local.template_from_deployment`).
        run_dir: the run directory (a :class:`~pytest_lagscale.contract.rundir.RunDir` or path).
        graceful: False: scale-down SIGKILLs replicas.
        clock: time source for event timestamps (``RealClock`` when None).

    Raises:
        ConfigError: unknown ``kind``.
    """
    if kind == "local":
        from .local import LocalDeployment

        return LocalDeployment(template, run_dir, graceful=graceful, clock=clock)
    from ..errors import ConfigError

    raise ConfigError(f"--platform: {kind!r} is not one of {', '.join(PLATFORMS)}; use "
                      "--platform=local")
