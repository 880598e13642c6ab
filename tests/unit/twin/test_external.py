"""The twin serves ``type: external`` triggers with the persistent-lag scaler's own core
(scaledobject-persistent-lag-ci): its readings are what that window gives for the same samples,
taken every samplingInterval of the twin's clock, and a spike-ci run waits sustainSeconds, scales
out, back, and processes every record once."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_lagscale.control.observation import ExternalMetric
from pytest_lagscale.scalers.persistent_lag.metadata import parse_metadata
from pytest_lagscale.scalers.persistent_lag.sampler import lag_by_partition
from pytest_lagscale.scalers.persistent_lag.window import PersistentLagWindow
from pytest_lagscale.twin.external import TwinScalers
from pytest_lagscale.twin.load import Production
from pytest_lagscale.twin.run import TICK_S, params_for, plan_of, scaler_metadata
from pytest_lagscale.twin.world import Draw, EventSink, World

from .conftest import settings

POLICY = "scaledobject-persistent-lag-ci"


@pytest.fixture(scope="module")
def persistent_run():
    """One simulated spike-ci run under scaledobject-persistent-lag-ci (seed 7, draw 0)."""
    from pytest_lagscale.twin.run import simulate

    return simulate(settings(policy=POLICY), seed=7)


def _decisions(run) -> list[tuple[float, int, int]]:
    rows = run.events[run.events["event"] == "decision"]
    return [(float(t), int(f["current_replicas"]), int(f["desired_replicas"]))
            for t, f in zip(rows["t_s"], rows["fields"])]


def test_settles_and_processes_every_record_once(persistent_run) -> None:
    assert persistent_run.settled
    assert persistent_run.processed == persistent_run.produced
    assert sum(persistent_run.produced) == 210_000


def test_waits_sustain_seconds_then_scales_out_and_back_to_one(persistent_run) -> None:
    decisions = _decisions(persistent_run)
    ups = [d for d in decisions if d[2] > d[1]]
    downs = [d for d in decisions if d[2] < d[1]]
    # lag must stay above lagThreshold for sustainSeconds (15 s) before the value asks for more
    assert ups and 60.0 + 15.0 <= ups[0][0] < 150.0 and max(d[2] for d in ups) == 8
    assert downs and downs[0][0] > 150.0 and downs[-1][2] == 1
    events = persistent_run.events
    assert not (events["event"] == "external_read_failed").any()
    polls = [f for f in events[events["event"] == "keda_poll"]["fields"]]
    metrics = {t["metric_name"] for f in polls for t in f["triggers"]}
    assert metrics == {"s0-persistent-kafka-lag-events"}


@pytest.fixture(scope="module")
def persistent_plan():
    return plan_of(settings(policy=POLICY))


def _world(plan, seed: int) -> World:
    """Four partitions, no production (offsets are set by hand)."""
    prod = Production(tick_s=TICK_S, cumulative=np.zeros((2, 4), dtype=np.int64),
                      total_records=0, end_s=0.0)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0])))
    return World(params_for(plan), prod, Draw(seed=seed, controller_phase_s=0.0, rng=rng),
                 EventSink())


def _total_lag_at(t: float) -> int:
    """Below lagThreshold (500), above it for 26 s, below, above again."""
    return 100 if t < 4 else 4000 + int(40 * t) if t < 30 else 300 if t < 36 else 1200


@pytest.mark.parametrize("seed", [0, 1, 2], ids=["seed-0", "seed-1", "seed-2"])
def test_readings_are_the_scaler_cores_for_the_same_samples(persistent_plan, seed: int) -> None:
    w = _world(persistent_plan, seed)
    calls = persistent_plan.build_policy().external_scalers
    scalers = TwinScalers(w, dict(scaler_metadata(persistent_plan)))
    settings_ = parse_metadata({**calls[0].metadata, **dict(scaler_metadata(persistent_plan))})
    core, offsets_at, readings, samples = PersistentLagWindow(settings_), {}, [], []
    for k in range(0, 60 * 8):
        t = k * TICK_S
        w.committed[:] = 10 * k
        w.log_end[:] = w.committed + np.array([_total_lag_at(t) // 4] * 4)
        w.log_end[0] += _total_lag_at(t) % 4
        offsets_at[t] = w.offsets()
        scalers.tick(k)
        if k >= 4 and k % 16 == 4:           # the controller: every 2 s from t = 0.5
            readings.append((t, scalers.read(calls, t)[0]))
        window = scalers.window(calls[0])
        if window is not None and (not samples or window.samples[-1] is not samples[-1]):
            samples.append(window.samples[-1])
    times = [s.at_s for s in samples]
    interval = settings_.sampling_interval_s
    # the first sample at the first call, then every samplingInterval from a drawn phase
    assert times[0] == 0.5 and interval <= times[1] - times[0] < 2 * interval
    assert all(b - a == interval for a, b in zip(times[1:], times[2:]))
    states, fed = set(), 0
    for t, reading in readings:
        while fed < len(samples) and samples[fed].at_s <= t:
            core.add(samples[fed].at_s, lag_by_partition(offsets_at[samples[fed].at_s]))
            fed += 1
        expected = core.assessment
        states.add(expected.state)
        assert reading == ExternalMetric("persistent-kafka-lag-events", 500.0,
                                         expected.metric_value, expected.active), t
    assert states == {"below", "pending", "sustained"}
    for sample in samples[fed:]:
        core.add(sample.at_s, lag_by_partition(offsets_at[sample.at_s]))
    assert scalers.window(calls[0]).samples == core.samples


def test_the_sampling_phase_is_drawn_per_draw(persistent_plan) -> None:
    calls = persistent_plan.build_policy().external_scalers
    second = set()
    for seed in range(6):
        scalers = TwinScalers(_world(persistent_plan, seed), {})
        scalers.read(calls, 0.0)
        for k in range(1, 40):
            scalers.tick(k)
        second.add(scalers.window(calls[0]).samples[1].at_s)
    assert len(second) > 1 and all(2.0 <= s < 4.0 for s in second)


def test_bad_metadata_reads_as_the_servicers_invalid_argument(persistent_plan) -> None:
    from dataclasses import replace

    (call,) = persistent_plan.build_policy().external_scalers
    bad = replace(call, metadata={**call.metadata, "windowSize": "1"})
    reading = TwinScalers(_world(persistent_plan, 0), {}).read([bad], 0.0)[0]
    assert reading.value is None and reading.error.startswith(
        "INVALID_ARGUMENT: 'windowSize': got '1', expected an integer in [2, 100000] (samples)")
