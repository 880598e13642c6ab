"""Several runs at once on one broker: one ``lagscale run`` process per run.

For an experiment that compares policies on the same load at the same time (experiment 9, the
policy shoot-out): every run gets the same profile and seed, so the same records at the same
instants, and the same machine at the same moment, so no run is measured on a quieter machine
than another. Each run is a real ``lagscale run`` process (``python -m pytest_lagscale.cli
run``) in a process group of its own (:class:`~pytest_lagscale.process.ManagedProcess`),
started with ``--kafka external --kafka-bootstrap`` on the shared broker (the runner then gives
its topic and group a suffix of their own) and any further options of the run (a shared Spark
Connect server: ``--engine spark-connect --spark-remote``). Each writes its run directory under
``out_dir/<name>/``; its output goes to ``out_dir/<name>.log``.

On a timeout, a failed run or an exception (Ctrl-C included), every run still going is stopped
(SIGTERM to its group: the run stops its replicas, scaler and Prometheus; SIGKILL after the
grace period), so none outlives the caller.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ..contract.errors import ConfigError, LagscaleError
from ..exit_status import describe_exit
from ..process import ManagedProcess

#: Seconds a run gets after SIGTERM to stop its parts before its group is killed.
STOP_GRACE_S = 60.0
#: Lines of a failed run's log quoted in the error.
LOG_TAIL_LINES = 15


@dataclass(frozen=True)
class ConcurrentResult:
    """One run of :func:`run_concurrently`.

    Attributes:
        name: the run's name (a key of the ``runs`` argument).
        run_dir: its run directory (holds ``benchmark.json``).
        log_path: its ``lagscale run`` output.
        wall_time_s: seconds from the start of all runs to this one's exit.
    """

    name: str
    run_dir: Path
    log_path: Path
    wall_time_s: float


def run_argv(options: Sequence[str], bootstrap: str, out_dir: Path) -> list[str]:
    """The command line of one run: ``python -m pytest_lagscale.cli run`` with ``options``, the
    shared broker and the output directory.

    Raises:
        ConfigError: ``options`` already choose the broker or the output directory (the
            concurrent runner sets them).
    """
    taken = sorted({o.split("=", 1)[0] for o in options}
                   & {"--kafka", "--kafka-bootstrap", "--out"})
    if taken:
        raise ConfigError(f"run options: {', '.join(taken)} are set by the concurrent runner "
                          "(the shared broker and each run's own output directory); drop them")
    return [sys.executable, "-m", "pytest_lagscale.cli", "run", *options, "--kafka", "external",
            "--kafka-bootstrap", bootstrap, "--out", str(out_dir)]


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no output)"
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _run_dir(out_dir: Path) -> Path | None:
    found = sorted(p.parent for p in out_dir.glob("*/benchmark.json"))
    return found[-1] if found else None


def run_concurrently(runs: Mapping[str, Sequence[str]], *, bootstrap: str, out_dir: Path,
                     timeout_s: float, poll_s: float = 1.0) -> dict[str, ConcurrentResult]:
    """Start every run at once, wait for all, return ``name -> ConcurrentResult``.

    Args:
        runs: name (a directory name: letters, digits, ``-``, ``_``) -> ``lagscale run`` options
            (``["--profile", "spike-ci", "--policy", "lag-per-slot-ci", ...]``).
        bootstrap: the shared broker's bootstrap servers (``HOST:PORT``).
        out_dir: parent of each run's output directory ``out_dir/<name>/``.
        timeout_s: seconds all runs together may take (> 0).
        poll_s: seconds between checks of the runs.

    Raises:
        ConfigError: no runs, a bad name, a bad timeout, or options the runner sets itself.
        LagscaleError: a run exited non-zero, wrote no run directory, or the timeout passed:
            one line per such run with its exit code and the tail of its log; every run still
            going was stopped first.
    """
    if not runs:
        raise ConfigError("runs: got none, expected at least one name -> options")
    bad = [n for n in runs if not n or not n.replace("-", "").replace("_", "").isalnum()]
    if bad:
        raise ConfigError(f"runs: names {bad!r} are not directory names (letters, digits, - _)")
    if not timeout_s > 0:
        raise ConfigError(f"timeout_s: got {timeout_s!r}, expected > 0 seconds")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    argvs = {name: run_argv(options, bootstrap, out_dir / name) for name, options in runs.items()}
    procs: dict[str, ManagedProcess] = {}
    ended: dict[str, tuple[int, float]] = {}
    start = time.monotonic()
    try:
        for name, argv in argvs.items():
            procs[name] = ManagedProcess(f"run-{name}", argv,
                                         log_path=out_dir / f"{name}.log").start()
        while len(ended) < len(procs):
            for name, proc in procs.items():
                code = proc.popen.poll() if proc.popen is not None else -1
                if name not in ended and code is not None:
                    ended[name] = (code, time.monotonic() - start)
            if time.monotonic() - start > timeout_s:
                break
            time.sleep(poll_s)
    finally:
        for name, proc in procs.items():
            if name not in ended:
                proc.stop(timeout_s=STOP_GRACE_S)
    problems, results = [], {}
    for name in runs:
        log_path = out_dir / f"{name}.log"
        if name not in ended:
            problems.append(f"{name}: still running after {timeout_s:.0f} s, stopped; last "
                            f"lines of {log_path}:\n{_tail(log_path)}")
            continue
        code, wall_s = ended[name]
        run_dir = _run_dir(out_dir / name)
        if code != 0 or run_dir is None:
            problems.append(f"{name}: lagscale run {describe_exit(code)}"
                            + ("" if run_dir else " without a run directory")
                            + f"; last lines of {log_path}:\n{_tail(log_path)}")
            continue
        results[name] = ConcurrentResult(name, run_dir, log_path, wall_s)
    if problems:
        raise LagscaleError(f"{len(problems)} of {len(runs)} concurrent run(s) failed:\n"
                            + "\n".join(problems))
    return results


__all__ = ["ConcurrentResult", "LOG_TAIL_LINES", "STOP_GRACE_S", "run_argv",
           "run_concurrently"]
