"""One experiment run end to end: settings -> plan -> run -> analysed result.

``run_experiment(settings)`` (= ``run_plan(plan_run(settings))``) is what the ``lagscale_run``
fixture calls; ``lagscale run`` plans first (exit 2 on bad input) and then calls ``run_plan``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunSettings", "RunResult", "RunProgress", "run_experiment", "run_plan",
           "plan_run"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package (from the plugin) must not import pandas or matplotlib.
    if name == "RunSettings":
        from .settings import RunSettings
        return RunSettings
    if name == "RunResult":
        from .result import RunResult
        return RunResult
    if name == "RunProgress":
        from .progress import RunProgress
        return RunProgress
    if name == "run_experiment":
        from .runner import run_experiment
        return run_experiment
    if name == "run_plan":
        from .runner import run_plan
        return run_plan
    if name == "plan_run":
        from .plan import plan_run
        return plan_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
