"""The lag-per-slot halving policy (the recipe "Kafka Lag Autoscaler"): its rules as named
cases, the lag it reads, its schedule and its cooldown.

Unless a case says otherwise the constants are the recipe's: MIN_PARALLELISM 2,
MAX_PARALLELISM 64, LAG_PER_SLOT 50,000, SCALE_DOWN_LAG 10,000, COOLDOWN 300 s.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from pytest_lagscale.config._objects import ObjectMeta
from pytest_lagscale.config.lag_per_slot import LagPerSlotConfig, load_lag_per_slot
from pytest_lagscale.control.observation import Observation
from pytest_lagscale.control.policy import POLICIES, LagPerSlotPolicy, PolicyStep, ScalingPolicy
from pytest_lagscale.control.policy.lag_per_slot import recipe_proposal, total_lag_records

K8S = Path(__file__).resolve().parents[3] / "k8s"
RECIPE = LagPerSlotConfig("recipe.yaml", ObjectMeta("recipe"))


def lag(records: int, partitions: int = 8) -> dict[int, tuple[int, int]]:
    """Offsets whose total lag is ``records`` (spread over ``partitions``, committed 1,000)."""
    share, rest = divmod(records, partitions)
    return {p: (1000, 1000 + share + (1 if p < rest else 0)) for p in range(partitions)}


@dataclass(frozen=True)
class Case:
    """One evaluation of the rules: inputs, the constants changed, and what the recipe asks."""

    # inputs
    lag: int
    current: int
    # expected
    replicas: int
    reason: str
    target: int | None
    message: str = ""
    # constants (the recipe's unless changed)
    config: LagPerSlotConfig = RECIPE


RULES = [
    # rule 1: lag > LAG_PER_SLOT -> min(ceil(lag / LAG_PER_SLOT), MAX) if more than current
    pytest.param(Case(180_000, 2, 4, "ScaleUp", 4, "total lag 180,000 > lagPerSlot 50,000: "
                      "ceil(lag / lagPerSlot) = 4 > current 2"), id="rule1-scale-up-to-ceil"),
    pytest.param(Case(150_001, 2, 4, "ScaleUp", 4), id="rule1-ceil-rounds-up"),
    pytest.param(Case(150_000, 2, 3, "ScaleUp", 3), id="rule1-exact-multiple"),
    pytest.param(Case(50_001, 1, 2, "ScaleUp", 2), id="rule1-one-record-above-lag-per-slot"),
    pytest.param(Case(150_000, 3, 3, "NoScaleUpAtTarget", 3, "total lag 150,000 > lagPerSlot "
                      "50,000: ceil(lag / lagPerSlot) = 3 <= current 3: no scale-up"),
                 id="rule1-no-scale-up-when-target-equals-current"),
    pytest.param(Case(120_000, 10, 10, "NoScaleUpAtTarget", 3),
                 id="rule1-no-scale-up-when-target-below-current"),
    pytest.param(Case(50_001, 2, 2, "NoScaleUpAtTarget", 2), id="rule1-no-scale-up-at-min"),
    pytest.param(Case(10_000_000, 2, 64, "ScaleUpCappedAtMax", 64, "total lag 10,000,000 > "
                      "lagPerSlot 50,000: ceil(lag / lagPerSlot) = 200, capped at maxParallelism "
                      "64 > current 2"), id="rule1-max-cap"),
    pytest.param(Case(3_200_000, 8, 64, "ScaleUp", 64), id="rule1-ceil-exactly-max-is-not-capped"),
    pytest.param(Case(10_000_000, 64, 64, "NoScaleUpAtTarget", 64), id="rule1-max-cap-at-max-holds"),
    pytest.param(Case(30_000, 4, 8, "ScaleUpCappedAtMax", 8,
                      config=replace(RECIPE, lag_per_slot_records=3_000, scale_down_lag_records=600,
                                     max_parallelism=8)), id="rule1-max-cap-ci-constants"),
    # the band: SCALE_DOWN_LAG <= lag <= LAG_PER_SLOT holds
    pytest.param(Case(50_000, 2, 2, "LagWithinBand", None, "scaleDownLag 10,000 <= total lag "
                      "50,000 <= lagPerSlot 50,000: hold at 2"), id="band-lag-equal-to-lag-per-slot-holds"),
    pytest.param(Case(30_000, 8, 8, "LagWithinBand", None), id="band-between-holds"),
    pytest.param(Case(10_000, 8, 8, "LagWithinBand", None), id="band-lag-equal-to-scale-down-lag-holds"),
    # rule 2: lag < SCALE_DOWN_LAG and current > MIN -> max(current // 2, MIN)
    pytest.param(Case(9_999, 8, 4, "ScaleDownHalved", 4, "total lag 9,999 < scaleDownLag 10,000: "
                      "current 8 // 2 = 4"), id="rule2-halve"),
    pytest.param(Case(0, 9, 4, "ScaleDownHalved", 4), id="rule2-halve-odd-rounds-down"),
    pytest.param(Case(0, 4, 2, "ScaleDownHalved", 2), id="rule2-halve-lands-on-min"),
    pytest.param(Case(0, 3, 2, "ScaleDownToMin", 2, "total lag 0 < scaleDownLag 10,000: current 3 "
                      "// 2 = 1, floored at minParallelism 2"), id="rule2-halving-floor-at-min"),
    pytest.param(Case(0, 9, 5, "ScaleDownToMin", 5, config=replace(RECIPE, min_parallelism=5)),
                 id="rule2-halving-floor-at-a-higher-min"),
    pytest.param(Case(5_000, 2, 2, "AtMinParallelism", None, "total lag 5,000 < scaleDownLag "
                      "10,000 but current 2 <= minParallelism 2: hold"), id="rule2-at-min-holds"),
    # the recipe's order, and what it leaves alone
    pytest.param(Case(60_000, 8, 4, "ScaleDownHalved", 4,
                      config=replace(RECIPE, scale_down_lag_records=100_000)),
                 id="rule1-falls-through-to-rule2-as-the-recipe"),
    pytest.param(Case(10_000_000, 80, 80, "NoScaleUpAtTarget", 64), id="quirk-above-max-holds-until-low-lag"),
    pytest.param(Case(0, 80, 40, "ScaleDownHalved", 40), id="quirk-above-max-halves-on-low-lag"),
    pytest.param(Case(30_000, 1, 1, "LagWithinBand", None), id="quirk-below-min-holds-in-band"),
    pytest.param(Case(0, 1, 1, "AtMinParallelism", None), id="quirk-below-min-holds-on-low-lag"),
]


@pytest.mark.parametrize("case", RULES)
def test_recipe_rules(case: Case) -> None:
    got = recipe_proposal(case.lag, case.current, case.config)
    assert (got.replicas, got.reason, got.target) == (case.replicas, case.reason, case.target)
    if case.message:
        assert got.message == case.message


@pytest.mark.parametrize("case", RULES)
def test_recipe_rules_through_the_policy(case: Case) -> None:
    """The first decision (no cooldown yet) applies the same rule to observed offsets."""
    decision = LagPerSlotPolicy(case.config).decide(Observation(case.current, lag(case.lag)), 0.0)
    (step,) = decision.steps
    assert (step.replicas_before, step.replicas_after, step.reason, step.total_lag_records,
            step.target_replicas) == (case.current, case.replicas, case.reason, case.lag, case.target)
    assert decision.desired_replicas == (case.replicas if case.replicas != case.current else None)
    assert decision.reason == case.reason


@pytest.mark.parametrize(("offsets", "total"), [
    pytest.param({0: (10, 110), 1: (0, 50)}, 150, id="log-end-minus-committed-summed"),
    pytest.param({0: (-1, 500), 1: (100, 100)}, 500, id="no-commit-counts-the-whole-log-as-earliest"),
    pytest.param({0: (5, None), 1: (-1, None), 2: (0, 7)}, 7, id="log-end-missing-counts-0"),
    pytest.param({}, 0, id="no-partitions"),
])
def test_total_lag_reads_offsets_as_keda_with_earliest(offsets: dict, total: int) -> None:
    assert total_lag_records(offsets) == total


def test_policy_implements_the_protocol_and_is_registered() -> None:
    policy = POLICIES["LagPerSlotPolicy"](load_lag_per_slot(K8S / "lag-per-slot-ci.yaml"), created_at_s=3.0)
    assert isinstance(policy, LagPerSlotPolicy) and isinstance(policy, ScalingPolicy)
    assert isinstance(policy.decide(Observation(2, lag(0)), 0.0).steps[0], PolicyStep)


@pytest.mark.parametrize(("name", "facts"), [
    pytest.param("lag-per-slot.yaml", (2, 64, 50_000, 15.0, 300.0), id="full"),
    pytest.param("lag-per-slot-ci.yaml", (2, 8, 3_333, 2.0, 30.0), id="ci"),
])
def test_policy_facts_for_the_runner(name: str, facts: tuple) -> None:
    policy = LagPerSlotPolicy.from_config(load_lag_per_slot(K8S / name))
    assert (policy.name, policy.metrics_name, policy.needs_lag, policy.needs_cpu,
            policy.first_decision_within_s, policy.manifest_name) == (
        "lag-per-slot", "lagscale-consumer-lag-per-slot", True, False, 0.0, name[:-5])
    assert (policy.min_replicas, policy.max_replicas, policy.lag_threshold_records,
            policy.polling_interval_s, policy.cooldown_s) == facts


def test_due_is_the_polling_schedule_and_decide_runs_only_when_due() -> None:
    policy = LagPerSlotPolicy(replace(RECIPE, polling_interval_s=15))
    assert policy.due(-100.0)  # before the first decide
    assert [s.now_s for s in policy.decide(Observation(2, lag(0)), 0.0).steps] == [0.0]
    assert [policy.due(t) for t in (0.0, 14.9, 15.0, 40.0)] == [False, False, True, True]
    not_due = policy.decide(Observation(2, lag(10**6)), 14.9)
    assert (not_due.steps, not_due.desired_replicas, not_due.reason) == ((), None, "NotDue")
    assert policy.decide(Observation(2, lag(10**6)), 15.0).desired_replicas == 20
    assert (policy.due(29.9), policy.due(30.0)) == (False, True)


def run(policy: LagPerSlotPolicy, script: list[tuple[float, int]], replicas: int) -> list:
    """Decide at each ``(now_s, total lag)``, feeding back the replicas each decision set."""
    steps = []
    for now_s, total in script:
        decision = policy.decide(Observation(replicas, lag(total)), now_s)
        replicas = decision.desired_replicas or replicas
        steps.extend(decision.steps)
    return steps


def test_cooldown_blocks_an_operation_inside_it_and_allows_it_after() -> None:
    """Scale up at 0 s; low lag at 30..270 s is held (CoolingDown); at 300 s the halving runs."""
    policy = LagPerSlotPolicy(replace(RECIPE, polling_interval_s=30))
    steps = run(policy, [(0.0, 400_000), *((t, 0) for t in range(30, 301, 30))], replicas=2)
    assert [(s.now_s, s.replicas_after, s.reason) for s in steps] == [
        (0.0, 8, "ScaleUp"), *((float(t), 8, "CoolingDown") for t in range(30, 300, 30)),
        (300.0, 4, "ScaleDownHalved")]
    assert steps[-2].message == ("ScaleDownHalved to 4 blocked: 30.0 s left of cooldownSeconds 300 "
                                 "after the operation at 0.0 s")
    assert (steps[-2].target_replicas, steps[-2].cooldown_until_s, steps[-1].cooldown_until_s) == (
        4, 300.0, 600.0)
    assert policy.last_operation_s == 300.0


def test_cooldown_blocks_a_second_scale_up_and_counts_from_the_last_operation() -> None:
    """Holds and blocked evaluations do not restart the cooldown; only operations do."""
    policy = LagPerSlotPolicy(replace(RECIPE, polling_interval_s=1))
    steps = run(policy, [(0.0, 120_000), (100.0, 30_000), (299.0, 900_000), (300.0, 900_000),
                         (301.0, 2_000_000), (600.0, 2_000_000)], replicas=2)
    assert [(s.now_s, s.replicas_after, s.reason) for s in steps] == [
        (0.0, 3, "ScaleUp"), (100.0, 3, "LagWithinBand"), (299.0, 3, "CoolingDown"),
        (300.0, 18, "ScaleUp"), (301.0, 18, "CoolingDown"), (600.0, 40, "ScaleUp")]


def test_zero_cooldown_allows_consecutive_operations() -> None:
    policy = LagPerSlotPolicy(replace(RECIPE, cooldown_s=0, polling_interval_s=1))
    steps = run(policy, [(0.0, 400_000), (1.0, 0), (2.0, 0), (3.0, 0)], replicas=2)
    assert [s.replicas_after for s in steps] == [8, 4, 2, 2]


def test_unreadable_lag_holds_and_is_not_an_operation() -> None:
    policy = LagPerSlotPolicy(replace(RECIPE, polling_interval_s=1))
    decision = policy.decide(Observation(6, None), 0.0)
    (step,) = decision.steps
    assert (decision.desired_replicas, step.replicas_after, step.reason, step.message,
            step.total_lag_records) == (None, 6, "LagUnavailable", "consumer lag could not be read: hold at 6",
                                        None)
    assert policy.last_operation_s is None
    assert policy.decide(Observation(6, lag(0)), 1.0).desired_replicas == 3


def test_step_is_an_event_record() -> None:
    """The runner writes ``dataclasses.asdict(step)`` under ``event`` (JSON, no class constants)."""
    step = LagPerSlotPolicy(RECIPE).decide(Observation(2, lag(180_000)), 5.0).steps[0]
    record = dataclasses.asdict(step)
    assert record == {"now_s": 5.0, "total_lag_records": 180_000, "target_replicas": 4,
                      "replicas_before": 2, "replicas_after": 4, "reason": "ScaleUp",
                      "message": "total lag 180,000 > lagPerSlot 50,000: ceil(lag / lagPerSlot) = 4 "
                                 "> current 2", "cooldown_until_s": 305.0, "event": "lag_per_slot"}
    assert step.sets_desired_replicas and json.loads(json.dumps(record)) == record


def test_a_lag_step_scales_out_and_halves_back_with_the_ci_manifest() -> None:
    """lag-per-slot-ci.yaml (lagPerSlot 3,333, scaleDownLag 667, 2..8, cooldown 30 s, poll 2 s)
    on a spike-ci-like lag: one step to 3, the cap 8 once the cooldown allows, then halves."""
    policy = LagPerSlotPolicy.from_config(load_lag_per_slot(K8S / "lag-per-slot-ci.yaml"))
    script = [(0.0, 300), (2.0, 7_000), (4.0, 11_000), (30.0, 40_000), (32.0, 45_000),
              (60.0, 20_000), (90.0, 400), (100.0, 300), (120.0, 200), (150.0, 100)]
    steps = run(policy, script, replicas=2)
    assert [(s.now_s, s.replicas_after, s.reason) for s in steps] == [
        (0.0, 2, "AtMinParallelism"), (2.0, 3, "ScaleUp"), (4.0, 3, "CoolingDown"),
        (30.0, 3, "CoolingDown"), (32.0, 8, "ScaleUpCappedAtMax"), (60.0, 8, "NoScaleUpAtTarget"),
        (90.0, 4, "ScaleDownHalved"), (100.0, 4, "CoolingDown"), (120.0, 2, "ScaleDownHalved"),
        (150.0, 2, "AtMinParallelism")]
