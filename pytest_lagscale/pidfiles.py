"""A run's pid directory: which processes a harness started, and whether that harness still lives.

``<cache>/pids/<run id>/`` holds one ``<name>.<pid>.pid`` file per live child (its pid, then its
command line) and one ``harness.<pid>`` record per harness process of the run (its pid and its
start time in clock ticks since boot, field 22 of ``/proc/<pid>/stat``; several when harnesses
nest and share the run id). A harness is *gone* when its pid is dead, a zombie, or now belongs to
a process started at another time (pid reuse). ``lagscale cleanup`` with no argument reaps every
run whose harnesses are all gone; a harness that ends cleanly removes its record and the
directory itself (:func:`release`).

Plain files only (no process spawning), so :mod:`pytest_lagscale.process` and its tests use it
without cycles.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

HARNESS_PREFIX = "harness."
PID_SUFFIX = ".pid"


@dataclass(frozen=True)
class HarnessRecord:
    """One harness process of a run.

    Attributes:
        pid: the harness's process id.
        start_ticks: its start time, clock ticks since boot (``/proc/<pid>/stat`` field 22).
    """

    pid: int
    start_ticks: int


def process_start_ticks(pid: int) -> int | None:
    """Start time of live process ``pid`` in clock ticks since boot; None if it is gone or a
    zombie (a killed harness its parent has not reaped yet is gone too)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # fields[0] is field 3 (state)
    if not fields or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def record_harness(directory: Path, pid: int | None = None) -> HarnessRecord | None:
    """Write ``directory/harness.<pid>`` for process ``pid`` (default: this process) unless it
    exists; returns the record, or None when the process is gone."""
    pid = os.getpid() if pid is None else pid
    ticks = process_start_ticks(pid)
    if ticks is None:
        return None
    path = directory / f"{HARNESS_PREFIX}{pid}"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{pid} {ticks}\n")
    return HarnessRecord(pid, ticks)


def harness_records(directory: Path) -> list[HarnessRecord]:
    """The harness records in ``directory`` (unreadable or malformed ones are skipped)."""
    records = []
    for path in sorted(directory.glob(f"{HARNESS_PREFIX}*")):
        try:
            pid, ticks = (int(v) for v in path.read_text().split()[:2])
        except (OSError, ValueError):
            continue
        records.append(HarnessRecord(pid, ticks))
    return records


def harness_gone(directory: Path,
                 start_ticks: Callable[[int], int | None] = process_start_ticks) -> bool:
    """True when no harness recorded in ``directory`` is alive.

    Args:
        directory: a run's pid directory.
        start_ticks: ``pid -> start ticks or None``; :func:`process_start_ticks` by default.

    A recorded harness is alive when its pid runs and started at the recorded tick (a reused
    pid does not count). A directory without any record (written by a version that kept none,
    or a crash before the first write) counts as gone.
    """
    return not any(start_ticks(r.pid) == r.start_ticks for r in harness_records(directory))


def write_pid_file(directory: Path, name: str, pid: int, argv: Sequence[str]) -> Path:
    """Write ``directory/<name>.<pid>.pid`` (pid, then the command line); returns its path.

    Raises:
        OSError: the directory cannot be created or written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.{pid}{PID_SUFFIX}"
    path.write_text(f"{pid}\n{' '.join(argv)}\n")
    return path


def recorded_pids(directory: Path) -> set[int]:
    """The pids (== process group ids) named by the pid files in ``directory``."""
    pids = set()
    for path in directory.glob(f"*{PID_SUFFIX}"):
        try:
            pids.add(int(path.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def release(directory: Path, pid: int | None = None) -> bool:
    """A harness ends cleanly: remove its record and, when nothing else is left in it, the
    directory. Returns True when the directory is gone afterwards."""
    pid = os.getpid() if pid is None else pid
    (directory / f"{HARNESS_PREFIX}{pid}").unlink(missing_ok=True)
    try:
        directory.rmdir()
    except FileNotFoundError:
        return True
    except OSError:  # other pid files or another (nested) harness's record: keep it
        return False
    return True


def remove(directory: Path) -> None:
    """Delete a run's pid directory with its pid files and harness records (after reaping)."""
    if not directory.is_dir():
        return
    for path in directory.iterdir():
        if path.name.startswith(HARNESS_PREFIX) or path.name.endswith(PID_SUFFIX):
            path.unlink(missing_ok=True)
    try:
        directory.rmdir()
    except OSError:  # a file we did not write: leave the directory for a human
        pass
