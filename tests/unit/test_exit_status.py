"""How a child's end is said: the exit code, or the signal by name with both exit figures; and how
`lagscale` itself ends when it holds Kafka clients it could not destroy."""

from __future__ import annotations

import pytest

from pytest_lagscale.exit_status import describe_exit, exit_signal


@pytest.mark.parametrize("returncode, expected", [
    pytest.param(0, "exited with code 0", id="clean"),
    pytest.param(3, "exited with code 3", id="error-code"),
    pytest.param(-11, "killed by SIGSEGV (exit status -11; 139 in a shell)", id="segfault"),
    pytest.param(-6, "killed by SIGABRT (exit status -6; 134 in a shell)", id="abort"),
    pytest.param(-9, "killed by SIGKILL (exit status -9; 137 in a shell)", id="sigkill"),
    pytest.param(-99, "killed by signal 99 (exit status -99; 227 in a shell)", id="unnamed"),
])
def test_describe_exit(returncode: int, expected: str) -> None:
    assert describe_exit(returncode) == expected


@pytest.mark.parametrize("returncode, expected", [
    pytest.param(None, None, id="running"),
    pytest.param(0, None, id="clean"),
    pytest.param(1, None, id="error-code"),
    pytest.param(-11, "SIGSEGV", id="segfault"),
])
def test_exit_signal_names_only_a_signal(returncode: int | None, expected: str | None) -> None:
    assert exit_signal(returncode) == expected




EXIT_SCRIPT = """
import atexit, sys
from pytest_lagscale.kafka import admin as admin_module
from pytest_lagscale.cli import exit_process

atexit.register(lambda: print(" atexit ran", end=""))
if sys.argv[2] == "kept":
    admin_module._KEPT.append(object())  # as KafkaAdmin.close keeps clients under a call
print("the run's last line", end="")  # not flushed: exit_process must flush it
exit_process(int(sys.argv[1]))
"""


@pytest.mark.parametrize("kept", ["kept", "none"], ids=["clients-kept", "none-kept"])
def test_exit_process_keeps_the_exit_code_and_the_output_with_clients_kept(kept: str) -> None:
    """A process holding Kafka clients kept under a call ends with os._exit (no atexit handler
    runs, so neither does the interpreter's teardown) after flushing its output, with the code
    asked for; without any, it exits as usual."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, "3", kept], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "the run's last line" + ("" if kept == "kept" else " atexit ran")
