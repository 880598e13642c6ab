"""A run's settings round-trip through its benchmark document unchanged (every run option;
a path given as text comes back as text, as the options give it)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.experiment.settings import RunSettings
from pytest_lagscale.load.profiles import ActionSpec
from pytest_lagscale.options import RUN_OPTIONS
from pytest_lagscale.report.benchjson import (BenchmarkRun, Inputs, build_document, load,
                                              recorded_settings, write_document)

#: Every field away from its default, so a field the document drops fails the test.
EVERY_OPTION = RunSettings(
    profile="fixtures/profiles/x.yaml", scale="full", policy="hpa-cpu", scaled_object="so.yaml",
    deployment="consumer-deployment", platform="kubernetes", kubeconfig="/tmp/kubeconfig", replica_image="r/img:1", node="process",
    kafka="external", kafka_bootstrap="broker:9092",
    kafka_config={"security.protocol": "SASL_SSL"}, lag_threshold=750, balancer="range", group_type="share",
    partitions=12, engine="spark-connect", trigger_interval_s=2.5,
    spark_remote="sc://localhost:15002", graceful=False, static_membership=True,
    out_dir=Path("runs/elsewhere"), name="round-trip", settle_timeout_s=42.0,
    actions=(ActionSpec(30.0, "kill_replica", {"replica": 1}),
             ActionSpec(60.0, "increase_partitions", {"to": 16})),
    lag_source="cloudwatch", cloudwatch_period_s=60.0, cloudwatch_window_s=120.0)


def _written(tmp_path: Path, settings: RunSettings) -> dict:
    inputs = Inputs(profile="x", policy="hpa-cpu", balancer="range", partitions=12, seed=1,
                    scale="full", settings=settings.to_document())
    doc = build_document(BenchmarkRun(inputs=inputs, metrics={}),
                         datetime(2026, 11, 27, tzinfo=timezone.utc))
    return load(write_document(doc, tmp_path, "m"))


def test_every_run_option_is_set_away_from_its_default_here() -> None:
    default = RunSettings()
    same = [o.field for o in RUN_OPTIONS
            if o.field and getattr(EVERY_OPTION, o.field) == getattr(default, o.field)]
    assert same == []


def test_every_run_setting_round_trips_through_a_benchmark_document(tmp_path: Path) -> None:
    doc = _written(tmp_path, EVERY_OPTION)
    assert RunSettings.from_document(recorded_settings(doc)) == EVERY_OPTION


def test_the_defaults_round_trip_too(tmp_path: Path) -> None:
    doc = _written(tmp_path, RunSettings())
    assert RunSettings.from_document(recorded_settings(doc)) == RunSettings()


def test_a_secret_of_kafka_config_is_never_written(tmp_path: Path) -> None:
    settings = RunSettings(kafka_config={"sasl.password": "s3cr3t", "sasl.username": "u"})
    doc = _written(tmp_path, settings)
    assert doc["inputs"]["settings"]["kafka_config"] == {"sasl.password": "***",
                                                         "sasl.username": "u"}
    assert "s3cr3t" not in str(doc)


def test_a_document_from_before_settings_were_recorded_gives_what_it_recorded() -> None:
    doc = {"inputs": {"profile": "spike-ci", "policy": "scaledobject-ci", "balancer": "range",
                      "partitions": 8, "seed": 42, "scale": "ci", "engine": "spark",
                      "trigger_interval_s": None, "static_membership": False},
           "run": {"lag_threshold": 1000, "graceful_drain": False}}
    assert RunSettings.from_document(recorded_settings(doc)) == RunSettings(
        profile="spike-ci", policy="scaledobject-ci", balancer="range", partitions=8,
        engine="spark", lag_threshold=1000, graceful=False)


def test_a_setting_the_document_names_but_runsettings_lacks_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'inputs.settings.speed': not a run setting"):
        RunSettings.from_document({"speed": 3})


def test_from_options_is_the_one_conversion_and_checks_typed_values_without_text() -> None:
    settings = RunSettings.from_options({"lag_thresholds": (500, 900), "partitions": 4,
                                         "lagscale_out": "runs", "kafka_config": [("a", "b")]})
    assert (settings.lag_threshold, settings.partitions, settings.out_dir) == (
        500, 4, Path("runs"))
    with pytest.raises(ConfigError) as info:
        RunSettings(partitions="8", settle_timeout_s=float("nan")).check()
    assert info.value.problems[:2] == [
        "--partitions: '8' is not an integer; allowed: an integer in [1, 1,024] partitions",
        "--settle-timeout: 'nan' is not a number; allowed: seconds in [0, 7200]"]
