"""calibration/controller.py: the runner's lead before the load and the controller's slip, read
from a synthetic run's events (the timing the twin's driver reproduces)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lagscale.calibration.controller import (
    MIN_STEPS,
    fit_controller,
    lead_extra_s,
    step_slips,
)
from pytest_lagscale.calibration.facts import read_run

from .test_calibrate import _event, make_run


def _with_controller(run: Path, *, autoscale_s: float, poll_slip_s: float,
                     busy_slip_s: float) -> Path:
    """Add an ``autoscale`` phase at ``autoscale_s`` and KEDA polls / HPA syncs from it, each
    late by ``poll_slip_s`` (by ``busy_slip_s`` while r2 and r3 start, 40-49 s)."""
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    events.append(_event(autoscale_s, "run_phase", "runner", phase="autoscale"))
    for name, period in (("keda_poll", 2.0), ("hpa_sync", 3.0)):
        t = autoscale_s
        while t < 70.0:
            events.append(_event(t + 0.004, name, "controller", now_s=1000.0 + t))
            t += period + (busy_slip_s if 40.0 <= t + period < 49.0 else poll_slip_s)
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def test_the_lead_beyond_the_first_sync_and_the_pre_load_scrapes(tmp_path: Path) -> None:
    run = _with_controller(make_run(tmp_path), autoscale_s=2.6, poll_slip_s=0.02,
                           busy_slip_s=0.02)
    facts = read_run(run, with_store=False)
    # scaledobject-ci: one HPA sync of 3 s, then 4 scrapes of 1 s; load_start at 10.0 s
    from pytest_lagscale.calibration.controller import _policy
    from pytest_lagscale.twin.driver import runner_lead_s

    assert runner_lead_s(_policy(facts)) == pytest.approx(7.0)
    assert lead_extra_s(facts) == pytest.approx(10.0 - 2.6 - 7.0)


def test_step_slips_give_each_steps_delay_and_the_load_then(tmp_path: Path) -> None:
    run = _with_controller(make_run(tmp_path), autoscale_s=2.6, poll_slip_s=0.02,
                           busy_slip_s=0.3)
    slips = step_slips(read_run(run, with_store=False))
    idle = [s for s, starting, _m in slips if starting == 0]
    busy = [s for s, starting, _m in slips if starting == 2]
    assert idle and busy
    assert idle == pytest.approx([0.02] * len(idle), abs=1e-6)
    assert busy == pytest.approx([0.3] * len(busy), abs=1e-6)


def test_fit_controller_gives_the_lead_range_and_the_slip_per_starter(tmp_path: Path) -> None:
    runs = [read_run(_with_controller(make_run(tmp_path / str(i)), autoscale_s=lead,
                                      poll_slip_s=0.02, busy_slip_s=0.3), with_store=False)
            for i, lead in enumerate((2.6, 2.9))]
    fit = fit_controller(runs)
    assert fit is not None and fit["runs"] == 2 and fit["steps"] >= MIN_STEPS
    assert (fit["lead_extra_min_s"], fit["lead_extra_max_s"]) == pytest.approx((0.1, 0.4))
    # 0.02 s idle, 0.3 s with two starting: 0.14 s per starter (r1 is the one member); a step
    # due just before r2 and r3 are ready lands after it with the busy slip, so not exact
    assert fit["slip_s"] + fit["slip_s_per_member"] == pytest.approx(0.02, abs=0.006)
    assert fit["slip_s_per_starting"] == pytest.approx(0.14, abs=0.01)


def test_no_controller_events_no_section(tmp_path: Path) -> None:
    assert fit_controller([read_run(make_run(tmp_path), with_store=False)]) is None
