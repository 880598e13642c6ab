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

``up --node kubelet`` adds a kubelet node (:class:`~.kubelet_node.KubeletNode`: containerd,
kube-scheduler, the kubelet) on a bridge pod network, with the replica image imported: a cluster
with kubelets, like kind, on which ``lagscale run --kubeconfig PATH --replica-image REF --kafka
external --kafka-bootstrap ADDRESS`` runs as it would there. Its pods reach this host at
:data:`~.node_commands.BRIDGE_GATEWAY`, so the broker must listen there.
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
    node: str = typer.Option(
        "none", "--node", metavar="none|kubelet", show_default=False,
        help="kubelet: add a kubelet node (containerd, kube-scheduler, the kubelet; root) on a "
             "bridge pod network with the replica image imported, so the cluster has kubelets "
             "as kind has. Default: none (runs use the node agent)."),
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
        if node not in ("none", "kubelet"):
            raise ConfigError(f"--node: {node!r} is not one of none, kubelet")
        if node == "kubelet":
            from .kubelet_node import kubelet_node_problems

            problems = kubelet_node_problems()
            if problems:
                raise ConfigError([f"--node kubelet: {p}" for p in problems])
    except ConfigError as exc:
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    plane = _control_plane(where, hpa_timing(policy_config))
    kubelet = None
    try:
        try:
            plane.start()
            if node == "kubelet":
                kubelet, image = _kubelet_node(plane, where)
            _ready_for_runs(plane, with_nodes=kubelet is not None)
        except LagscaleError as exc:  # ConfigError too: the cluster it started is not usable
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        ready = sum(plane.ready_s.values())
        kubeconfig = Path(plane.layout.kubeconfig("admin")).resolve()
        typer.echo(f"control plane up in {ready:.1f} s (HPA sync {plane.timing.sync_period_s:g} "
                   f"s, tolerance {plane.timing.tolerance:g}, downscale stabilization "
                   f"{plane.timing.downscale_stabilization_s:g} s); logs in {where}")
        typer.echo(f"kubeconfig: {kubeconfig}")
        if kubelet is None:
            typer.echo(f"run on it: lagscale run --platform kubernetes --kubeconfig {kubeconfig}")
        else:
            from .node_commands import BRIDGE_GATEWAY

            typer.echo(f"node: Ready in {kubelet.node_ready_s:.1f} s, pods on a bridge; they "
                       f"reach this host at {BRIDGE_GATEWAY}")
            typer.echo(f"replica image: {image}")
            typer.echo(f"run on it: lagscale run --platform kubernetes --kubeconfig {kubeconfig} "
                       f"--replica-image {image} --kafka external --kafka-bootstrap "
                       f"{BRIDGE_GATEWAY}:PORT (a broker listening there)")
        typer.echo("Ctrl-C stops it", err=True)
        threading.Event().wait()  # until Ctrl-C / SIGTERM / SIGHUP (KeyboardInterrupt)
    except KeyboardInterrupt:
        typer.echo("stopping the control plane", err=True)
    finally:
        if kubelet is not None:
            kubelet.stop()
        plane.stop()


def _control_plane(where: Path, timing: object) -> object:
    from .control_plane import keda_control_plane
    from .policy import NAMESPACE

    return keda_control_plane(where, timing, NAMESPACE)


def _kubelet_node(plane: object, where: Path) -> tuple[object, str]:
    """Start the kubelet node on a bridge network and import the replica image into it;
    returns (the node, the image's reference)."""
    from ..kafka.embedded import free_port
    from ..process import run_id
    from .kubelet_node import KubeletNode

    kubelet = KubeletNode(plane, run_id(), free_port=free_port, pod_network="bridge")
    return kubelet, kubelet.start_with_image(where / "image-build.log").ref


def _ready_for_runs(plane: object, *, with_nodes: bool = False) -> None:
    """Wait until a run's preflight passes (KEDA's APIService turns Available a moment after
    the adapter answers), then record the pinned versions in the cluster."""
    from kubernetes import config

    from .cluster import preflight, record_versions

    api = config.new_client_from_config(config_file=plane.layout.kubeconfig("admin"))
    preflight(api, with_nodes=with_nodes)
    record_versions(api, plane.versions)


def register(app: typer.Typer) -> None:
    """Add the ``lagscale kube`` command group (``up``) to ``app``."""
    app.add_typer(kube_app, name="kube")


__all__ = ["DEFAULT_DIR", "register", "up"]
