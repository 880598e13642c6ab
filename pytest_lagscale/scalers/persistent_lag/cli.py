"""``lagscale scaler serve``: the persistent-lag scaler as a KEDA external scaler (gRPC).

:mod:`pytest_lagscale.cli` adds the ``scaler`` command group to ``lagscale`` with
:func:`register`. ``serve`` prints ``listening on HOST:PORT`` (flushed, the port is the real one
when ``--port 0``), serves until SIGTERM or SIGINT, then stops sampling, ends open streams and
exits 0.
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import Any

import typer

from ...cli_usage import EXIT_USAGE
from .server import LISTENING

scaler_app = typer.Typer(help="lagscale's external scalers (KEDA's external scaler gRPC protocol): "
                              "persistent-lag and share-group.",
                         no_args_is_help=True)


@scaler_app.command("serve")
def serve(
    port: int = typer.Option(6000, "--port", min=0, max=65535, metavar="PORT", show_default=False,
                             help="Port to listen on; 0 picks a free one. Default: 6000"),
    host: str = typer.Option("127.0.0.1", "--host", metavar="HOST", show_default=False,
                             help="Address to bind (0.0.0.0 in a container). Default: 127.0.0.1"),
    kind: str = typer.Option("persistent-lag", "--kind", metavar="KIND", show_default=False,
                             help="persistent-lag (lag persisting above lagThreshold for sustainSeconds) or "
                                  "share-group (a share group's lag, KIP-1226). Default: persistent-lag"),
) -> None:
    """Serve externalscaler.ExternalScaler: persistent-lag, or a share group's lag (--kind).

    A ScaledObject trigger of type external (or external-push) names HOST:PORT as scalerAddress.

    Its metadata names the Kafka cluster, group, topic and (persistent-lag) window; see
    docs/policies.md.
    """
    from ...contract.errors import LagscaleError
    from .. import SCALER_KINDS

    if kind not in SCALER_KINDS:
        typer.echo(f"error: --kind: got {kind!r}, expected one of {', '.join(SCALER_KINDS)}", err=True)
        raise typer.Exit(EXIT_USAGE)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import grpc  # noqa: F401

        from .server import ScalerServer
    except ImportError as exc:
        typer.echo(f"error: {exc.name or exc}: not installed; pip install 'pytest-lagscale[scaler]'", err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    stopping: list[str] = []

    def _stop(signum: int, frame: Any) -> None:
        stopping.append(signal.Signals(signum).name)

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGTERM, signal.SIGINT)}
    server = ScalerServer(host, port, kind=kind)
    try:
        server.start()
    except LagscaleError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    try:
        typer.echo(f"{LISTENING}{server.address}")
        sys.stdout.flush()
        while not stopping:
            server.wait(0.2)
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    typer.echo(f"stopped ({stopping[0]})")


def register(app: typer.Typer) -> None:
    """Add the ``lagscale scaler`` command group (``serve``) to ``app``."""
    app.add_typer(scaler_app, name="scaler")
