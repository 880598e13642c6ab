"""Planning a share-group run (``--group-type share``): the replica flag, the policy's scaler
kind matched to the group type, and what a share group cannot do, refused before anything
starts."""

from __future__ import annotations

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.plan import describe_plan, plan_run
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.twin.run import plan_of


def test_a_share_run_sets_the_replica_flag_and_its_run_serves_the_share_group_scaler() -> None:
    plan = plan_run(RunSettings(scale="ci", profile="ceiling-ci", policy="scaledobject-share-group-ceiling-ci",
                                group_type="share"))
    policy = plan.build_policy()
    assert (plan.group_type, plan.flag_overrides["--group-type"]) == ("share", "share")
    assert (policy.needs_local_scaler, policy.local_scaler_kind, plan.replica_range) == (True, "share-group", (4, 8))
    assert "in a share group (KIP-932)" in "\n".join(describe_plan(plan))
    assert RunSettings(group_type="share").label().endswith("-share")


@pytest.mark.parametrize(("settings", "message"), [
    pytest.param(dict(policy="scaledobject-share-group-ci"),
                 "is served by the run's own share-group scaler, which reads a share group, and the replicas "
                 "join a consumer group", id="share-scaler-for-a-consumer-group"),
    pytest.param(dict(policy="scaledobject-ci", group_type="share"),
                 "a share group commits none", id="kafka-trigger-for-a-share-group"),
    pytest.param(dict(policy="scaledobject-persistent-lag-ci", group_type="share"),
                 "persistent-lag scaler, which reads a consumer group", id="persistent-lag-for-a-share-group"),
    pytest.param(dict(policy="scaledobject-share-group-ci", group_type="share", static_membership=True),
                 "share groups have no static members", id="static-membership"),
])
def test_what_a_share_group_cannot_do_is_refused_naming_the_fix(settings, message) -> None:
    with pytest.raises(ConfigError) as info:
        plan_run(RunSettings(scale="ci", profile="spike-ci", **settings))
    assert message in str(info.value)


def test_the_twin_refuses_a_share_group_run() -> None:
    plan = plan_run(RunSettings(scale="ci", profile="spike-ci", policy="scaledobject-share-group-ci",
                                group_type="share"))
    with pytest.raises(ConfigError) as info:
        plan_of(plan)
    text = str(info.value)
    assert "--group-type share: the twin models consumer groups only" in text
    assert "served by the share-group scaler, which the twin does not model" in text
