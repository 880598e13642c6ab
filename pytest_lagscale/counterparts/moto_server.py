"""moto's standalone server: a local AWS CloudWatch (and the rest of AWS) for the cloudwatch lag source.

``python -m moto.server -H 127.0.0.1 -p <free port>`` (the ``moto_server`` console script of
``moto[server]``) in a :class:`~pytest_lagscale.process.ManagedProcess`: its own process group, the
run id, a pid file, SIGTERM when the harness dies. Ready when ``GET /moto-api/`` answers 200.
moto accepts any credentials; :data:`CREDENTIALS` are the dummy ones the harness's clients send.

Example:
    >>> with MotoServer(tmp_path / "moto.log") as moto:  # doctest: +SKIP
    ...     client = moto.client("cloudwatch")
    ...     client.put_metric_data(Namespace="AWS/Kafka", MetricData=[...])
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..contract.errors import LagscaleError
from ..kafka.embedded import free_port
from ..lifecycle import StartStop
from ..process import ManagedProcess
from ..wait import probe_ready, wait_ready

#: Dummy credentials moto accepts (AWS's documented example key pair is not needed: any works).
CREDENTIALS = {"aws_access_key_id": "lagscale-moto", "aws_secret_access_key": "lagscale-moto"}
DEFAULT_REGION = "us-east-1"


class MotoServer(StartStop):
    """moto's server on 127.0.0.1 and a free port.

    Args:
        log_path: the server's stdout and stderr.
        startup_timeout_s: seconds to wait for ``GET /moto-api/`` == 200.
        stop_timeout_s: seconds between SIGTERM and SIGKILL.

    Raises:
        LagscaleError: from :meth:`start` when the server exits during startup (exit code and the
            last 20 log lines; ``pip install 'pytest-lagscale[sources]'`` when moto is missing).
        ReadinessTimeout: from :meth:`start` when it is not ready in time (the last 20 log lines).
    """

    def __init__(self, log_path: str | Path, *, startup_timeout_s: float = 30.0, stop_timeout_s: float = 5.0):
        self.log_path = Path(log_path)
        self.startup_timeout_s, self.stop_timeout_s = startup_timeout_s, stop_timeout_s
        self.port: int | None = None
        self.process: ManagedProcess | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (the ``endpoint_url`` of boto3 clients); raises before start."""
        if self.port is None:
            raise LagscaleError("moto: not started; call start() first")
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        """Start the server and wait until it answers; returns self."""
        if self.process is not None:
            return self
        self.port = free_port()
        argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = ManagedProcess("moto", argv, log_path=self.log_path).start()
        wait_ready(self._ready, self.process, timeout_s=self.startup_timeout_s, poll_interval_s=0.2,
                   exited=lambda how: (f"moto: {how} during startup; see {self.log_path} (is moto "
                                       "installed? pip install 'pytest-lagscale[sources]')"),
                   timed_out=lambda: (f"moto: timed out after {self.startup_timeout_s:g} s waiting for GET "
                                      f"{self.url}/moto-api/ == 200; raise startup_timeout_s or check "
                                      f"{self.log_path}"))
        return self

    def stop(self, timeout_s: float | None = None) -> str:
        """SIGTERM, SIGKILL after the grace period, reap; returns how. Idempotent."""
        if self.process is None:
            return "not_started"
        return self.process.stop(self.stop_timeout_s if timeout_s is None else timeout_s)

    def client(self, service: str = "cloudwatch", region: str = DEFAULT_REGION) -> Any:
        """A boto3 client of ``service`` on this server, with :data:`CREDENTIALS`."""
        import boto3

        return boto3.client(service, region_name=region, endpoint_url=self.url, **CREDENTIALS)

    def _ready(self) -> bool:
        return self.port is not None and probe_ready(self.port, "/moto-api/", 1.0)
