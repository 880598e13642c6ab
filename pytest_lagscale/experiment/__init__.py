"""One experiment run end to end: settings -> plan -> run -> analysed result.

``run_experiment`` is what ``lagscale run`` and the ``lagscale_run`` fixture call.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunSettings", "RunResult", "RunProgress", "run_experiment", "plan_run"]


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
    if name == "plan_run":
        from .plan import plan_run
        return plan_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
