"""Experiment 9's verdicts on the seeds' claims (``analyze/shootout.py``)."""

from __future__ import annotations

import pytest

from pytest_lagscale.analyze.shootout import SEED_CLAIMS, reduction, seed_claims


@pytest.mark.parametrize("policy, reference, expected", [
    pytest.param(3, 12, 0.75, id="fewer"),
    pytest.param(12, 12, 0.0, id="same"),
    pytest.param(18, 12, -0.5, id="more"),
    pytest.param(None, 12, None, id="policy-unmeasured"),
    pytest.param(3, None, None, id="reference-unmeasured"),
    pytest.param(3, 0, None, id="reference-zero"),
])
def test_reduction(policy, reference, expected) -> None:
    assert reduction(policy, reference) == (None if expected is None
                                            else pytest.approx(expected))


def _tables(persistent: dict, keda: dict) -> dict:
    return {"bursty": {"persistent-lag": persistent, "keda": keda},
            "spike": {"persistent-lag": {"scale_steps": 1}, "keda": {"scale_steps": 100}}}


def test_each_claim_is_judged_on_the_bursty_profile_against_its_lower_bound() -> None:
    # 12 -> 3 steps is 75 % fewer (>= 70 %: holds); 1,000 -> 850 replica-s is 15 % (< 20 %)
    claims = seed_claims(_tables({"scale_steps": 3, "replica_seconds": 850.0},
                                 {"scale_steps": 12, "replica_seconds": 1000.0}))
    assert [(c.figure, c.verdict) for c in claims] == [("scale_steps", "holds"),
                                                       ("replica_seconds", "does not hold")]
    assert claims[0].measured_reduction == pytest.approx(0.75)
    assert claims[1].sentence() == (
        "'20-40% reduction in compute costs for bursty workloads' (KEDA Persistent Kafka Lag "
        "Scaler (README)): persistent-lag 850 vs keda 1,000 replica_seconds on bursty, a 15% "
        "reduction against >= 20% claimed: does not hold")


def test_more_than_claimed_still_holds_and_more_used_does_not() -> None:
    claims = seed_claims(_tables({"scale_steps": 0, "replica_seconds": 1300.0},
                                 {"scale_steps": 12, "replica_seconds": 1000.0}))
    assert [c.verdict for c in claims] == ["holds", "does not hold"]
    assert claims[1].measured_reduction == pytest.approx(-0.3)


def test_a_missing_run_or_figure_is_not_measured() -> None:
    claims = seed_claims({"bursty": {"keda": {"scale_steps": 12}}})
    assert [c.verdict for c in claims] == ["not measured"] * len(SEED_CLAIMS)
    assert claims[0].sentence() == ("'70-90% fewer scaling events' (KEDA Persistent Kafka Lag "
                                    "Scaler (README)): not measured")
    assert seed_claims({})[0].to_dict()["verdict"] == "not measured"
