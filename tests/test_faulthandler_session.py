"""A pytest session keeps printing Python stacks on a native crash after in-process pytester
sessions (tests/conftest.py): the crash here is a thread Python does not know jumping to
address 0x58, as librdkafka's ``rdk:main`` thread did in a benchmark session."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

NESTED = """\
pytest_plugins = ["pytester"]


def test_a_nested_session(pytester):
    pytester.makepyfile("def test_ok(): pass")
    pytester.runpytest().assert_outcomes(passed=1)
"""
CRASH = """\
import ctypes
import time


def test_a_native_thread_segfaults():
    thread = ctypes.c_ulong()
    ctypes.CDLL(None).pthread_create(ctypes.byref(thread), None, ctypes.c_void_p(0x58), None)
    time.sleep(10)
"""


def test_a_native_crash_after_a_nested_session_prints_the_python_stack(tmp_path: Path) -> None:
    (tmp_path / "test_a_nested.py").write_text(NESTED)
    (tmp_path / "test_b_crash.py").write_text(CRASH)
    root = Path(__file__).parents[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONFAULTHANDLER", "PYTEST_ADDOPTS")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-p", "no:randomly", "-q", str(tmp_path / "test_a_nested.py"),
         str(tmp_path / "test_b_crash.py")],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGSEGV, done.stdout[-2000:]
    assert "Fatal Python error: Segmentation fault" in done.stderr, done.stderr[-2000:]
    # The main thread is in pthread_create (line 7) or in the sleep (line 8) when the new thread
    # faults, whichever the scheduler gives first (CI saw line 7): either is the test's stack.
    assert re.search(rf'File "{re.escape(str(tmp_path / "test_b_crash.py"))}", line [78] in '
                     "test_a_native_thread_segfaults", done.stderr), done.stderr[-2000:]
