"""How a child's end is said: the exit code, or the signal by name with both exit figures."""

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

