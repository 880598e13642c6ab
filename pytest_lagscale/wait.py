"""Waiting for a managed part to become ready: one loop, and the HTTP probe it often repeats.

Every part the harness starts as a child process (the embedded broker, Prometheus, the Spark
Connect server, moto, the run's own scaler, the control plane's processes) is ready when a probe
says so. :func:`wait_ready` is the one loop that waits for it (the wait-strategy idea of
testcontainers-python: a probe, the process to watch, a timeout and a poll interval). Each round
it asks, in this order:

* has the child exited? Then an error (the caller's type) names it with its exit status
  (:func:`~pytest_lagscale.exit_status.describe_exit`) followed by its log's last lines;
* does the probe answer? Then the wait returns the answer;
* is the timeout past? Then :class:`~pytest_lagscale.contract.errors.ReadinessTimeout` with the
  same log tail.

The caller words both messages (what was awaited, which setting to raise, where the log is), and
may raise an error of its own first for an exit or a timeout it recognises (a port another
process took). :func:`probe_http` is a kubelet's HTTP probe of a local port.

Example:
    >>> proc = ManagedProcess("srv", argv, log_path=log).start()  # doctest: +SKIP
    >>> wait_ready(lambda: probe_ready(port, "/ready"), proc, timeout_s=30, poll_interval_s=0.2,
    ...            exited=lambda how: f"srv: {how} during startup; see {log}",
    ...            timed_out=lambda: f"srv: timed out after 30 s waiting for GET /ready; "
    ...                              f"raise timeout_s or check {log}")  # doctest: +SKIP
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from typing import Callable, Mapping, Protocol, Sequence, TypeVar

from .contract.clock import Clock, RealClock
from .contract.errors import LagscaleError, ReadinessTimeout
from .exit_status import describe_exit

T = TypeVar("T")

#: Log lines an error of :func:`wait_ready` carries by default.
TAIL_LINES = 20


class Watched(Protocol):
    """What :func:`wait_ready` needs of the process it watches
    (:class:`~pytest_lagscale.process.ManagedProcess` has both)."""

    def poll(self) -> int | None:
        """The exit status (``Popen.returncode``), or None while it runs."""

    def tail(self, lines: int = TAIL_LINES) -> list[str]:
        """The last ``lines`` lines of its log."""


def wait_ready(probe: Callable[[], T], process: Watched, *, timeout_s: float,
               poll_interval_s: float, exited: Callable[[str], str],
               timed_out: Callable[[], str], exit_error: type[LagscaleError] = LagscaleError,
               on_exit: Callable[[int], None] | None = None,
               on_timeout: Callable[[], None] | None = None,
               tail: Callable[[], str] | None = None, tail_lines: int = TAIL_LINES,
               started: float | None = None, clock: Clock | None = None) -> T:
    """Poll until ``probe()`` answers, ``process`` exits, or ``timeout_s`` seconds pass.

    Args:
        probe: one readiness check; a truthy answer means ready (it is returned). It must not
            raise for "not ready yet".
        process: the child to watch (``poll()`` and ``tail(lines)``).
        timeout_s: seconds from ``started`` after which a failed probe is a timeout.
        poll_interval_s: seconds slept between rounds.
        exited: the exit error's first line, given the exit as :func:`describe_exit` says it
            (``"exited with code 3"``).
        timed_out: the timeout's first line.
        exit_error: the type of the exit error (a :class:`LagscaleError`).
        on_exit: called with the exit status before the exit error; may raise its own error.
        on_timeout: called before the timeout error; may raise its own error.
        tail: the log text put under the first line (default: ``process.tail(tail_lines)``,
            one line each).
        tail_lines: how many log lines the default ``tail`` takes.
        started: when the wait began on ``clock`` (default: now); an earlier start counts
            the time spent before the call against ``timeout_s``.
        clock: time source (default :class:`~pytest_lagscale.contract.clock.RealClock`).

    Returns:
        The probe's first truthy answer.

    Raises:
        exit_error: the child exited first: ``exited(how)``, a newline, the log tail.
        ReadinessTimeout: not ready after ``timeout_s``: ``timed_out()``, a newline, the log tail.
    """
    clock = clock or RealClock()
    started = clock.now() if started is None else started
    log_tail = tail or (lambda: "\n".join(process.tail(tail_lines)))
    while True:
        code = process.poll()
        if code is not None:
            if on_exit is not None:
                on_exit(code)
            raise exit_error(f"{exited(describe_exit(code))}\n{log_tail()}")
        answer = probe()
        if answer:
            return answer
        if clock.now() - started > timeout_s:
            if on_timeout is not None:
                on_timeout()
            raise ReadinessTimeout(f"{timed_out()}\n{log_tail()}")
        clock.sleep(poll_interval_s)


def poll_until(check: Callable[[], bool], within_s: float, *, clock: Clock | None = None,
               poll_interval_s: float = 0.25) -> bool:
    """True as soon as ``check()`` holds, False once ``within_s`` seconds passed without it (no
    process to watch: a condition in an API, such as pods gone)."""
    clock = clock or RealClock()
    deadline = clock.now() + within_s
    while not check():
        if clock.now() > deadline:
            return False
        clock.sleep(poll_interval_s)
    return True


def probe_ready(port: int, path: str, timeout_s: float = 0.5) -> bool:
    """A kubelet's HTTP readiness probe of a replica: ``GET http://127.0.0.1:<port><path>``
    answers 200 within ``timeout_s`` seconds (any error or other status: not ready)."""
    return probe_http(port, path, timeout_s)[0]


def probe_http(port: int, path: str, timeout_s: float, *,
               ok_statuses: range | tuple[int, ...] = (200,)) -> tuple[bool, str]:
    """``GET http://127.0.0.1:<port><path>``: (answered with a status in ``ok_statuses`` (200;
    a kubelet's httpGet probe takes 200-399) within ``timeout_s`` seconds, what it said:
    ``HTTP <status>: <first body line>``, ``no answer within <timeout> s`` or ``GET failed:
    <error>``). Never raises for I/O errors."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout_s) as resp:
            return resp.status in ok_statuses, f"HTTP {resp.status}: {_first_line(resp.read(512))}"
    except urllib.error.HTTPError as exc:
        return False, f"HTTP {exc.code}: {_first_line(exc.read(512))}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError):
            return False, f"no answer within {timeout_s:g} s"
        return False, f"GET failed: {reason}"


def probe_tcp(port: int, timeout_s: float) -> tuple[bool, str]:
    """A kubelet's ``tcpSocket`` probe on ``127.0.0.1:<port>``: (a connection opened within
    ``timeout_s`` seconds, what happened). Never raises for I/O errors."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s):
            return True, f"connected to port {port}"
    except TimeoutError:
        return False, f"no connection within {timeout_s:g} s"
    except OSError as exc:
        return False, f"connect to port {port} failed: {exc.strerror or exc}"


def probe_exec(argv: Sequence[str], env: Mapping[str, str], timeout_s: float) -> tuple[bool, str]:
    """A kubelet's ``exec`` probe: run ``argv`` (with ``env`` added to this process's), success
    when it exits 0 within ``timeout_s`` seconds; (ok, how it ended and its last output line).
    A probe still running at the timeout is killed and fails, as a kubelet's does."""
    from .process import ManagedProcess

    process = ManagedProcess("exec-probe", list(argv), env=dict(env))
    try:
        process.start()
    except (OSError, LagscaleError) as exc:
        return False, f"{argv[0]}: cannot start: {exc}"
    with process:
        code = process.wait(timeout_s)
    if code is None:
        return False, f"{argv[0]}: still running after {timeout_s:g} s"
    return code == 0, f"{argv[0]}: {describe_exit(code)}"


def run_probe(kind: str, *, port: int, path: str = "/", command: Sequence[str] = (),
              env: Mapping[str, str] | None = None, timeout_s: float = 1.0) -> tuple[bool, str]:
    """One probe as a kubelet runs it: ``httpGet`` (:func:`probe_http`, 200-399 succeed),
    ``tcpSocket`` (:func:`probe_tcp`) or ``exec`` (:func:`probe_exec` of ``command`` with
    ``env``); (ok, what happened). Never raises for I/O errors.

    Source: kubernetes pkg/probe/http/http.go (200 <= status < 400), pkg/probe/tcp, pkg/probe/exec
    (v1.36.3).

    Raises:
        ValueError: ``kind`` is none of the three.
    """
    if kind == "httpGet":
        return probe_http(port, path, timeout_s, ok_statuses=range(200, 400))
    if kind == "tcpSocket":
        return probe_tcp(port, timeout_s)
    if kind == "exec":
        return probe_exec(command, dict(env or {}), timeout_s)
    raise ValueError(f"probe kind {kind!r}: not one of httpGet, tcpSocket, exec")


def _first_line(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text.splitlines()[0] if text else ""


__all__ = ["TAIL_LINES", "Watched", "probe_exec", "probe_http", "probe_ready", "probe_tcp",
           "run_probe", "wait_ready"]
