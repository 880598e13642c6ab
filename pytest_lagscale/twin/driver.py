"""Drive the REAL scaling policy on the twin's clock and record the run's two tables.

:func:`drive` plays one run on a :class:`~.world.World`: the Deployment starts at
minReplicaCount ``DEPLOY_LEAD_S`` before the load; the policy (built by
``pytest_lagscale.config.policy.build_policy``, any :class:`~pytest_lagscale.control.policy.base.
ScalingPolicy`) makes its first decision at ``-(AUTOSCALE_LEAD_S + controller phase)`` seconds,
which starts its own poll/sync schedule; from then on, every tick, ``policy.due(now_s)`` and
``policy.decide(Observation, now_s)`` run exactly as in
:class:`pytest_lagscale.platform.autoscaler.LocalAutoscaler` (same observation: ``spec.replicas``,
offsets, pods that exist, ready pods, for ``type: external`` triggers the answers of the run's
own persistent-lag scaler (:mod:`.external`, its sampling on the twin's clock) and for a Pods
metric the replicas' own lag as Prometheus serves it (:mod:`.pod_lag`); same events: each step
under its name with ``ready_replicas``, plus ``decision`` when the count changed, and the
Deployment scaled; ``pod_metrics`` and ``external_read_failed`` as the local autoscaler writes
them). With a calibrated ``controller`` section the policy starts as the runner starts it, at
-(:func:`runner_lead_s` + the draw's extra), and each step runs off the tick grid when it fell
due plus the calibrated slip at the machine's load (:class:`_StepTimer`;
``calibration/controller.py``).

The producer's events (``load_start``, ``phase``, ``spike_start``, ``spike_end``, ``load_end``)
are written at their scheduled times and the runner's ``run_phase`` marks at the twin's phases.
After the load, the run settles (total lag <= the reference lagThreshold, minReplicaCount live
replicas, nothing in flight) or gives up after ``settle_timeout_s``.

The timeline has the columns of :mod:`pytest_lagscale.analyze.tables`, one row per 1 s bucket
``[t_s, t_s + 1)`` from 0: gauges at the bucket start, rates over the bucket; ``total_lag`` is
the newest of the run's Prometheus's 1 s scrapes of the lag exporter at the bucket start, at a
scrape phase drawn per draw (a real run's ``total_lag_age_s`` is one value in [0, 1) s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..analyze.tables import TIMELINE_COLUMNS
from ..control.hpa import PodCpu, PodMetric
from ..control.observation import ExternalMetric, Observation
from ..control.policy.base import step_record
from ..load.schedule import Step
from .cpu import TwinCpu
from .external import TwinScalers
from .pod_lag import PodLagMetric
from .world import World

#: Seconds before the load at which the Deployment starts (minReplicaCount replicas).
DEPLOY_LEAD_S = 20.0
#: Seconds between two scrapes of the lag exporter by the run's Prometheus
#: (``PrometheusServer``'s ``scrape_interval_s`` default, which ``experiment/runner.py`` uses).
LAG_SCRAPE_INTERVAL_S = 1.0
#: Key of the draw's stream for the lag exporter's scrape phase (:meth:`~.world.Draw.stream`).
SCRAPE_STREAM_KEY = 4
#: Seconds before the load at which the autoscaler makes its first decision (plus the phase).
AUTOSCALE_LEAD_S = 6.0


@dataclass(frozen=True)
class DriveInputs:
    """What :func:`drive` needs besides the world and the policy.

    Attributes:
        schedule: the profile's steps (seconds, records/s, labels).
        spike: ``(start_s, end_s)`` of the spike, or None.
        min_replicas: minReplicaCount (at least 1).
        reference_lag_threshold: records; the settle condition's lag.
        settle_timeout_s: most seconds to wait after the load for the run to settle.
        scaler_metadata: the run's ``bootstrapServers``, ``consumerGroup`` and ``topic``, sent
            to its own scaler in place of a ``type: external`` trigger's (:mod:`.external`).
        switches: the run's ``switch_policy`` actions, in time order.
    """

    schedule: tuple[Step, ...]
    spike: tuple[float, float] | None
    min_replicas: int
    reference_lag_threshold: int
    settle_timeout_s: float = 300.0
    scaler_metadata: tuple[tuple[str, str], ...] = ()
    switches: tuple["PolicySwitch", ...] = ()


@dataclass(frozen=True)
class PolicySwitch:
    """A scheduled ``switch_policy`` action (``experiment/actions/switch_policy.py``).

    Attributes:
        at_s: the action's run time, seconds.
        ref: the policy as the action names it (bundled name or path).
        label: the action's label (``switch_policy <ref>``).
        policy: the new policy, fresh (built by the plan with ``created_at_s = at_s``).
    """

    at_s: float
    ref: str
    label: str
    policy: Any


class _Timeline:
    """Accumulates the timeline's 1 s buckets."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.consumed = 0.0
        self.produced_at_start = 0

    def open(self, t: float, world: World, desired: int, scraped_lag: int) -> None:
        self.rows.append({"t_s": t, "total_lag": scraped_lag, "desired_replicas": desired,
                          "current_replicas": world.spec_replicas,
                          "ready_replicas": world.ready_replicas})
        self.consumed = 0.0
        self.produced_at_start = int(world.log_end.sum())

    def close(self, world: World) -> None:
        if self.rows:
            self.rows[-1]["consume_rate_per_s"] = round(self.consumed, 3)
            self.rows[-1]["produce_rate_per_s"] = float(int(world.log_end.sum())
                                                        - self.produced_at_start)

    def table(self) -> pd.DataFrame:
        table = pd.DataFrame(self.rows, columns=list(TIMELINE_COLUMNS))
        return table.dropna().astype(TIMELINE_COLUMNS).reset_index(drop=True)


def _producer_events(world: World, inputs: DriveInputs) -> list[tuple[float, str, dict]]:
    marks: list[tuple[float, str, dict]] = [(0.0, "load_start", {"scheduled_s": 0.0})]
    for step in inputs.schedule:
        marks.append((step.start_s, "phase", {"scheduled_s": step.start_s, "label": step.label,
                                               "rate_per_s": step.rate_per_s}))
    if inputs.spike is not None:
        marks.append((inputs.spike[0], "spike_start", {"scheduled_s": inputs.spike[0]}))
        marks.append((inputs.spike[1], "spike_end", {"scheduled_s": inputs.spike[1]}))
    end = inputs.schedule[-1].end_s
    marks.append((end, "load_end", {"scheduled_s": end}))
    return sorted(marks, key=lambda m: m[0])


class _Controller:
    """The autoscaler's step, as :class:`~pytest_lagscale.platform.autoscaler.LocalAutoscaler`:
    offsets for a lag policy, the run's own scaler's answers for ``type: external`` triggers
    (:mod:`.external`), the replicas' own lag for a Pods metric (:mod:`.pod_lag`), the replicas'
    CPU (:mod:`.cpu`, sampled at every due step when the calibration models it and the
    Deployment requests CPU, decided on by a CPU policy); :meth:`switch` replaces the policy
    as ``LocalAutoscaler.set_policy`` does."""

    def __init__(self, policy: Any, world: World, scaler_metadata: dict[str, str] | None = None):
        self.world, self.scaler_metadata = world, scaler_metadata
        self.desired = world.spec_replicas
        self.decisions = 0
        p = world.params
        self.cpu = TwinCpu(p.cpu_idle_millicores, p.cpu_s_per_1000_records) \
            if p.models_cpu else None
        self._use(policy)

    def _use(self, policy: Any) -> None:
        self.policy = policy
        self.external_calls = tuple(getattr(policy, "external_scalers", ()))
        self.scalers = (TwinScalers(self.world, self.scaler_metadata) if self.external_calls
                        else None)
        self.pod_metric_name = getattr(policy, "pod_metric_name", None)
        self.pod_lag = PodLagMetric(self.world) if self.pod_metric_name else None

    def switch(self, switch: PolicySwitch, now_s: float) -> None:
        """Run a ``switch_policy`` action at ``now_s``: the runner's ``action`` event and the
        controller's ``policy_switched``, then the new policy decides from its next step."""
        previous, new = self.policy, switch.policy
        events = self.world.events
        events.emit(now_s, "runner", "action", action="switch_policy", label=switch.label,
                    scheduled_s=switch.at_s, started_s=round(now_s, 3), policy=switch.ref)
        events.emit(now_s, "controller", "policy_switched", now_s=now_s,
                    from_policy=previous.name, from_object=previous.metrics_name,
                    to_policy=new.name, to_object=new.metrics_name,
                    min_replicas=new.min_replicas, max_replicas=new.max_replicas,
                    lag_threshold_records=new.lag_threshold_records)
        self._use(new)

    def observe(self, k: int) -> None:
        """What runs every tick besides the policy: the scaler's sampling, the replicas'
        gauges and Prometheus's scrapes."""
        if self.scalers is not None:
            self.scalers.tick(k)
        if self.pod_lag is not None:
            self.pod_lag.tick(k)

    def step(self, now_s: float) -> None:
        w = self.world
        if not self.policy.due(now_s):
            return
        live = w.live()
        observation = Observation(current_replicas=w.spec_replicas,
                                  offsets=w.offsets() if self.policy.needs_lag else None,
                                  status_replicas=len(live), ready_replicas=w.ready_replicas,
                                  cpu_pods=self._cpu_pods(live, now_s),
                                  external=self._external(now_s),
                                  pod_metrics=self._pod_metrics(now_s))
        decision = self.policy.decide(observation, now_s)
        for step in decision.steps:
            record = step_record(step)
            event = record.pop("event")
            w.events.emit(now_s, "controller", event, **record,
                          ready_replicas=w.ready_replicas)
            if step.sets_desired_replicas:
                self.desired = step.replicas_after
            if step.replicas_after != step.replicas_before:
                self.decisions += 1
                w.events.emit(now_s, "controller", "decision", via=event,
                              desired_replicas=step.replicas_after,
                              current_replicas=step.replicas_before)
                w.scale(step.replicas_after, now_s)

    def _cpu_pods(self, live: list, now_s: float) -> tuple[PodCpu, ...] | None:
        if self.cpu is None:
            return None
        request = int(self.world.params.cpu_request_millicores)
        usage = self.cpu.sample(live, now_s)
        if usage:
            self.world.events.emit(now_s, "controller", "replica_cpu",
                                   request_millicores=request,
                                   millicores={k: round(v, 1) for k, v in usage.items()})
        if not self.policy.needs_cpu:
            return None
        return tuple(PodCpu(int(usage[r.rid]) if r.rid in usage else None, request,
                            r.probe_ready) for r in live)

    def _external(self, now_s: float) -> dict[int, ExternalMetric] | None:
        if self.scalers is None:
            return None
        readings = self.scalers.read(self.external_calls, now_s)
        for index, reading in readings.items():
            if reading.error is not None:
                self.world.events.emit(now_s, "controller", "external_read_failed",
                                       trigger_index=index, error=reading.error)
        return readings

    def _pod_metrics(self, now_s: float) -> tuple[PodMetric, ...] | None:
        if self.pod_lag is None:
            return None
        self.world.events.emit(now_s, "controller", "pod_metrics", metric=self.pod_metric_name,
                               values=self.pod_lag.values())
        return self.pod_lag.read()


class _StepTimer:
    """Runs the controller's steps at their own times: the first decide at ``start_s``, then
    each step that falls due at its due time (found to 1/1024 of a tick) plus
    ``params.controller_slip`` at the world's load then, in the tick that time falls in."""

    def __init__(self, controller: _Controller, start_s: float) -> None:
        self.controller = controller
        self.pending: float | None = start_s

    def tick(self, t: float, tick: float) -> None:
        controller = self.controller
        policy, world = controller.policy, controller.world
        if self.pending is None and policy.due(t):
            members, starting = world.load()
            self.pending = _earliest_due(policy, t - tick, t) + world.params.controller_slip(
                members, starting)
        if self.pending is not None and self.pending <= t + 1e-9:
            now_s, self.pending = self.pending, None
            controller.step(now_s)


def _earliest_due(policy: Any, low: float, high: float) -> float:
    """The earliest time in ``[low, high]`` at which ``policy.due`` holds (it holds at
    ``high``; ``due`` is monotone in time): ``low`` when it already held then."""
    if policy.due(low):
        return low
    for _ in range(10):
        mid = (low + high) / 2
        low, high = (low, mid) if policy.due(mid) else (mid, high)
    return high


def runner_lead_s(policy: Any) -> float:
    """Seconds from the autoscaler's start to the load as the runner waits them, without
    overheads: the policy's ``first_decision_within_s`` + the runner's ``PRE_LOAD_SCRAPES`` x
    :data:`LAG_SCRAPE_INTERVAL_S` (``experiment/runner.py``, imported when first needed: the
    runner's module loads the Kafka client, which importing the twin must not)."""
    from ..experiment.runner import PRE_LOAD_SCRAPES

    return float(policy.first_decision_within_s) + PRE_LOAD_SCRAPES * LAG_SCRAPE_INTERVAL_S


def _settled(world: World, inputs: DriveInputs) -> bool:
    return (world.total_lag <= inputs.reference_lag_threshold
            and world.spec_replicas == inputs.min_replicas
            and len(world.replicas) == inputs.min_replicas and not world.in_flight()
            and world.ready_replicas == inputs.min_replicas)


def _marks_due(world: World, marks: list[tuple[float, str, dict]], t: float) -> None:
    """Write the producer's (and the runner's settle) marks due by ``t``."""
    while marks and marks[0][0] <= t + 1e-9:
        at, name, fields = marks.pop(0)
        world.events.emit(at, "producer", name, **fields)
        if name == "load_end":
            world.events.emit(at, "runner", "run_phase", phase="settle")


def drive(world: World, policy: Any, inputs: DriveInputs) -> tuple[pd.DataFrame, bool]:
    """Play one run; returns ``(timeline, settled)``; the events are in ``world.events``.

    Args:
        world: a fresh world (no replicas yet).
        policy: a fresh ScalingPolicy (no decision made yet).
        inputs: schedule, spike, replica floor, settle rule.
    """
    tick, ev = world.tick_s, world.events
    per_bucket = int(round(1.0 / tick))
    k0 = -int(round(DEPLOY_LEAD_S / tick))
    timed = world.params.controller_lead_extra_s is not None
    if timed:  # the runner's lead (see the module docstring), off the tick grid
        start_s = -(runner_lead_s(policy) + world.draw.controller_phase_s)
        k_auto = math.ceil(start_s / tick - 1e-9)
    else:
        k_auto = -int(round((AUTOSCALE_LEAD_S + world.draw.controller_phase_s) / tick))
        start_s = k_auto * tick
    end = inputs.schedule[-1].end_s
    k_end = int(math.ceil((end + inputs.settle_timeout_s) / tick))
    marks, controller, timeline = _producer_events(world, inputs), _Controller(
        policy, world, dict(inputs.scaler_metadata)), _Timeline()
    timer = _StepTimer(controller, start_s) if timed else None
    ev.emit(k0 * tick, "runner", "run_phase", phase="deploy")
    world.scale(inputs.min_replicas, k0 * tick)
    controller.desired, settled = inputs.min_replicas, False
    switches = list(inputs.switches)
    per_scrape = max(1, int(round(LAG_SCRAPE_INTERVAL_S / tick)))
    scrape_phase = int(world.draw.stream(SCRAPE_STREAM_KEY).integers(per_scrape))
    scraped_lag = 0
    for k in range(k0, k_end + 1):
        t = round(k * tick, 6)  # as World.tick: periodic timers stay on the grid
        if k % per_scrape == scrape_phase:
            scraped_lag = world.total_lag
        if k in (k_auto, 0):
            ev.emit(start_s if k == k_auto else t, "runner", "run_phase",
                    phase="autoscale" if k == k_auto else "load")
        if k >= 0 and k % per_bucket == 0:
            timeline.close(world)
            if settled:  # the settled state's own bucket is recorded, as a real run's
                break
            settled = t > end and _settled(world, inputs)
            timeline.open(t, world, controller.desired, scraped_lag)
        if marks and marks[0][0] <= t + 1e-9:
            _marks_due(world, marks, t)
        world.tick(k, t)
        if controller.scalers is not None or controller.pod_lag is not None:
            controller.observe(k)
        while switches and switches[0].at_s <= t + 1e-9:
            controller.switch(switches.pop(0), t)
        if timer is not None:
            timer.tick(t, tick)
        elif k >= k_auto:
            controller.step(t)
        if k >= 0:
            timeline.consumed += world.consumed_in_tick
    ev.emit(k * tick, "runner", "run_phase", phase="record")
    return timeline.table(), settled


__all__ = ["AUTOSCALE_LEAD_S", "DEPLOY_LEAD_S", "LAG_SCRAPE_INTERVAL_S", "SCRAPE_STREAM_KEY",
           "DriveInputs", "PolicySwitch", "drive", "runner_lead_s"]
