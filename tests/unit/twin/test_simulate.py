"""A twin run: deterministic, conserving, driven by the REAL policy, measurable by analyze."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from pytest_lagscale.analyze.measure import measure
from pytest_lagscale.config.bundled import manifest_paths
from pytest_lagscale.twin.run import simulate

from .conftest import settings


def test_same_seed_gives_identical_tables(spike_plan, spike_production, spike_run) -> None:
    again = simulate(spike_plan, seed=7, prod=spike_production)
    pd.testing.assert_frame_equal(again.timeline, spike_run.timeline)
    pd.testing.assert_frame_equal(again.events, spike_run.events)


def test_another_draw_differs(spike_plan, spike_production, spike_run) -> None:
    other = simulate(spike_plan, seed=7, draw=1, prod=spike_production)
    assert other.controller_phase_s != spike_run.controller_phase_s
    assert not other.events["t_s"].equals(spike_run.events["t_s"])


def test_every_produced_record_is_processed_once(spike_run) -> None:
    assert spike_run.settled
    assert spike_run.processed == spike_run.produced
    assert sum(spike_run.produced) == 210_000
    # the timeline's consume rate adds up to the records processed after the load started
    consumed = spike_run.timeline["consume_rate_per_s"].sum()
    assert consumed == pytest.approx(210_000, abs=2)


def test_measure_runs_on_the_twin_tables(spike_run) -> None:
    m = measure(spike_run.timeline, spike_run.events, spike_run.spec)
    assert m.reaction.reason is None and m.reaction.total_s > 0
    assert m.scale_out.reason is None and m.scale_out.burst_replicas == 7
    assert m.drain is not None and m.drain.drain_time_s > 0
    assert [s.direction for s in m.steps][:1] == ["up"] and m.steps[-1].replicas_after == 1
    assert all(s.rebalance_s is not None for s in m.steps)


def _peak_desired(run) -> int:
    return int(run.timeline["desired_replicas"].max())


def _first_scale_out(run) -> int:
    decisions = run.events[run.events["event"] == "decision"]
    return int(decisions["fields"].iloc[0]["desired_replicas"])


def test_a_ten_times_higher_lag_threshold_gives_fewer_replicas(spike_run) -> None:
    higher = simulate(settings(lag_threshold=5000), seed=7)
    # the same lag asks for a tenth of the replicas: a smaller first step, fewer on average
    assert _first_scale_out(higher) < _first_scale_out(spike_run)
    assert higher.timeline["desired_replicas"].mean() < \
        spike_run.timeline["desired_replicas"].mean()
    assert higher.measurements.replica_seconds < spike_run.measurements.replica_seconds


def test_max_replica_count_caps_the_deployment(tmp_path: Path) -> None:
    doc = yaml.safe_load(Path(manifest_paths("ci")["scaled_object"]).read_text())
    doc["spec"]["maxReplicaCount"] = 3
    capped = tmp_path / "scaledobject-cap3.yaml"
    capped.write_text(yaml.safe_dump(doc))
    run = simulate(settings(policy=str(capped)), seed=7)
    assert _peak_desired(run) == 3
    assert int(run.timeline["current_replicas"].max()) == 3
    assert int(run.timeline["ready_replicas"].max()) == 3


def test_the_controller_events_are_the_policys(spike_run) -> None:
    names = set(spike_run.events["event"])
    assert {"keda_poll", "hpa_sync", "decision", "replica_started", "replica_ready",
            "engine_ready", "subscribed", "joined", "assigned", "first_record", "revoked",
            "spike_start", "spike_end", "run_phase"} <= names
    polls = spike_run.events[spike_run.events["event"] == "keda_poll"]["t_s"].diff().dropna()
    # pollingInterval 2 s plus the calibrated slip, an idle machine's to a busy one's (exactly
    # 2 s when the poll rides on a late HPA sync's step: one check of the loop runs both)
    params = spike_run_params()
    assert polls.min() >= 2.0 - 1e-3
    assert polls.max() <= 2.0 + params.controller_slip(16, 16) + 1e-3
    assert polls.mean() > 2.0 + params.controller_slip(0, 0) / 2
    assert polls.max() > 2.0 + params.controller_slip(0, 0) + 0.01   # slower when loaded


def spike_run_params():
    from pytest_lagscale.twin.run import params_for, plan_of

    from .conftest import settings

    return params_for(plan_of(settings()))


def test_without_a_controller_section_the_policy_keeps_its_period_on_the_grid(
        spike_plan, spike_production) -> None:
    """A calibration without ``controller``: the phase is drawn over the policy's periods and
    every step runs on the tick it fell due, pollingInterval 2 s exactly."""
    from dataclasses import replace

    from pytest_lagscale.twin.run import params_for, simulate

    params = replace(params_for(spike_plan), controller_lead_extra_s=None,
                     controller_slip_s=0.0, controller_slip_s_per_starting=0.0,
                     controller_slip_s_per_member=0.0)
    run = simulate(spike_plan, params, seed=7, prod=spike_production)
    polls = run.events[run.events["event"] == "keda_poll"]["t_s"].diff().dropna()
    assert polls.round(6).eq(2.0).all()
    assert 0.0 <= run.controller_phase_s < 2.0 * 3.0       # pollingInterval x HPA sync period


def test_the_policy_starts_the_runners_lead_before_the_load_and_its_steps_slip(
        spike_plan, spike_production) -> None:
    """With a ``controller`` section the first decide comes first_decision_within_s (one HPA
    sync, 3 s) + 4 pre-load scrapes of 1 s + the draw's extra before the load, the extra in the
    calibrated range; a step due at t runs at t + slip (not on the 1/8 s grid)."""
    from dataclasses import replace

    from pytest_lagscale.twin.run import params_for, simulate

    params = replace(params_for(spike_plan), controller_lead_extra_s=(0.2, 0.3),
                     controller_slip_s=0.05, controller_slip_s_per_starting=0.0,
                     controller_slip_s_per_member=0.0)
    run = simulate(spike_plan, params, seed=7, prod=spike_production)
    events = run.events
    load = float(events[events["event"] == "load_start"]["t_s"].iloc[0])
    polls = events[events["event"] == "keda_poll"]["t_s"]
    lead = load - float(polls.iloc[0])
    assert 0.2 <= run.controller_phase_s <= 0.3
    assert lead == pytest.approx(3.0 + 4 * 1.0 + run.controller_phase_s, abs=1e-6)
    syncs = events[events["event"] == "hpa_sync"]["t_s"]
    assert float(syncs.iloc[0]) - float(polls.iloc[0]) == pytest.approx(3.0 + 0.05, abs=1e-3)
    gaps = polls.diff().dropna().round(3)
    assert set(gaps) == {2.0, 2.05} and (gaps == 2.05).mean() > 0.5   # 2.0: with a late sync


@pytest.mark.parametrize("engine_s, per_record_ms", [(0.025, 0.625), (0.378, 2.5)],
                         ids=["arrow-full-1.275s-batches", "spark-ci-5.378s-batches"])
def test_a_saturated_replica_writes_at_its_capacity_not_at_the_tick_grids(
        spike_plan, engine_s, per_record_ms) -> None:
    """Batches of 1.275 s (arrow at full scale) on the 0.125 s grid would cycle every 1.375 s,
    7.3 % under capacity, if a batch could start only on a tick: the real replica starts its
    next batch as soon as the last one is written."""
    from dataclasses import replace

    from pytest_lagscale.twin.run import TICK_S, params_for

    from .conftest import records_on_a_backlog

    params = replace(params_for(spike_plan), per_batch_engine_s=engine_s,
                     engine_s_per_member=0.0, engine_s_per_starting=0.0,
                     per_record_ms=per_record_ms)
    ticks = int(3000 / TICK_S)
    rate = records_on_a_backlog(params, 3000) / (ticks * TICK_S)
    assert rate == pytest.approx(params.capacity_per_s, rel=0.005)


def test_the_timelines_lag_is_prometheus_newest_scrape_at_the_draws_phase(
        spike_plan, spike_production, monkeypatch) -> None:
    """A real run's ``total_lag`` is the newest 1 s scrape at the bucket start (its
    ``total_lag_age_s`` one value in [0, 1) per run): the twin's bucket holds the lag as of its
    draw's scrape phase, not the lag at the bucket start."""
    from pytest_lagscale.twin import driver
    from pytest_lagscale.twin.run import TICK_S
    from pytest_lagscale.twin.world import World

    true_lag: dict[int, int] = {}
    worlds: list[World] = []
    original = World.tick

    def tick(self, k: int, t: float | None = None) -> None:
        true_lag[k] = self.total_lag  # what a scrape at tick k reads (before the tick)
        worlds.append(self)
        original(self, k, t)

    monkeypatch.setattr(World, "tick", tick)
    per_scrape = int(round(driver.LAG_SCRAPE_INTERVAL_S / TICK_S))
    for draw in range(6):
        true_lag.clear()
        worlds.clear()
        timeline = simulate(spike_plan, seed=7, draw=draw, prod=spike_production).timeline
        phase = int(worlds[0].draw.stream(driver.SCRAPE_STREAM_KEY).integers(per_scrape))
        if phase == 0:
            continue
        age = per_scrape - phase
        ticks = [int(round(t / TICK_S)) for t in timeline["t_s"]]
        expected = [true_lag.get(k - age, 0) for k in ticks]
        assert timeline["total_lag"].tolist() == expected, draw
        assert sum(true_lag[k] != e for k, e in zip(ticks, expected) if k in true_lag) > 10
        return
    pytest.fail("every draw had scrape phase 0")
