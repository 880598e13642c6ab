"""``--static-membership``: the run option reaches the replicas' flags (an instance id per slot,
expanded by the platform, and a session timeout that outlives a restart) and the run's label."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.experiment.plan import plan_run, static_membership_flags
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.options import OPTIONS_BY_DEST
from pytest_lagscale.platform.local import template_from_deployment

SPIKE_CI = Path("fixtures/profiles/spike-ci.yaml")


def test_static_membership_is_off_by_default() -> None:
    assert RunSettings().static_membership is False
    assert OPTIONS_BY_DEST["static_membership"].default is False
    assert "--instance-id" not in plan_run(RunSettings(SPIKE_CI)).flag_overrides


def test_static_membership_gives_each_replica_its_slot_name_and_a_45_s_session() -> None:
    plan = plan_run(RunSettings.from_options({"static_membership": True}, profile=SPIKE_CI,
                                          engine="arrow"))
    assert plan.flag_overrides == {"--engine": "arrow", "--instance-id": "$(POD_NAME)",
                                   "--session-timeout": "45"}
    assert plan.settings.label() == "spike-ci-arrow-static"
    template = template_from_deployment(plan.deployment, "127.0.0.1:9092",
                                        flag_overrides=plan.flag_overrides)
    assert "--instance-id=$(POD_NAME)" in template.argv  # the platform expands it per slot
    assert "--session-timeout=45" in template.argv


@pytest.mark.parametrize(("balancer", "flags", "expected"), [
    pytest.param("cooperative-sticky", {}, {"--instance-id": "$(POD_NAME)",
                                            "--session-timeout": "45"}, id="classic"),
    pytest.param("range", {"--session-timeout": "60"},
                 {"--instance-id": "$(POD_NAME)", "--session-timeout": "60"},
                 id="classic-longer-kept"),
    pytest.param("consumer", {}, {"--instance-id": "$(POD_NAME)"},
                 id="kip848-timeout-is-a-broker-setting"),
])
def test_static_membership_flags(balancer: str, flags: dict[str, str],
                                 expected: dict[str, str]) -> None:
    assert static_membership_flags(balancer, flags) == expected


def test_kip848_static_members_get_no_session_timeout_flag() -> None:
    plan = plan_run(RunSettings(SPIKE_CI, balancer="consumer", static_membership=True))
    assert plan.flag_overrides == {"--balancer": "consumer", "--instance-id": "$(POD_NAME)"}
