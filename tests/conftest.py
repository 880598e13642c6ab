"""Configuration of the harness's own tests (the repository-level conftest.py holds the rest)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _nested_sessions_leave_faulthandler_alone(request: pytest.FixtureRequest,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Run a test's in-process pytester sessions without pytest's faulthandler plugin.

    At its end a nested session's plugin turns faulthandler back on, but on the file descriptor
    of the *outer* test's captured stderr, which closes when that test ends: for the rest of the
    session a native crash (a librdkafka thread's segfault) would print no Python stack. Without
    the plugin the nested session leaves the outer session's faulthandler as it found it.
    """
    if "pytester" not in request.fixturenames:
        return
    request.getfixturevalue("pytester")  # it clears PYTEST_ADDOPTS when it starts
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:faulthandler")
