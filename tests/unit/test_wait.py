"""The one readiness loop (pytest_lagscale.wait) with real short-lived child processes."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.errors import BrokerError, LagscaleError, ReadinessTimeout
from pytest_lagscale.kafka.embedded import free_port
from pytest_lagscale.process import ManagedProcess
from pytest_lagscale.wait import probe_http, probe_ready, wait_ready


def _start(tmp_path: Path, script: str, name: str = "child") -> ManagedProcess:
    return ManagedProcess(name, ["sh", "-c", script], log_path=tmp_path / f"{name}.log").start()


def _messages(log: Path, name: str = "child"):
    return dict(exited=lambda how: f"{name}: {how} during startup; see {log}",
                timed_out=lambda: f"{name}: timed out waiting for it; check {log}")


def test_returns_the_probes_first_truthy_answer_and_leaves_the_child_running(tmp_path):
    answers = iter([None, "", "127.0.0.1:4000", "never asked"])
    with _start(tmp_path, "exec sleep 30") as child:
        got = wait_ready(lambda: next(answers), child, timeout_s=10, poll_interval_s=0.01,
                         **_messages(child.log_path))
        assert got == "127.0.0.1:4000"
        assert next(answers) == "never asked"
        assert child.running()


def test_a_child_that_exits_is_named_with_its_exit_status_and_log_tail(tmp_path):
    child = _start(tmp_path, "echo starting; echo bad flag; exit 3")
    child.wait(10)
    with pytest.raises(BrokerError) as info:
        wait_ready(lambda: False, child, timeout_s=10, poll_interval_s=0.01,
                   exit_error=BrokerError, **_messages(child.log_path))
    assert str(info.value) == (f"child: exited with code 3 during startup; see {child.log_path}"
                               "\nstarting\nbad flag")
    child.stop(0)


def test_a_child_killed_by_a_signal_is_named_by_the_signal(tmp_path):
    child = _start(tmp_path, "echo about to crash; kill -SEGV $$")
    child.wait(10)
    with pytest.raises(LagscaleError) as info:
        wait_ready(lambda: False, child, timeout_s=10, poll_interval_s=0.01,
                   **_messages(child.log_path))
    assert type(info.value) is LagscaleError
    assert str(info.value).splitlines() == [
        f"child: killed by SIGSEGV (exit status -11; 139 in a shell) during startup; see "
        f"{child.log_path}", "about to crash"]
    child.stop(0)


def test_an_exit_is_checked_before_the_probe(tmp_path):
    """A probe answered by someone else (another server on the port) does not hide the exit."""
    child = _start(tmp_path, "exit 1")
    child.wait(10)
    with pytest.raises(LagscaleError, match="child: exited with code 1 during startup"):
        wait_ready(lambda: True, child, timeout_s=10, poll_interval_s=0.01,
                   **_messages(child.log_path))
    child.stop(0)


def test_a_timeout_carries_the_last_log_lines(tmp_path):
    with _start(tmp_path, "for i in 1 2 3 4; do echo line $i; done; exec sleep 30") as child:
        with pytest.raises(ReadinessTimeout) as info:
            wait_ready(lambda: False, child, timeout_s=0.3, poll_interval_s=0.05, tail_lines=3,
                       **_messages(child.log_path))
        assert str(info.value) == (f"child: timed out waiting for it; check {child.log_path}"
                                   "\nline 2\nline 3\nline 4")
        assert isinstance(info.value, TimeoutError)
        assert child.running()  # stopping it is the caller's part (its ExitStack)


def test_hooks_raise_their_own_errors_first_and_tail_can_be_replaced(tmp_path):
    class PortTaken(Exception):
        pass

    def port_taken(code=None):
        raise PortTaken(code)

    child = _start(tmp_path, "exit 7")
    child.wait(10)
    with pytest.raises(PortTaken) as info:
        wait_ready(lambda: False, child, timeout_s=10, poll_interval_s=0.01,
                   on_exit=port_taken, **_messages(child.log_path))
    assert info.value.args == (7,)
    child.stop(0)
    with _start(tmp_path, "exec sleep 30", name="sleeper") as sleeper:
        with pytest.raises(PortTaken):
            wait_ready(lambda: False, sleeper, timeout_s=0.05, poll_interval_s=0.01,
                       on_timeout=port_taken, **_messages(sleeper.log_path))
        with pytest.raises(ReadinessTimeout) as timeout:
            wait_ready(lambda: False, sleeper, timeout_s=0.05, poll_interval_s=0.01,
                       tail=lambda: "mine", **_messages(sleeper.log_path))
        assert str(timeout.value).endswith("\nmine")


def test_the_timeout_counts_from_started_on_the_given_clock(tmp_path):
    clock = FakeClock(100.0)
    calls = []

    def probe():
        calls.append(clock.now())
        return False

    with _start(tmp_path, "exec sleep 30") as child:
        with pytest.raises(ReadinessTimeout):
            wait_ready(probe, child, timeout_s=1.0, poll_interval_s=0.25, clock=clock,
                       **_messages(child.log_path))
        # probes at 100, 100.25, ..., 101.25: the first one past the timeout ends the wait
        assert calls == [100.0, 100.25, 100.5, 100.75, 101.0, 101.25]
        calls.clear()
        with pytest.raises(ReadinessTimeout):  # started long ago: one probe, then the timeout
            wait_ready(probe, child, timeout_s=1.0, poll_interval_s=0.25, clock=clock,
                       started=clock.now() - 5.0, **_messages(child.log_path))
        assert len(calls) == 1


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        status, body = (200, b"ok\nmore") if self.path == "/ready" else (503, b"starting")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_probe_http_says_what_the_port_answered():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        assert probe_http(port, "/ready", 2.0) == (True, "HTTP 200: ok")
        assert probe_http(port, "/healthz", 2.0) == (False, "HTTP 503: starting")
        assert probe_ready(port, "/ready", 2.0) is True
    finally:
        server.shutdown()
        server.server_close()
    ok, text = probe_http(free_port(), "/ready", 0.5)
    assert not ok and text.startswith("GET failed: ")
