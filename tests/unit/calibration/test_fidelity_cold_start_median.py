"""calibration/fidelity.py: the prediction given a run's cold starts divides by the twin's median
cold start, which depends on the run's settings and not on what it measured; two held-out runs
of one label and one machine image (``tests/fixtures/heldout``, both of the default
calibration's image) share it and predict as each does alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.calibration import fidelity

HELD_OUT = Path(__file__).resolve().parents[2] / "fixtures" / "heldout"
RUNS = (HELD_OUT / "20261129T114528Z-spike-ci", HELD_OUT / "20261129T135638Z-spike-ci")


@pytest.fixture
def counted_draws(monkeypatch):
    """Count the draw sets simulated (``fidelity._draws`` calls), the median cache emptied."""
    monkeypatch.setattr(fidelity, "_cold_start_medians", {})
    calls: list[int] = []
    real = fidelity._draws

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fidelity, "_draws", counting)
    return calls


def _given(run: Path) -> dict:
    result = fidelity.predict_run(run, draws=4, condition_on_cold_start=True).as_dict()
    result.pop("seconds")
    return result


def test_runs_of_one_label_share_the_twin_cold_start_median(counted_draws) -> None:
    together = [_given(run) for run in RUNS]
    assert len(counted_draws) == 3  # the shared median once, then each run's own draws
    alone = []
    for run in RUNS:
        fidelity._cold_start_medians.clear()
        alone.append(_given(run))
    assert together == alone
    assert together[0]["cold_start_scale"] != together[1]["cold_start_scale"]


def test_the_median_cache_stays_bounded(counted_draws, monkeypatch) -> None:
    monkeypatch.setattr(fidelity, "_COLD_START_MEDIANS_MAX", 1)
    _given(RUNS[0])
    fidelity.predict_run(RUNS[0], draws=3, condition_on_cold_start=True)  # another key
    assert len(fidelity._cold_start_medians) == 1
