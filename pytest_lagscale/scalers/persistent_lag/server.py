"""The persistent-lag scaler's gRPC server: :class:`ScalerServer` (start, address, stop).

Plain-text gRPC (KEDA's ``scalerAddress`` without ``enableTLS``) on ``host:port``; port 0
binds an ephemeral port, and :attr:`ScalerServer.address` gives the real one.

Example:
    >>> with ScalerServer("127.0.0.1", 0) as server:  # doctest: +SKIP
    ...     print(server.address)
    127.0.0.1:40321
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...contract.clock import Clock
from ...contract.errors import LagscaleError
from ...lifecycle import StartStop
from .sampler import SourceFactory

log = logging.getLogger(__name__)

#: Worker threads of the gRPC server; every open StreamIsActive holds one.
MAX_WORKERS = 16
#: The first line ``lagscale scaler serve`` prints, before the address; a run's scaler process
#: reads its address from it.
LISTENING = "listening on "


class ScalerServer(StartStop):
    """The ``externalscaler.ExternalScaler`` service of a scaler kind (the persistent-lag scaler
    by default; :data:`pytest_lagscale.scalers.SCALER_KINDS`).

    Args:
        host: address to bind (``127.0.0.1``; ``0.0.0.0`` in a container).
        port: port to bind, 0 = ephemeral.
        source_factory: the servicer's lag sources (default: the broker, per metadata).
        clock: the samplers' time source (the persistent-lag scaler's).
        max_workers: gRPC worker threads.
        kind: the scaler kind, a key of :data:`~pytest_lagscale.scalers.SCALER_KINDS`.

    Raises:
        LagscaleError: from :meth:`start` when the address cannot be bound.

    Attributes:
        servicer: the kind's servicer (:class:`~.servicer.PersistentLagServicer`, ...) after
            :meth:`start`.
        port: the bound port (after :meth:`start`).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, source_factory: SourceFactory | None = None,
                 clock: Clock | None = None, max_workers: int = MAX_WORKERS, kind: str = "persistent-lag"):
        from .. import SCALER_KINDS

        if kind not in SCALER_KINDS:
            raise LagscaleError(f"scaler: kind {kind!r} is not one of {', '.join(SCALER_KINDS)}")
        self.kind = kind
        self.host, self.requested_port = host, port
        self.source_factory, self.clock, self.max_workers = source_factory, clock, max_workers
        self.servicer: Any = None
        self.port: int | None = None
        self._server: Any = None

    @property
    def address(self) -> str:
        """``host:port`` it listens on (KEDA's ``scalerAddress``); raises before :meth:`start`."""
        if self.port is None:
            raise LagscaleError("scaler: not started; call start() first")
        return f"{self.host}:{self.port}"

    def start(self) -> ScalerServer:
        """Bind and serve; returns self."""
        if self._server is not None:
            return self
        import grpc

        from .. import servicer_class
        from ..externalscaler import externalscaler_pb2_grpc as pb2_grpc

        self.servicer = servicer_class(self.kind)(self.source_factory, clock=self.clock)
        server = grpc.server(ThreadPoolExecutor(self.max_workers, thread_name_prefix="lagscale-scaler"))
        pb2_grpc.add_ExternalScalerServicer_to_server(self.servicer, server)
        try:
            port = server.add_insecure_port(f"{self.host}:{self.requested_port}")
        except RuntimeError as exc:
            raise LagscaleError(f"scaler: cannot bind {self.host}:{self.requested_port}: {exc}; pick another "
                                "--port or --host") from exc
        if not port:
            raise LagscaleError(f"scaler: cannot bind {self.host}:{self.requested_port}; pick another --port or --host")
        server.start()
        self._server, self.port = server, port
        log.info("scaler: serving externalscaler.ExternalScaler (%s) on %s", self.kind, self.address)
        return self

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the server terminates or ``timeout_s`` passes; True when it terminated."""
        return self._server is None or bool(self._server.wait_for_termination(timeout_s))

    def stop(self, grace_s: float = 2.0) -> None:
        """Stop sampling, end the streams, then the server (in-flight calls get ``grace_s``
        seconds). Idempotent."""
        if self.servicer is not None:
            self.servicer.close()
        if self._server is not None:
            self._server.stop(grace_s).wait(grace_s + 5.0)
            self._server = None
