"""``lagscale run``: the main job — one experiment on the embedded default, analysed.

Bad input exits 2 before anything starts; Ctrl-C or SIGTERM stops every process of the run
(exit 130); a finished run prints the summary table and the run directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..cli import app, fail_usage
from ..errors import ConfigError, LagscaleError


@app.command()
def run(
    profile: Path = typer.Option(..., "--profile", help="Traffic profile YAML, e.g. "
                                 "fixtures/profiles/spike.yaml"),
    scaledobject: Optional[Path] = typer.Option(
        None, "--scaledobject", help="KEDA ScaledObject YAML. Default: "
        "k8s/scaledobject[-ci].yaml by --scale"),
    deployment: Optional[Path] = typer.Option(
        None, "--deployment", help="Consumer Deployment YAML. Default: "
        "k8s/consumer-deployment[-ci].yaml by --scale"),
    scale: str = typer.Option("ci", "--scale", help="ci or full: which committed manifests"),
    lag_threshold: Optional[int] = typer.Option(
        None, "--lag-threshold", help="Override the kafka trigger's lagThreshold (records)"),
    balancer: Optional[str] = typer.Option(
        None, "--balancer", help="Override --balancer: cooperative-sticky, range, roundrobin "
        "or consumer"),
    partitions: Optional[int] = typer.Option(None, "--partitions",
                                             help="Override the profile's partition count"),
    engine: Optional[str] = typer.Option(None, "--engine", help="Override --engine: spark or "
                                         "arrow"),
    graceful: bool = typer.Option(True, "--graceful/--no-graceful",
                                  help="--no-graceful: scale-down SIGKILLs replicas"),
    out: Path = typer.Option(Path("lagscale-runs"), "--out", help="Parent of the run "
                             "directory"),
    kafka: str = typer.Option("embedded", "--kafka", help="embedded, testcontainers or "
                              "external"),
    kafka_bootstrap: Optional[str] = typer.Option(None, "--kafka-bootstrap",
                                                  help="HOST:PORT with --kafka=external"),
    settle_timeout_s: float = typer.Option(300.0, "--settle-timeout",
                                           help="Seconds to wait for drain + scale-down"),
) -> None:
    """Run a traffic profile against an autoscaled consumer group and analyse it.

    Leaves benchmark.json, timeline.png, summary.md and the raw tables in the run directory.
    """
    from rich.console import Console

    from ..report.summary import measurements_table
    from .progress import RunProgress
    from .plan import plan_run
    from .runner import run_plan
    from .settings import RunSettings

    settings = RunSettings(profile=profile, scaled_object=scaledobject, deployment=deployment,
                           scale=scale, lag_threshold=lag_threshold, balancer=balancer,
                           partitions=partitions, engine=engine, graceful=graceful,
                           out_dir=out, kafka=kafka, kafka_bootstrap=kafka_bootstrap,
                           settle_timeout_s=settle_timeout_s)
    console = Console()
    try:
        plan = plan_run(settings)  # every input problem, before anything starts
    except ConfigError as exc:
        raise fail_usage(exc)
    try:
        with RunProgress(Console(stderr=True)) as progress:
            result = run_plan(
                plan, progress=progress,
                on_run_dir=lambda d: console.print(f"run directory: {d}", highlight=False,
                                                   soft_wrap=True))
    except LagscaleError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1)
    console.print(measurements_table(result.measurements,
                                     title=f"lagscale run {settings.label()}"))
    rec = result.reconciliation
    if rec is not None:
        console.print(f"reconciliation (Spark): produced {rec.produced_total:,}, lost "
                      f"{rec.lost_total:,}, duplicated {rec.duplicated_total:,}",
                      highlight=False)
    for name in ("benchmark_json", "timeline_png", "summary_md"):
        console.print(f"{name}: {result.artifacts[name]}", highlight=False, soft_wrap=True)
