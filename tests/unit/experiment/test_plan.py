"""RunSettings checks and the run plan: files read, overrides applied, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.errors import ConfigError
from pytest_lagscale.experiment.plan import plan_run, profile_spike_window, with_lag_threshold
from pytest_lagscale.experiment.progress import RunProgress, Snapshot
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.config.scaledobject import load_scaled_object

SPIKE_CI = Path("fixtures/profiles/spike-ci.yaml")


def test_ci_plan_uses_the_ci_manifests_and_the_profile_spike() -> None:
    plan = plan_run(RunSettings(SPIKE_CI))
    assert plan.policy_name == "scaledobject-ci"
    assert Path(plan.deployment.source).name == "consumer-deployment-ci.yaml"
    assert (plan.lag_threshold, plan.min_replicas, plan.max_replicas) == (500, 1, 8)
    assert (plan.engine, plan.balancer, plan.capacity_per_s) == ("arrow", "cooperative-sticky",
                                                                 400.0)
    assert plan.spike == (60.0, 150.0)
    assert plan.flag_overrides == {}


def test_overrides_reach_the_policy_profile_and_replica_flags() -> None:
    plan = plan_run(RunSettings(Path("fixtures/profiles/spike.yaml"), scale="full",
                                lag_threshold=2500, partitions=48, balancer="range",
                                engine="arrow"))
    assert plan.lag_threshold == 2500
    assert [t.kafka.lag_threshold for t in plan.scaled_object.triggers if t.kafka] == [2500]
    assert plan.profile.partitions == 48
    assert plan.flag_overrides == {"--balancer": "range", "--engine": "arrow"}
    assert plan.capacity_per_s == 1600.0


def test_with_lag_threshold_needs_a_kafka_trigger() -> None:
    config = load_scaled_object("k8s/scaledobject-ci.yaml")
    cpu_only = config.__class__(**{**config.__dict__, "triggers": tuple(
        t for t in config.triggers if t.kafka is None)})
    with pytest.raises(ConfigError, match="--lag-threshold: .* has no kafka trigger"):
        with_lag_threshold(cpu_only, 10)


def test_every_bad_setting_is_reported_at_once() -> None:
    settings = RunSettings(Path("missing.yaml"), scale="huge", lag_threshold=0, partitions=2000,
                           balancer="sticky", kafka="external", settle_timeout_s=-1)
    with pytest.raises(ConfigError) as info:
        settings.check()
    assert info.value.problems == [
        "--profile: 'missing.yaml' is not a readable file; give the path of a committed YAML "
        "file",
        "--lagscale-scale: got 'huge'; allowed: ci, full",
        "--balancer: got 'sticky'; allowed: cooperative-sticky, range, roundrobin, consumer",
        "--lag-threshold: got 0; allowed: an integer in [1, 10000000]",
        "--partitions: got 2000; allowed: an integer in [1, 1024]",
        "--settle-timeout: got -1; allowed: seconds in [0, 7200]",
        "--kafka=external needs --kafka-bootstrap HOST:PORT",
    ]


def test_label_names_what_differs_from_the_defaults() -> None:
    assert RunSettings(SPIKE_CI).label() == "spike-ci"
    assert RunSettings(SPIKE_CI, lag_threshold=1000, balancer="range", partitions=16,
                       graceful=False).label() == "spike-ci-lt1000-range-p16-sigkill"


def test_spike_window_of_a_profile_without_spike_is_none() -> None:
    plan = plan_run(RunSettings(Path("fixtures/profiles/bursty-ci.yaml")))
    assert profile_spike_window(plan.profile) is None


def test_progress_prints_plain_lines_on_phase_changes_off_a_terminal() -> None:
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    with RunProgress(Console(file=out, force_terminal=False, width=120), every_s=3600) as p:
        p.update(phase="load", total_s=240, elapsed_s=0, lag_records=1200,
                 desired_replicas=3, ready_replicas=2)
        p.update(elapsed_s=5)  # same phase, within every_s: no line
        p.update(phase="settling", elapsed_s=240)
    lines = out.getvalue().splitlines()
    assert lines == [f"lagscale: {Snapshot('load', 0, 240, 1200, 3, 2).line()}",
                     f"lagscale: {Snapshot('settling', 240, 240, 1200, 3, 2).line()}"]
    assert "lag      1,200" in lines[0] and "3 desired / 2 ready" in lines[0]
