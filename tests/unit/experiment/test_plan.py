"""RunSettings checks and the run plan: files read, overrides applied, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.config.policy import with_lag_threshold
from pytest_lagscale.config.scaledobject import load_scaled_object
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.plan import plan_run, profile_spike_window
from pytest_lagscale.experiment.progress import RunProgress, Snapshot
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.load.profiles import ActionSpec

SPIKE_CI = Path("fixtures/profiles/spike-ci.yaml")


def test_ci_plan_uses_the_ci_manifests_and_the_profile_spike() -> None:
    plan = plan_run(RunSettings(SPIKE_CI))
    assert plan.policy_name == "scaledobject-ci"
    assert Path(plan.deployment.source).name == "consumer-deployment-ci.yaml"
    assert (plan.lag_threshold, plan.min_replicas, plan.max_replicas) == (500, 1, 8)
    # Spark in every run (docs/replica.md, "Spark footprint"): the ci Deployment's replicas run a local SparkSession.
    assert (plan.engine, plan.balancer, plan.capacity_per_s) == ("spark", "cooperative-sticky",
                                                                 400.0)
    assert plan.spike == (60.0, 150.0)
    assert plan.flag_overrides == {}


def test_overrides_reach_the_policy_profile_and_replica_flags() -> None:
    plan = plan_run(RunSettings(Path("fixtures/profiles/spike.yaml"), scale="full",
                                lag_threshold=2500, partitions=48, balancer="range",
                                engine="arrow", trigger_interval_s=1.5))
    assert plan.lag_threshold == 2500
    assert [t.metadata["lagThreshold"] for t in plan.policy_config.triggers
            if t.type == "kafka"] == ["2500"]
    assert plan.profile.partitions == 48
    assert plan.flag_overrides == {"--balancer": "range", "--engine": "arrow",
                                   "--trigger-interval": "1.5"}
    assert plan.trigger_interval_s == 1.5
    assert plan.capacity_per_s == 1600.0


def test_with_lag_threshold_needs_a_kafka_trigger() -> None:
    config = load_scaled_object("k8s/scaledobject-ci.yaml")
    cpu_only = config.__class__(**{**config.__dict__, "triggers": tuple(
        t for t in config.triggers if t.type != "kafka")})
    with pytest.raises(ConfigError, match="--lag-threshold: .* has no kafka trigger"):
        with_lag_threshold(cpu_only, 10)


def test_every_bad_setting_is_reported_at_once() -> None:
    """Each value is checked by its run option's own parser (one definition, one message)."""
    settings = RunSettings(Path("missing.yaml"), scale="huge", lag_threshold=0, partitions=2000,
                           balancer="sticky", kafka="external", settle_timeout_s=-1)
    with pytest.raises(ConfigError) as info:
        settings.check()
    assert info.value.problems[:6] == [
        "--lag-threshold: 0 is out of range; allowed: integers in [1, 10,000,000] records, "
        "comma-separated for a sweep (e.g. 1000,10000,100000)",
        "--balancer: 'sticky' is not allowed; allowed: cooperative-sticky, range, roundrobin, "
        "consumer",
        "--partitions: 2000 is out of range; allowed: an integer in [1, 1,024] partitions",
        "--lagscale-scale: 'huge' is not allowed; allowed: ci, full",
        "--settle-timeout: -1.0 is out of range; allowed: seconds in [0, 7200]",
        "--kafka=external needs --kafka-bootstrap HOST:PORT; add it or use --kafka=embedded",
    ]
    assert info.value.problems[6:] == [
        "'--profile': got 'missing.yaml', expected an existing profile YAML file or a bundled "
        "profile name (bursty, bursty-ci, ceiling, ceiling-ci, partitions, partitions-ci, rebalance, "
        "rebalance-ci, spike, "
        "spike-ci, spike-demo) in the "
        "command line; "
        "pass a path to a profile file or one of the bundled names"]


def test_a_cpu_hpa_and_a_cpu_only_scaledobject_are_runnable_policies() -> None:
    """Experiment 1's policies: no lag trigger, so the analysis holds lag to the scale's
    committed ScaledObject's lagThreshold."""
    plan = plan_run(RunSettings(SPIKE_CI, policy="hpa-cpu-ci"))
    assert (plan.policy_kind, plan.lag_threshold, plan.reference_lag_threshold) == \
        ("hpa", None, 500)
    assert plan.policy_name == "hpa-cpu-ci"
    assert plan.build_policy().needs_cpu and not plan.build_policy().needs_lag


def test_scheduled_actions_are_planned_from_the_profile_and_the_settings() -> None:
    plan = plan_run(RunSettings(SPIKE_CI, actions=(
        ActionSpec(100, "increase_partitions", {"to": 16}),
        ActionSpec(30, "kill_replica", {"replica": "oldest", "signal": "SIGTERM"}))))
    assert [(a.at_s, a.action.label()) for a in plan.actions] == [
        (30, "kill_replica oldest SIGTERM"), (100, "increase_partitions to=16")]
    assert plan.max_partitions == 16
    with pytest.raises(ConfigError, match=r"actions\[0\].to: 4 is not allowed"):
        plan_run(RunSettings(SPIKE_CI, actions=(ActionSpec(5, "increase_partitions", {"to": 4}),)))


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


@pytest.mark.parametrize("value", [-1.0, 301.0])
def test_a_trigger_interval_outside_the_replica_flag_range_is_refused_naming_it(value) -> None:
    with pytest.raises(ConfigError) as err:
        plan_run(RunSettings(SPIKE_CI, trigger_interval_s=value))
    assert "--trigger-interval" in str(err.value) and "0..300" in str(err.value)


def test_the_run_title_names_the_engine_and_trigger() -> None:
    from pytest_lagscale.experiment.result import run_title
    from pytest_lagscale.report.benchjson import Inputs

    inputs = Inputs("spike-ci", "scaledobject-ci", "range", 8, 1, "ci", engine="spark",
                    trigger_interval_s=2.0)
    assert run_title("spike-ci", inputs) == "spike-ci · engine spark, trigger 2 s"
    remote = Inputs("spike-ci", "p", "range", 8, 1, "ci", engine="spark-connect",
                    spark_remote="sc://host:15002")
    assert run_title("x", remote) == "x · engine spark-connect, remote sc://host:15002"


def test_spark_remote_needs_the_spark_connect_engine() -> None:
    with pytest.raises(ConfigError, match="--spark-remote.*only for --engine spark-connect"):
        plan_run(RunSettings(SPIKE_CI, engine="spark", spark_remote="sc://127.0.0.1:15002"))
    plan = plan_run(RunSettings(SPIKE_CI, engine="spark-connect",
                                spark_remote="sc://127.0.0.1:15002"))
    assert plan.spark_remote == "sc://127.0.0.1:15002"
    assert plan.flag_overrides["--spark-remote"] == "sc://127.0.0.1:15002"
    # Without a URL the run starts its own server (the runner's ``spark`` phase).
    assert plan_run(RunSettings(SPIKE_CI, engine="spark-connect")).spark_remote is None


@pytest.mark.parametrize("url,recorded", [
    ("sc://127.0.0.1:15002", "sc://127.0.0.1:15002"),
    ("sc://bob:pw@spark:15002/;token=abc;user_id=bob", "sc://spark:15002/;user_id=bob"),
    ("sc://spark:15002/;use_ssl=true;Token=x;password=y", "sc://spark:15002/;use_ssl=true"),
    (None, None),
])
def test_the_recorded_spark_remote_carries_no_credentials(url, recorded) -> None:
    from pytest_lagscale.experiment.analysis import redact_remote

    assert redact_remote(url) == recorded


def test_persistent_lag_plan_checks_the_run_scalers_metadata_up_front(tmp_path: Path) -> None:
    plan = plan_run(RunSettings(SPIKE_CI, policy="scaledobject-persistent-lag-ci"))
    assert (plan.policy_name, plan.lag_threshold, plan.policy_kind) == ("scaledobject-persistent-lag-ci", 500,
                                                                        "keda-hpa")
    assert plan.build_policy().needs_local_scaler
    bad = tmp_path / "so.yaml"
    bad.write_text(Path("k8s/scaledobject-persistent-lag-ci.yaml").read_text().replace(
        'windowSize: "16"', 'windowSize: "4"'))
    with pytest.raises(ConfigError) as info:
        plan_run(RunSettings(SPIKE_CI, policy=str(bad)))
    assert info.value.problems == [
        f"'sustainSeconds': got '15', expected at most (windowSize - 1) x samplingInterval = 6 s (the window must "
        f"span it) in {bad} spec.triggers[0].metadata; raise windowSize or samplingInterval, or lower sustainSeconds"]
