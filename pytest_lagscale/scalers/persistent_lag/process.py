"""The run's own scaler: ``lagscale scaler serve`` as a child process (what a cluster runs as the
Deployment of ``k8s/persistent-lag-scaler.yaml``).

:class:`ScalerProcess` starts ``python -m pytest_lagscale.cli scaler serve --port 0`` in a
:class:`~pytest_lagscale.process.ManagedProcess` (its own process group, the run id, a pid file,
SIGTERM when the harness dies), reads the address it prints from its log and stops it with
SIGTERM (then SIGKILL).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ...contract.errors import LagscaleError
from ...lifecycle import StartStop
from ...process import ManagedProcess
from ...wait import wait_ready
from .server import LISTENING

#: Seconds to wait for ``listening on HOST:PORT``.
STARTUP_TIMEOUT_S = 30.0


class ScalerError(LagscaleError):
    """The run's scaler exited before it listened."""


class ScalerProcess(StartStop):
    """``lagscale scaler serve`` on 127.0.0.1 and a free port, in its own process group.

    Args:
        log_path: the process's output (its ``listening on`` line, then its log lines).
        startup_timeout_s: seconds to wait for the address before :class:`ReadinessTimeout`.
        stop_timeout_s: seconds between SIGTERM and SIGKILL.
        kind: the scaler kind it serves (``--kind``, a key of
            :data:`pytest_lagscale.scalers.SCALER_KINDS`).

    Raises:
        ScalerError: from :meth:`start` when it exits first (exit code, the last 20 log lines).
        ReadinessTimeout: from :meth:`start` when no address is printed in time (the last 20
            log lines).

    Attributes:
        address: ``127.0.0.1:<port>`` after :meth:`start`.
        startup_s: seconds from start to the printed address.
    """

    def __init__(self, log_path: str | Path, *, startup_timeout_s: float = STARTUP_TIMEOUT_S,
                 stop_timeout_s: float = 10.0, kind: str = "persistent-lag"):
        self.log_path = Path(log_path)
        self.kind = kind
        self.startup_timeout_s, self.stop_timeout_s = startup_timeout_s, stop_timeout_s
        self.process: ManagedProcess | None = None
        self.address: str | None = None
        self.startup_s: float | None = None

    @property
    def pid(self) -> int:
        """The server's pid; raises before :meth:`start`."""
        if self.process is None:
            raise ScalerError("scaler: not started; call start() first")
        return self.process.pid

    def start(self) -> ScalerProcess:
        """Start and wait for the address; returns self."""
        if self.process is not None:
            return self
        started = time.monotonic()
        argv = [sys.executable, "-m", "pytest_lagscale.cli", "scaler", "serve", "--host", "127.0.0.1", "--port", "0",
                "--kind", self.kind]
        self.process = ManagedProcess("scaler", argv, log_path=self.log_path).start()
        self.address = wait_ready(
            self._printed_address, self.process, timeout_s=self.startup_timeout_s,
            poll_interval_s=0.1, started=started, exit_error=ScalerError,
            exited=lambda how: f"scaler: {how} before listening; see {self.log_path}",
            timed_out=lambda: (f"scaler: timed out after {self.startup_timeout_s:.0f} s waiting for "
                               f"{LISTENING.strip()!r} in {self.log_path}; check it"))
        self.startup_s = time.monotonic() - started
        return self

    def stop(self, timeout_s: float | None = None) -> str:
        """SIGTERM, SIGKILL after the grace period, reap; returns how. Idempotent."""
        if self.process is None:
            return "not_started"
        return self.process.stop(self.stop_timeout_s if timeout_s is None else timeout_s)

    def _printed_address(self) -> str | None:
        if not self.log_path.exists():
            return None
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith(LISTENING):
                return line[len(LISTENING):].strip()
        return None
