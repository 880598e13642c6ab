"""Child processes in their own process groups, stopped SIGTERM -> grace -> SIGKILL -> reap.

Every process pytest-lagscale starts (broker, replicas, Prometheus, perf tools) goes through
:class:`ManagedProcess`: it runs in a new session (so its process group id equals its pid and
``os.killpg`` reaches everything it forks), carries the run id in ``LAGSCALE_RUN_ID``, writes a
pid file under ``~/.cache/pytest-lagscale/pids/<run id>/`` (next to a record of the harness: pid
and start time, see :mod:`pytest_lagscale.pidfiles`) and is stopped at interpreter exit if nobody
stopped it before. The directory goes when the harness's last child stops.

Every child is forked by one long-lived spawner thread and started under ``setpriv --pdeathsig
TERM``: the kernel's parent-death signal fires when the *thread* that forked exits, so whatever
thread asks (the autoscaler's starts replicas), the child gets SIGTERM when the harness dies,
SIGKILL included. The signal is armed in the child, after the fork, so a harness dying in
between would leave the child reparented and never signalled (the race ``man 2 prctl`` documents
for ``PR_SET_PDEATHSIG``); each child therefore checks, once the signal is armed and before its
program is exec'd, that its parent is still the harness, and exits with status 143 (128 +
SIGTERM) if not (:func:`_with_parent_death_signal`). ``lagscale cleanup`` reaps what is left
behind by run id, or every run whose harness is gone.

Every child runs with Python's faulthandler on (``PYTHONFAULTHANDLER=1``, :data:`CHILD_ENV`), so
a Python child that dies of a native crash leaves the Python stack of each of its threads in its
log. :meth:`ManagedProcess.exit_report` says how a child ended (a signal by name, with its exit
status: :mod:`pytest_lagscale.exit_status`) followed by its log's last lines.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Literal, Mapping, Sequence

from . import pidfiles
from .contract.paths import cache_dir
from .contract.errors import ConfigError, LagscaleError
from .exit_status import describe_exit
from .lifecycle import StartStop

log = logging.getLogger(__name__)

RUN_ID_ENV = "LAGSCALE_RUN_ID"
#: Environment every child gets (a child's own ``env`` may override it): Python's faulthandler
#: on, so a segfault, abort or bus error prints each thread's Python stack to the child's log.
CHILD_ENV = {"PYTHONFAULTHANDLER": "1"}
#: Log lines an exit report carries: enough for faulthandler's stack of the crashing thread.
EXIT_REPORT_LINES = 20
StopOutcome = Literal["not_started", "exited", "terminated", "killed"]

_registry_lock = threading.Lock()
_live: dict[int, "ManagedProcess"] = {}


def run_id() -> str:
    """The id of this harness run, inherited by every child through ``LAGSCALE_RUN_ID``.

    Created on first use (12 hex chars) and stored in ``os.environ`` so that children and
    nested harness processes share it.
    """
    rid = os.environ.get(RUN_ID_ENV)
    if not rid:
        rid = uuid.uuid4().hex[:12]
        os.environ[RUN_ID_ENV] = rid
    return rid


#: A run id's form: what :func:`run_id` makes (12 hex digits, ``-gw<N>`` under pytest-xdist) or
#: what ``LAGSCALE_RUN_ID`` names: letters, digits, ``-`` and ``_``, at most 64, never a path.
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def check_run_id(rid: str) -> str:
    """``rid`` if it has a run id's form (:data:`RUN_ID_PATTERN`); raises ConfigError naming
    the value and the form otherwise (a path such as ``../x`` would reach outside the pid
    root)."""
    if RUN_ID_PATTERN.fullmatch(rid) is None:
        raise ConfigError(f"run id {rid[:80]!r} is not a run id: 1-64 letters, digits, '-' or "
                          "'_' (what `lagscale run` prints, e.g. 3f2a9c1b7d40)")
    return rid


def pid_dir(rid: str | None = None) -> Path:
    """Directory holding the pid files of run ``rid`` (default: this run); raises ConfigError
    for a ``rid`` that is not a run id (:func:`check_run_id`)."""
    return cache_dir() / "pids" / check_run_id(run_id() if rid is None else rid)


class ManagedProcess(StartStop):
    """One child process in its own process group.

    Args:
        name: short unique label (``kafka``, ``replica-3``); used in logs, pid file, errors.
        argv: the command line.
        env: extra environment on top of ``os.environ`` and :data:`CHILD_ENV`
            (``LAGSCALE_RUN_ID`` always added).
        cwd: working directory.
        log_path: file receiving stdout and stderr (appended); ``None`` discards output.
        parent_death_signal: ``"TERM"`` (default) or ``"KILL"``: what the kernel sends the child
            when the harness dies without stopping it. ``"KILL"`` is for servers whose graceful
            shutdown waits on peers that die at the same moment (kube-apiserver drains requests
            to an etcd that is gone), so nothing would remain to finish it.

    Raises:
        LagscaleError: from :meth:`start` if the executable cannot be started.

    Example:
        >>> with ManagedProcess("sleeper", ["sleep", "30"]) as p:  # doctest: +SKIP
        ...     p.pid > 0
        True
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
        parent_death_signal: Literal["TERM", "KILL"] = "TERM",
    ):
        if parent_death_signal not in ("TERM", "KILL"):
            raise LagscaleError(f"{name}: parent_death_signal {parent_death_signal!r} is not "
                                f"one of TERM, KILL")
        self.name = name
        self.parent_death_signal = parent_death_signal
        self.argv = [str(a) for a in argv]
        self.env = dict(env or {})
        self.cwd = cwd
        self.log_path = Path(log_path) if log_path else None
        self.popen: subprocess.Popen[bytes] | None = None
        self.stop_outcome: StopOutcome | None = None
        self._pid_file: Path | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "ManagedProcess":
        """Start the process in a new session; returns self."""
        if self.popen is not None:
            return self
        env = {**os.environ, **CHILD_ENV, **self.env, RUN_ID_ENV: run_id()}
        out = subprocess.DEVNULL
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            out = open(self.log_path, "ab")  # noqa: SIM115 - closed after Popen copies the fd
        try:
            self.popen = _spawner.popen(
                _with_parent_death_signal(self.argv, self.parent_death_signal),
                env=env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise LagscaleError(
                f"{self.name}: cannot start {self.argv[0]!r}: {exc}; check that it is installed"
            ) from exc
        finally:
            if out is not subprocess.DEVNULL:
                out.close()
        with _registry_lock:
            _live[self.popen.pid] = self
            self._write_pid_file()
        log.debug("%s: started pid %d: %s", self.name, self.popen.pid, " ".join(self.argv))
        return self

    @property
    def pid(self) -> int:
        """Process id (== process group id); raises LagscaleError before start."""
        if self.popen is None:
            raise LagscaleError(f"{self.name}: not started; call start() first")
        return self.popen.pid

    def poll(self) -> int | None:
        """Exit code if the leader exited, else None (also None before start)."""
        return None if self.popen is None else self.popen.poll()

    def running(self) -> bool:
        """True while the group leader runs."""
        return self.popen is not None and self.popen.poll() is None

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the whole process group (no error if it is gone)."""
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, signum)
        except ProcessLookupError:
            pass

    def wait(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` seconds for the leader; returns its exit code or None."""
        if self.popen is None:
            return None
        try:
            return self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout_s: float = 10.0, *, graceful: bool = True) -> StopOutcome:
        """Stop the group: SIGTERM, wait ``timeout_s`` seconds, SIGKILL, reap. Idempotent.

        Args:
            timeout_s: grace period in seconds between SIGTERM and SIGKILL.
            graceful: False skips SIGTERM and kills at once.

        Returns:
            ``exited`` (it had already exited), ``terminated`` (exited within the grace period),
            ``killed`` (needed SIGKILL), or ``not_started``.
        """
        if self.popen is None:
            return "not_started"
        if self.stop_outcome is not None:
            return self.stop_outcome
        outcome: StopOutcome
        if self.popen.poll() is not None:
            outcome = "exited"
        elif graceful:
            self.signal(signal.SIGTERM)
            self.signal(signal.SIGCONT)  # a stopped (paused) group handles its SIGTERM now
            outcome = "terminated" if self.wait(timeout_s) is not None else "killed"
        else:
            outcome = "killed"
        # Whatever the leader did, nothing of its group may survive it.
        self.signal(signal.SIGKILL)
        self.popen.wait()
        _wait_group_gone(self.popen.pid, timeout_s=5.0)
        self.stop_outcome = outcome
        with _registry_lock:
            _live.pop(self.popen.pid, None)
            if self._pid_file is not None:
                self._pid_file.unlink(missing_ok=True)
                if not _live:  # the harness's last child: its pid directory goes too
                    pidfiles.release(self._pid_file.parent)
        log.info("%s: stopped pid %d (%s, %s)", self.name, self.popen.pid, outcome,
                 describe_exit(self.popen.returncode))
        return outcome

    def tail(self, lines: int = 20) -> list[str]:
        """The last ``lines`` lines of the process's log (empty when there is no log)."""
        if self.log_path is None or not self.log_path.exists():
            return []
        with open(self.log_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
        return list(deque(text.splitlines(), maxlen=lines))

    def exit_report(self, lines: int = EXIT_REPORT_LINES) -> str:
        """How the process ended and its log's last ``lines`` lines, for an error or a log line.

        The first line reads ``<name>: <describe_exit>; log <path>`` (``still running`` while it
        runs, ``not started`` before :meth:`start`); the log's lines follow, each indented by two
        spaces. After a native crash they hold faulthandler's ``Fatal Python error: ...`` and the
        ``File ...`` lines of each thread.

        Example:
            >>> print(proc.exit_report())  # doctest: +SKIP
            crasher: killed by SIGSEGV (exit status -11; 139 in a shell); log /tmp/crasher.log
              Fatal Python error: Segmentation fault
              ...
        """
        code = self.poll()
        if self.popen is None:
            how = "not started"
        else:
            how = "still running" if code is None else describe_exit(code)
        where = f"log {self.log_path}" if self.log_path is not None else "no log"
        return "\n".join([f"{self.name}: {how}; {where}",
                          *(f"  {line}" for line in self.tail(lines))])

    def __repr__(self) -> str:
        pid = self.popen.pid if self.popen else None
        return f"ManagedProcess({self.name!r}, pid={pid})"

    def _write_pid_file(self) -> None:
        """Record the harness (once per directory) and this child; called under the lock."""
        try:
            d = pid_dir()
            pidfiles.record_harness(d)
            self._pid_file = pidfiles.write_pid_file(d, self.name, self.pid, self.argv)
        except OSError:  # pid files are a convenience for `lagscale cleanup`
            self._pid_file = None


_SpawnRequest = tuple["concurrent.futures.Future[subprocess.Popen[bytes]]", list[str],
                      dict[str, object]]


class _Spawner:
    """The one thread that forks every child, alive until the interpreter exits.

    ``PR_SET_PDEATHSIG`` fires when the thread that forked the child exits, not the process:
    a replica forked by the autoscaler's thread would get SIGTERM whenever that thread ended (so
    before this spawner such children went without the signal, and outlived a SIGKILLed
    harness). One daemon thread that never returns makes the signal mean "the harness died".
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[_SpawnRequest] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, argv: list[str], **kwargs: object) -> "subprocess.Popen[bytes]":
        """``subprocess.Popen(argv, **kwargs)`` run by the spawner thread; raises what it
        raises."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():  # first use, or after fork
                self._requests = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._serve, name="lagscale-spawner",
                                                daemon=True)
                self._thread.start()
        done: concurrent.futures.Future[subprocess.Popen[bytes]] = concurrent.futures.Future()
        self._requests.put((done, argv, kwargs))
        try:
            return done.result()
        except BaseException:  # e.g. Ctrl-C while waiting: nobody will own the child, kill it
            done.add_done_callback(_kill_unclaimed)
            raise

    def _serve(self) -> None:
        while True:  # never returns: the thread's exit would signal every child
            done, argv, kwargs = self._requests.get()
            try:
                done.set_result(subprocess.Popen(argv, **kwargs))  # type: ignore[call-overload]
            except BaseException as exc:  # handed to the caller, never ends the thread
                done.set_exception(exc)


def _kill_unclaimed(done: "concurrent.futures.Future[subprocess.Popen[bytes]]") -> None:
    if done.exception() is None:
        popen = done.result()
        try:
            os.killpg(popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        popen.wait()


_spawner = _Spawner()
os.register_at_fork(after_in_child=_spawner.__init__)  # a forked child has no spawner thread


#: Run by ``/bin/sh`` between setpriv and the program: ``$1`` is the harness's pid, ``$2`` the
#: exit status meaning "the parent-death signal arrived", the rest the program's argv. ``$PPID``
#: is the shell's getppid() at its start, so after setpriv's prctl. ``exec "$@"`` keeps the pid
#: and passes every word as it is (empty words, spaces, quotes, ``$``: nothing is re-parsed).
_PARENT_CHECK = 'test "$PPID" = "$1" || exit "$2"; shift 2; exec "$@"'


def _with_parent_death_signal(argv: list[str], signame: str = "TERM",
                              parent_pid: int | None = None) -> list[str]:
    """Prefix ``argv`` so the child gets SIG``signame`` if the harness dies without cleaning up.

    A harness killed with SIGKILL (or hung up before its handler ran) runs no atexit handler;
    ``PR_SET_PDEATHSIG`` (set by util-linux ``setpriv --pdeathsig``) makes the kernel signal the
    child instead. It fires when the forking *thread* exits, hence :class:`_Spawner`.

    The signal is armed by the child itself, after the fork: a parent that dies in between has
    already given the child to another process (init or a subreaper), and no signal ever comes.
    ``man 2 prctl`` (``PR_SET_PDEATHSIG``) says to close that race by checking, after the prctl,
    that the parent is still the expected one. So setpriv execs ``/bin/sh`` (:data:`_PARENT_CHECK`),
    which compares its parent pid with ``parent_pid`` and exits at once with status 128 + the
    signal's number (143 for TERM), as if the signal had arrived, or else execs ``argv``. Both
    execs keep the pid, so the Popen pid is the program's pid, group and pid file.

    Without setpriv, ``argv`` is returned as it is and the child relies on :func:`stop_all` and
    ``lagscale cleanup``.

    Args:
        argv: the program's command line.
        signame: ``TERM`` or ``KILL``, the signal's name without ``SIG``.
        parent_pid: the pid the child's parent must have: the harness, this process by default.

    Raises:
        OSError: the executable does not exist (checked here, since setpriv would exec it).
    """
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return argv
    if shutil.which(argv[0]) is None:
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    parent = os.getpid() if parent_pid is None else parent_pid
    died = 128 + signal.Signals[f"SIG{signame}"]
    return [setpriv, "--pdeathsig", signame, "--", "/bin/sh", "-c", _PARENT_CHECK,
            "lagscale-child", str(parent), str(died), *argv]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) succeeds for zombies too; check that some member is not a zombie.
    return bool(group_members(pgid))


def _wait_group_gone(pgid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid) and time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def group_cpu_seconds(pgid: int) -> float:
    """CPU seconds (user + system) of the live members of process group ``pgid``."""
    import psutil

    total = 0.0
    for pid in group_members(pgid):
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:  # exited between the listing and the read
            continue
        total += times.user + times.system
    return total


def group_rss_bytes(pgid: int) -> int:
    """Resident set size in bytes, summed over the live members of process group ``pgid``."""
    import psutil

    total = 0
    for pid in group_members(pgid):
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:  # exited between the listing and the read
            continue
    return total


def group_members(pgid: int) -> list[int]:
    """Pids of the live (non-zombie) processes in process group ``pgid``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry.name))
    return pids


def live_processes() -> list[ManagedProcess]:
    """Processes started by this interpreter and not yet stopped."""
    with _registry_lock:
        return list(_live.values())


def stop_all(timeout_s: float = 5.0) -> None:
    """Stop every process this interpreter started and has not stopped (newest first)."""
    for proc in reversed(live_processes()):
        try:
            proc.stop(timeout_s)
        except Exception:  # keep stopping the others; this runs at exit
            log.exception("%s: stop failed", proc.name)


def reap_run(rid: str, timeout_s: float = 5.0) -> list[int]:
    """Kill every process group recorded for run ``rid`` or carrying it in its environment,
    then delete the run's pid directory.

    Used by ``lagscale cleanup`` after a harness was killed with SIGKILL. Each group gets
    SIGTERM, then SIGKILL after ``timeout_s`` seconds if it is still there.

    Returns:
        The process group ids that were signalled (recorded groups already gone are not),
        sorted.
    """
    d = pid_dir(rid)
    pgids = pidfiles.recorded_pids(d) if d.is_dir() else set()
    pgids |= _groups_carrying(rid)
    pgids.discard(os.getpgid(0))
    signalled = []
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:  # a pid file of a group that is already gone
            continue
        signalled.append(pgid)
    for pgid in signalled:
        _wait_group_gone(pgid, timeout_s)
    pidfiles.remove(d)
    return sorted(signalled)


def _groups_carrying(rid: str) -> set[int]:
    """Process groups of the live processes (this one excepted) whose environment carries
    ``LAGSCALE_RUN_ID=rid``."""
    needle = f"{RUN_ID_ENV}={rid}".encode()
    me, out = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                out.add(os.getpgid(int(entry.name)))
        except (OSError, ProcessLookupError):
            continue
    return out


def known_run(rid: str) -> bool:
    """True when run ``rid`` has a pid directory or a live process carrying its id; raises
    ConfigError for a ``rid`` that is not a run id."""
    return pid_dir(rid).is_dir() or bool(_groups_carrying(rid) - {os.getpgid(0)})


def reap_gone_runs(timeout_s: float = 5.0) -> dict[str, list[int]]:
    """:func:`reap_run` every run under the pid root whose harness is gone (dead, a zombie,
    or its pid reused: :func:`pytest_lagscale.pidfiles.harness_gone`); runs whose harness lives
    are left alone.

    Args:
        timeout_s: seconds between SIGTERM and SIGKILL for each process group.

    Returns:
        ``{run id: signalled process group ids}`` for every run reaped (its pid directory is
        deleted), in run-id order.
    """
    root = cache_dir() / "pids"
    runs = sorted(d for d in root.iterdir()
                  if d.is_dir() and RUN_ID_PATTERN.fullmatch(d.name)) if root.is_dir() else []
    return {d.name: reap_run(d.name, timeout_s) for d in runs if pidfiles.harness_gone(d)}


atexit.register(stop_all)
