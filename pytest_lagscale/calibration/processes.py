"""Run a function over jobs on forked worker processes, for the twin's many independent
predictions (:func:`.fidelity.predict_runs`, :func:`.self_check.self_check`).

    from pytest_lagscale.calibration.processes import fork_map
    results = fork_map(predict_one, jobs, workers=2)   # in the order of ``jobs``

The workers are forked (a spawned pool would leave multiprocessing's resource tracker running,
a process the harness's leak check then kills), take the default signal handlers (not a
harness's clean-up), and are joined before :func:`fork_map` returns. A worker inherits what the
parent built before the call (caches included), so a job can be a key into it.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")


def fork_map(function: Callable[[J], R], jobs: Sequence[J], workers: int = 1) -> list[R]:
    """``[function(job) for job in jobs]`` on up to ``workers`` forked processes (in this
    process when ``workers`` <= 1 or there is at most one job). ``function`` must be a
    module-level function and its jobs and results picklable. An exception in a job
    propagates (the remaining jobs are cancelled)."""
    if workers <= 1 or len(jobs) <= 1:
        return [function(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                             mp_context=multiprocessing.get_context("fork"),
                             initializer=default_signals) as pool:
        return list(pool.map(function, jobs))


def default_workers() -> int:
    """The machine's cores, at most 4 (at least 1): the default number of workers."""
    return max(1, min(4, os.cpu_count() or 1))


def default_signals() -> None:
    """A forked worker does not run its parent's handlers (a harness's clean-up of what it
    manages): Ctrl-C interrupts it, SIGTERM and SIGHUP end it."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


__all__ = ["default_signals", "default_workers", "fork_map"]
