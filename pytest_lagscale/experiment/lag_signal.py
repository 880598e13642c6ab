"""Where a run's policy reads lag: the ``--lag-source`` plan, the ``sources`` run phase that starts
the counterparts a source needs, and the summary of the signal's staleness at decision time.

* :func:`plan_lag_source` (pure, at plan time): a non-broker ``--lag-source`` only for a policy
  that reads total lag (lag-per-slot); the CloudWatch period and window from the options, else
  the policy's ``aws-cloudwatch`` trigger, else MSK's 60 s and the recipe's 300 s.
* :func:`start_lag_sources` (the runner's ``sources`` phase, after Prometheus): for cloudwatch
  (the source, or a policy with an ``aws-cloudwatch`` trigger) moto's server (a child process in
  its own process group) and a :class:`~pytest_lagscale.counterparts.lag_publisher.LagPublisher`
  of the broker's total lag; for confluent the local Metrics API over the run's Prometheus with
  credentials made for the run; then the total-lag source and the value triggers' reader. Each
  part is on the run's ExitStack as soon as it exists.
* :func:`signal_summary` (analysis): per source kind, the staleness of the signal at the
  controller's steps and decisions (median, max).

Source: docs/lag-sources.md (the sources, the counterparts, the wiring; "In a run").
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Iterable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from ..contract.errors import ConfigError
from ..options import LAG_SOURCE_KINDS

#: The ``Cluster Name`` dimension the run publishes SumOffsetLag under (MSK's cluster name).
CLUSTER_NAME = "lagscale-msk"
#: The Confluent cluster id the run's Metrics API stands for.
CONFLUENT_CLUSTER_ID = "lkc-lagscale"
#: MSK's publishing period and the recipe's window, seconds (the defaults without a trigger).
MSK_PERIOD_S, RECIPE_WINDOW_S = 60.0, 300.0
#: Variable names the run's Confluent credentials are handed to the source under (never in
#: ``os.environ``: the source reads them from a mapping of the run's own).
CONFLUENT_ENV = ("LAGSCALE_CONFLUENT_API_KEY", "LAGSCALE_CONFLUENT_API_SECRET")


@dataclass(frozen=True)
class LagSourcePlan:
    """What the ``sources`` phase starts.

    Attributes:
        kind: ``--lag-source``.
        cloudwatch: a CloudWatch stand-in is needed (the source, or an aws-cloudwatch trigger).
        period_s: seconds between published datapoints and the source's period.
        window_s: seconds the cloudwatch source looks back.
    """

    kind: str = "broker"
    cloudwatch: bool = False
    period_s: float = MSK_PERIOD_S
    window_s: float = RECIPE_WINDOW_S


def plan_lag_source(settings: Any, policy: Any) -> LagSourcePlan:
    """The lag-source plan of ``settings`` for ``policy`` (a built ScalingPolicy).

    Raises:
        ConfigError: ``--lag-source`` other than broker for a policy that reads offsets per
            partition (a kafka trigger, the run's persistent-lag scaler), naming the option, the
            policy and the allowed values; ``share-group`` (a share-group run reads its lag
            itself, docs/lag-sources.md "Share groups").
    """
    kind = settings.lag_source
    if kind == "share-group":
        raise ConfigError("--lag-source: 'share-group' reads a share group's lag, which a run of share-group "
                          "replicas (--group-type share) reads by itself and scales on through the share-group "
                          "scaler (--policy scaledobject-share-group-ci); drop --lag-source (broker)")
    per_partition = (policy.needs_lag and not getattr(policy, "reads_total_lag", False)) \
        or getattr(policy, "needs_local_scaler", False)
    if kind != "broker" and per_partition:
        total_only = ", ".join(k for k in LAG_SOURCE_KINDS if k != "broker")
        raise ConfigError(f"--lag-source: {kind!r} is not allowed with the policy {policy.manifest_name!r}, "
                          "whose trigger reads offsets per partition (KEDA's kafka trigger or the persistent-lag "
                          f"scaler); allowed: broker (the total-lag sources {total_only} serve a policy that "
                          "reads total lag, e.g. lag-per-slot); drop --lag-source or use --policy lag-per-slot-ci "
                          "(lag-per-slot at full scale)")
    triggers = [t for t in getattr(policy, "value_triggers", ()) if t.type_name == "aws-cloudwatch"]
    meta = triggers[0].meta if triggers else None
    period = settings.cloudwatch_period_s or (meta.metric_stat_period_s if meta else MSK_PERIOD_S)
    window = settings.cloudwatch_window_s or (meta.metric_collection_time_s if meta else RECIPE_WINDOW_S)
    return LagSourcePlan(kind, kind == "cloudwatch" or bool(triggers), float(period), float(window))


def start_lag_sources(run: Any, stack: ExitStack) -> None:
    """The runner's ``sources`` phase (see the module docstring); sets ``run.parts.moto``,
    ``total_lag_source`` and ``value_reader``, and records what it started in ``run.lag_signal``
    and a ``lag_source_ready`` event.

    Raises:
        LagscaleError, ReadinessTimeout: moto did not start (its log's last lines).
        ConfigError: the source's options (a bug: the run made them).
    """
    from ..platform.value_triggers import RunServices, ValueTriggerReader

    plan: LagSourcePlan = run.plan.lag_source
    parts, prometheus_url = run.parts, run.parts.prometheus.url
    services = RunServices(prometheus_url=prometheus_url, cluster_name=CLUSTER_NAME, group=run.group,
                           topic=run.topic, manifest_group=run.plan.deployment.group,
                           manifest_topic=run.plan.profile.topic)
    info: dict[str, Any] = {"kind": plan.kind}
    if plan.cloudwatch:
        from ..counterparts.lag_publisher import LagPublisher, PublishTarget
        from ..counterparts.moto_server import CREDENTIALS, MotoServer

        moto = MotoServer(run.layout.moto_log)
        stack.callback(moto.stop)
        moto.start()
        parts.moto = moto
        publisher = LagPublisher.from_broker(parts.admin, moto.client(),
                                             PublishTarget(CLUSTER_NAME, run.group, run.topic),
                                             period_s=plan.period_s)
        stack.callback(publisher.stop)
        publisher.start()
        services = RunServices(**{**services.__dict__, "aws_endpoint": moto.url, "aws_credentials": CREDENTIALS})
        info.update(moto_url=moto.url, cloudwatch_period_s=plan.period_s, cloudwatch_window_s=plan.window_s,
                    cluster_name=CLUSTER_NAME)
    parts.total_lag_source = _total_lag_source(run, plan, stack, info)
    parts.value_reader = ValueTriggerReader(services)
    policy = run.plan.build_policy()
    info["trigger_addresses"] = services.mapping(getattr(policy, "value_triggers", ()))
    run.lag_signal = info
    run.events.emit("lag_source_ready", **info)


def _total_lag_source(run: Any, plan: LagSourcePlan, stack: ExitStack, info: dict[str, Any]) -> Any:
    """The total-lag source the policy reads (None for broker: the policy reads offsets)."""
    from ..sources import make_lag_source

    group, topic = run.group, run.topic
    if plan.kind == "prometheus":
        info["url"] = run.parts.prometheus.url
        return make_lag_source("prometheus", None, group, topic, {"url": run.parts.prometheus.url})
    if plan.kind == "cloudwatch":
        from ..sources.cloudwatch import CloudWatchLagSource, CloudWatchSettings

        moto = run.parts.moto
        settings = CloudWatchSettings.from_options(group, topic, {
            "cluster_name": CLUSTER_NAME, "endpoint_url": moto.url, "period_s": plan.period_s,
            "window_s": plan.window_s})
        return CloudWatchLagSource(settings, client=moto.client())
    if plan.kind == "confluent":
        from ..counterparts.confluent_metrics import ConfluentMetricsService
        from ..sources.confluent import ConfluentLagSource, ConfluentSettings
        from ..sources.credentials import Secret

        key, secret = secrets.token_hex(8), secrets.token_hex(16)
        service = ConfluentMetricsService(run.parts.prometheus.url, cluster_id=CONFLUENT_CLUSTER_ID,
                                          api_key=Secret(key), api_secret=Secret(secret))
        stack.callback(service.stop)
        service.start()
        info.update(confluent_url=service.url, cluster_id=CONFLUENT_CLUSTER_ID)
        settings = ConfluentSettings.from_options(group, {
            "cluster_id": CONFLUENT_CLUSTER_ID, "url": service.url, "api_key_env": CONFLUENT_ENV[0],
            "api_secret_env": CONFLUENT_ENV[1]}, environ=dict(zip(CONFLUENT_ENV, (key, secret))))
        return ConfluentLagSource(settings)
    return None


def signal_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per source kind, the staleness of the lag signal the controller decided on.

    Args:
        records: the run's merged event records; the controller's step events and ``decision``
            events carry ``signal`` (``source``, ``lag_records``, ``datapoint_utc``,
            ``staleness_s``; per value trigger ``triggers.<index>.staleness_s``).

    Returns:
        ``{kind: {"steps": n, "decisions": n, "staleness_s_median": s, "staleness_s_max": s,
        "decision_staleness_s_median": s, "decision_staleness_s_max": s}}`` (seconds; None when
        no staleness was known). A value trigger counts under its type (``prometheus``,
        ``aws-cloudwatch``).
    """
    steps: dict[str, list[float]] = {}
    decisions: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    for record in records:
        signal = record.get("signal")
        if not isinstance(signal, Mapping) or record.get("source", "controller") != "controller":
            continue
        target = decisions if record.get("event") == "decision" else steps
        readings = [(signal.get("source"), signal.get("staleness_s"))] if signal.get("source") else []
        readings += [(t.get("type"), t.get("staleness_s")) for t in (signal.get("triggers") or {}).values()]
        for kind, staleness in readings:
            count = counts.setdefault(kind, [0, 0])
            count[record.get("event") == "decision"] += 1
            if staleness is not None:
                target.setdefault(kind, []).append(float(staleness))
    return {kind: {"steps": n_steps, "decisions": n_decisions,
                   **_stats("staleness_s", steps.get(kind)), **_stats("decision_staleness_s", decisions.get(kind))}
            for kind, (n_steps, n_decisions) in sorted(counts.items())}


def _stats(name: str, values: list[float] | None) -> dict[str, float | None]:
    if not values:
        return {f"{name}_median": None, f"{name}_max": None}
    return {f"{name}_median": round(statistics.median(values), 3), f"{name}_max": round(max(values), 3)}


__all__ = ["CLUSTER_NAME", "LagSourcePlan", "plan_lag_source", "signal_summary", "start_lag_sources"]
