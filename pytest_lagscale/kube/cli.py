"""``lagscale kube up``: the local control plane as a cluster that outlives a run.

:func:`register` adds the ``kube`` command group to ``lagscale``. ``up`` starts etcd,
kube-apiserver, kube-controller-manager and KEDA (operator and metrics adapter) as a run would
(:class:`~pytest_lagscale.kube.control_plane.ControlPlane`, binaries from
``scripts/bootstrap --with-kube``), with the HPA timing of a ScaledObject's
``lagscale.dev/hpa-*`` annotations (``--policy``, default ``scaledobject-ci``), records the
pinned versions in the cluster (``kube-public/lagscale-versions``), prints the admin
kubeconfig and serves until Ctrl-C, SIGTERM or SIGHUP, then stops every process (a SIGKILLed
``lagscale`` takes them along: their parent-death signal). Runs use it with
``lagscale run --platform kubernetes --kubeconfig PATH``, each in a namespace of its own, and
kubectl can watch them.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Optional

import typer

from ..cli_usage import EXIT_USAGE

kube_app = typer.Typer(help="The local Kubernetes control plane (etcd, kube-apiserver, "
                            "kube-controller-manager, KEDA) built by scripts/bootstrap "
                            "--with-kube.", no_args_is_help=True)

DEFAULT_DIR = Path("lagscale-kube")


@kube_app.command("up")
def up(
    directory: Optional[Path] = typer.Option(
        None, "--dir", metavar="DIR", show_default=False,
        help=f"Directory of the control plane (PKI, kubeconfigs, etcd data, logs); must not "
             f"exist yet. Default: {DEFAULT_DIR}/<UTC stamp>"),
    policy: str = typer.Option(
        "scaledobject-ci", "--policy", metavar="NAME|PATH", show_default=False,
        help="ScaledObject whose lagscale.dev/hpa-* annotations set the HPA controller's sync "
             "period, tolerance and downscale stabilization. Default: scaledobject-ci"),
) -> None:
    """Start the local control plane and keep it up until Ctrl-C.

    Prints the admin kubeconfig; give it to lagscale run --platform kubernetes --kubeconfig.
    """
    from ..config.bundled import resolve_manifest
    from ..config.policy import load_policy_manifest
    from ..contract.errors import ConfigError, LagscaleError
    from . import build
    from .policy import check_policy, hpa_timing

    try:
        policy_config = load_policy_manifest(resolve_manifest(policy, "--policy"))
        check_policy(policy_config)
        where = directory or DEFAULT_DIR / dt.datetime.now(dt.timezone.utc).strftime(
            "%Y%m%dT%H%M%SZ")
        if where.exists():
            raise ConfigError(f"--dir: {str(where)!r} exists; give a new directory (each "
                              "control plane gets its own PKI and etcd data)")
        reason = build.missing_reason()
        if reason is not None:
            raise ConfigError(f"lagscale kube up: {reason}")
    except ConfigError as exc:
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    plane = _control_plane(where, hpa_timing(policy_config))
    try:
        try:
            plane.start()
            _ready_for_runs(plane)
        except LagscaleError as exc:  # ConfigError too: the cluster it started is not usable
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        ready = sum(plane.ready_s.values())
        kubeconfig = Path(plane.layout.kubeconfig("admin")).resolve()
        typer.echo(f"control plane up in {ready:.1f} s (HPA sync {plane.timing.sync_period_s:g} "
                   f"s, tolerance {plane.timing.tolerance:g}, downscale stabilization "
                   f"{plane.timing.downscale_stabilization_s:g} s); logs in {where}")
        typer.echo(f"kubeconfig: {kubeconfig}")
        typer.echo(f"run on it: lagscale run --platform kubernetes --kubeconfig {kubeconfig}")
        typer.echo("Ctrl-C stops it", err=True)
        threading.Event().wait()  # until Ctrl-C / SIGTERM / SIGHUP (KeyboardInterrupt)
    except KeyboardInterrupt:
        typer.echo("stopping the control plane", err=True)
    finally:
        plane.stop()


def _control_plane(where: Path, timing: object) -> object:
    from .control_plane import keda_control_plane
    from .policy import NAMESPACE

    return keda_control_plane(where, timing, NAMESPACE)


def _ready_for_runs(plane: object) -> None:
    """Wait until a run's preflight passes (KEDA's APIService turns Available a moment after
    the adapter answers), then record the pinned versions in the cluster."""
    from kubernetes import config

    from .cluster import preflight, record_versions

    api = config.new_client_from_config(config_file=plane.layout.kubeconfig("admin"))
    preflight(api)
    record_versions(api, plane.versions)


def register(app: typer.Typer) -> None:
    """Add the ``lagscale kube`` command group (``up``) to ``app``."""
    app.add_typer(kube_app, name="kube")


__all__ = ["DEFAULT_DIR", "register", "up"]
