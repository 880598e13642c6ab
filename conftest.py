"""Repository-level pytest configuration (the plugin itself loads through its entry point).

The autouse ``no_leftover_processes`` fixture fails any test that leaves a child process or a
listening socket of this interpreter behind. Session fixtures (the broker) are set up before it,
so they are part of its "before" snapshot and are not reported; the session's reconcile worker
(``pytest_lagscale.analyze.reconcile_worker``, started by the first run's analysis) is exempt.
"""

from __future__ import annotations

import os
import time

import psutil
import pytest


def pytest_configure(config: pytest.Config) -> None:
    """This repository's sessions use pytest-lagscale throughout: share one reconciliation
    worker and turn SIGTERM/SIGHUP into Ctrl-C from the start, as a session given a lagscale
    option does (the plugin does neither for a session that does not use it)."""
    from pytest_lagscale.plugin import activate

    activate(config)


def _session_worker() -> set[int]:
    """The session's reconcile worker and its JVM: started by the first run's analysis and kept
    for the session (like the broker), so not a leak of the test that started it."""
    from pytest_lagscale.analyze.reconcile_worker import shared_pid

    pid = shared_pid()
    if pid is None:
        return set()
    try:
        return {pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))}
    except psutil.Error:
        return {pid}


def _children() -> dict[int, str]:
    out = {}
    session_worker = _session_worker()
    for child in psutil.Process().children(recursive=True):
        try:
            if child.pid not in session_worker and child.status() != psutil.STATUS_ZOMBIE:
                out[child.pid] = " ".join(child.cmdline())[:160]
        except psutil.Error:
            continue
    return out


def _listening() -> set[tuple[str, int]]:
    try:
        conns = psutil.Process().net_connections(kind="tcp")
    except psutil.Error:
        return set()
    return {(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}


@pytest.fixture(autouse=True)
def no_leftover_processes() -> object:
    before, ports_before = _children(), _listening()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        leaked = {pid: cmd for pid, cmd in _children().items() if pid not in before}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    ports = _listening() - ports_before
    if leaked:
        for pid in leaked:
            try:
                os.killpg(os.getpgid(pid), 9)
            except (ProcessLookupError, PermissionError):
                pass
        pytest.fail("test left processes behind:\n" +
                    "\n".join(f"  pid {pid}: {cmd}" for pid, cmd in leaked.items()),
                    pytrace=False)
    if ports:
        pytest.fail(f"test left listening sockets behind: {sorted(ports)}", pytrace=False)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``by_hand`` run only when the ``-m`` expression names ``by_hand``."""
    if "by_hand" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="by_hand: left out of the default session; run with -m by_hand")
    for item in items:
        if item.get_closest_marker("by_hand") is not None:
            item.add_marker(skip)
