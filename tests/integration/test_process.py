"""ManagedProcess against real processes: groups, signals, grace periods, orphan reaping."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from pytest_lagscale.contract.errors import LagscaleError
from pytest_lagscale.process import ManagedProcess, group_members, reap_run

IGNORE_SIGTERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
                 "print('up', flush=True); time.sleep(60)"
#: A real segfault (a read of address 0) in a function of its own, as a native library's bug.
SEGFAULT = "import ctypes\n\n\ndef crash():\n    ctypes.string_at(0)\n\n\ncrash()\n"


def _wait_for_line(proc: ManagedProcess, text: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in "\n".join(proc.tail()):
        assert time.monotonic() < deadline, f"{proc.name}: no {text!r} in {proc.tail()}"
        time.sleep(0.02)


def test_sigterm_stops_the_whole_group_including_grandchildren(tmp_path) -> None:
    proc = ManagedProcess("tree", ["bash", "-c", "sleep 60 & sleep 60 & wait"],
                          log_path=tmp_path / "tree.log").start()
    deadline = time.monotonic() + 5
    while len(group_members(proc.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(group_members(proc.pid)) == 3
    assert os.getpgid(proc.pid) == proc.pid
    assert proc.stop(timeout_s=5) == "terminated"
    assert group_members(proc.pid) == []
    assert proc.stop() == "terminated"  # idempotent: same outcome, no error


def test_process_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path) -> None:
    proc = ManagedProcess("stubborn", [sys.executable, "-c", IGNORE_SIGTERM],
                          log_path=tmp_path / "stubborn.log").start()
    _wait_for_line(proc, "up")
    started = time.monotonic()
    assert proc.stop(timeout_s=0.5) == "killed"
    assert time.monotonic() - started >= 0.5
    assert proc.popen.returncode == -9
    assert group_members(proc.pid) == []


def test_exited_process_reports_exited_and_tail_shows_its_output(tmp_path) -> None:
    proc = ManagedProcess("echo", ["bash", "-c", "for i in $(seq 1 30); do echo line$i; done"],
                          log_path=tmp_path / "echo.log").start()
    assert proc.wait(5) == 0
    assert proc.stop() == "exited"
    assert proc.tail(3) == ["line28", "line29", "line30"]


def test_a_child_killed_by_sigsegv_is_reported_with_the_signal_status_and_python_stack(
        tmp_path, monkeypatch) -> None:
    # PYTHONFAULTHANDLER comes from the harness's launcher, not from this session's environment
    monkeypatch.delenv("PYTHONFAULTHANDLER", raising=False)
    script = tmp_path / "crasher.py"
    script.write_text(SEGFAULT)
    proc = ManagedProcess("crasher", [sys.executable, str(script)],
                          log_path=tmp_path / "crasher.log").start()
    assert proc.wait(10) == -signal.SIGSEGV
    first, *lines = proc.exit_report().splitlines()
    assert first == (f"crasher: killed by SIGSEGV (exit status -11; 139 in a shell); "
                     f"log {tmp_path / 'crasher.log'}")
    stack = [line.strip() for line in lines]  # faulthandler's, in the child's log
    assert "Fatal Python error: Segmentation fault" in stack
    assert f'File "{script}", line 5 in crash' in stack, stack
    assert f'File "{script}", line 8 in <module>' in stack, stack
    assert proc.stop() == "exited"


def test_exit_report_of_a_clean_exit_and_of_a_running_child(tmp_path) -> None:
    proc = ManagedProcess("echo", ["bash", "-c", "echo bye"], log_path=tmp_path / "echo.log")
    assert proc.exit_report() == "echo: not started; log " + str(tmp_path / "echo.log")
    proc.start().wait(5)
    assert proc.exit_report().splitlines() == [
        f"echo: exited with code 0; log {tmp_path / 'echo.log'}", "  bye"]
    proc.stop()
    with ManagedProcess("sleeper", ["sleep", "30"]) as sleeper:
        assert sleeper.exit_report() == "sleeper: still running; no log"


def test_missing_executable_is_a_clear_error() -> None:
    with pytest.raises(LagscaleError, match=r"^nothing: cannot start '/no/such/binary': .*; "
                                            r"check that it is installed$"):
        ManagedProcess("nothing", ["/no/such/binary"]).start()
    assert ManagedProcess("never", ["true"]).stop() == "not_started"


def test_reap_run_kills_processes_of_a_dead_harness_by_run_id(tmp_path) -> None:
    # A harness (child python) starts a grandchild group, then dies by SIGKILL without cleanup.
    # The grandchild ignores SIGTERM (the harness dies once it said so), so the parent-death
    # signal leaves it: only reaping stops it.
    script = ("import os, time\nfrom pytest_lagscale.process import ManagedProcess\n"
              "p = ManagedProcess('orphan', ['bash', '-c', \"trap '' TERM; echo up; exec sleep "
              f"120\"], log_path={str(tmp_path / 'orphan.log')!r}).start()\n"
              "while 'up' not in p.tail():\n    time.sleep(0.02)\n"
              "print(p.pid, flush=True)\nos.kill(os.getpid(), 9)\n")
    env = {**os.environ, "LAGSCALE_RUN_ID": "reaptest0001",
           "LAGSCALE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=30)
    orphan = int(out.stdout.split()[0])
    assert group_members(orphan) == [orphan]
    os.environ["LAGSCALE_CACHE_DIR"], saved = str(tmp_path), os.environ.get("LAGSCALE_CACHE_DIR")
    try:
        assert orphan in reap_run("reaptest0001")
    finally:
        if saved is None:
            del os.environ["LAGSCALE_CACHE_DIR"]
        else:
            os.environ["LAGSCALE_CACHE_DIR"] = saved
    assert group_members(orphan) == []


def test_a_kill_parent_death_signal_stops_a_child_that_ignores_sigterm(tmp_path) -> None:
    # As the control plane's servers are started: a SIGTERM that is ignored (or, for
    # kube-apiserver, a graceful drain that never ends) must not let the child outlive its harness.
    script = ("import os, time\nfrom pytest_lagscale.process import ManagedProcess\n"
              "p = ManagedProcess('stubborn', ['bash', '-c', \"trap '' TERM; echo up; exec sleep "
              f"120\"], log_path={str(tmp_path / 'stubborn.log')!r}, "
              "parent_death_signal='KILL').start()\n"
              "while 'up' not in p.tail():\n    time.sleep(0.02)\n"
              "print(p.pid, flush=True)\nos.kill(os.getpid(), 9)\n")
    env = {**os.environ, "LAGSCALE_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=30)
    child = int(out.stdout.split()[0])
    deadline = time.monotonic() + 5
    while group_members(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members(child) == []


def test_an_unknown_parent_death_signal_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(LagscaleError, match=r"^x: parent_death_signal 'HUP' is not one of "
                                            r"TERM, KILL$"):
        ManagedProcess("x", ["true"], parent_death_signal="HUP")  # type: ignore[arg-type]


def test_group_cpu_and_rss_sum_the_live_members_of_a_process_group() -> None:
    from pytest_lagscale.process import group_cpu_seconds, group_rss_bytes

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n" \
           "time.sleep(30)"
    with ManagedProcess("burner", [sys.executable, "-c", burn]) as child:
        deadline = time.monotonic() + 10
        while group_cpu_seconds(child.pid) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group_cpu_seconds(child.pid) >= 0.25
        assert group_rss_bytes(child.pid) > 1_000_000  # an interpreter is megabytes
    assert group_cpu_seconds(child.pid) == 0.0 and group_rss_bytes(child.pid) == 0
