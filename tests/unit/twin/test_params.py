"""Calibration files -> TwinParams: the bundled files load; every bad value is reported with
its key, value and allowed range."""

from __future__ import annotations

import copy

import pytest

from pytest_lagscale.config._read import load_yaml
from pytest_lagscale.config.bundled import manifest_paths
from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.twin.params import (
    calibration_path,
    load_calibration,
    machine_calibrations,
    parse_calibration,
    twin_params,
)


@pytest.mark.parametrize("engine", ["spark", "arrow"], ids=["spark", "arrow"])
def test_bundled_calibrations_load_and_name_their_runs(engine: str) -> None:
    values = load_calibration(calibration_path(engine))
    assert values["engine"] == engine
    assert values["source_runs"] and all(r.startswith("2026112") for r in
                                         values["source_runs"])
    assert values["machine"]["cores"] == 2


def test_a_machine_images_calibration_is_picked_by_its_release() -> None:
    """Each bundled per-image calibration sits in the folder of the kernel release its runs
    recorded; a release without one, or none, gets the engine's default file."""
    machines = machine_calibrations("spark")
    assert machines, "no per-image spark calibration is bundled"
    for release, path in machines.items():
        assert calibration_path("spark", release) == path
        assert load_calibration(path)["machine"]["release"] == release
    default = calibration_path("spark")
    assert default.name == "spark.yaml" and default not in machines.values()
    assert calibration_path("spark", "6.1.0-unknown") == default
    assert calibration_path("arrow", next(iter(machines))) == calibration_path("arrow")


def test_deployment_fills_the_processing_parameters() -> None:
    deployment = load_deployment(manifest_paths("ci")["deployment"])
    params = twin_params(deployment)
    # consumer-deployment-ci.yaml: --process-ms=25 --inflight=10 --trigger-interval=1
    assert (params.per_record_ms, params.max_batch_records, params.trigger_interval_s,
            params.probe_period_s, params.protocol) == (2.5, 2000, 1.0, 2.0, "cooperative")
    # 2000 records per (engine time alone) + 2000 x 2.5 ms
    assert params.capacity_per_s == pytest.approx(2000 / (params.per_batch_engine_s + 5.0))
    assert twin_params(deployment, balancer="range").protocol == "eager"
    assert twin_params(deployment, engine="arrow").per_batch_engine_s == 0.025


def _doc() -> dict:
    return copy.deepcopy(load_yaml(calibration_path("spark")))


def test_bad_values_are_reported_together_with_key_value_and_range() -> None:
    doc = _doc()
    doc["cold_start"]["cores"] = 0
    doc["group"]["round_s"]["eager"] = -1
    doc["processing"]["per_batch_engine_s"] = "fast"
    with pytest.raises(ConfigError) as info:
        parse_calibration(doc, source="cal.yaml")
    assert info.value.problems == [
        "'processing.per_batch_engine_s': got 'fast', expected a number in [0, 60] s in "
        "cal.yaml; set 'processing.per_batch_engine_s' within the range",
        "'cold_start.cores': got 0, expected a number in (0, 1024] cores in cal.yaml; set "
        "'cold_start.cores' within the range",
        "'group.round_s.eager': got -1, expected a number in [0, 60] s in cal.yaml; set "
        "'group.round_s.eager' within the range",
    ]


def test_unknown_keys_missing_runs_and_wrong_version_are_errors() -> None:
    doc = _doc()
    doc["schema_version"] = 2
    doc["source_runs"] = []
    doc["cold_start"]["alone"] = doc["cold_start"].pop("alone_s")
    alone = doc["cold_start"]["alone"]
    with pytest.raises(ConfigError) as info:
        parse_calibration(doc, source="cal.yaml")
    assert info.value.problems == [
        "'schema_version': got 2, expected 1 in cal.yaml; write 'schema_version: 1' (the only "
        "version this twin reads)",
        "'source_runs': got [], expected a non-empty list of run directory names in cal.yaml; "
        "list the runs the numbers came from",
        f"'cold_start.alone': got {alone!r}, expected a known key of 'cold_start' in cal.yaml; "
        "rename it to 'cold_start.alone_s'",
        "'cold_start.alone_s': got no value, expected a number in [0, 600] s in cal.yaml; add "
        "'cold_start.alone_s'",
    ]


def test_an_engine_without_calibration_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        calibration_path("spark-connect")
    assert info.value.problems == [
        "--engine: got 'spark-connect', expected one of spark, arrow (the engines the twin has "
        "a calibration for); pick one of them"]


def test_run_to_run_is_read_and_checked() -> None:
    doc = _doc()
    doc["run_to_run"] = {"cold_start_sd": 0.2, "engine_sd": 0.3, "engine_on_cold_start": 0.8}
    values = parse_calibration(doc, source="cal.yaml")
    assert (values["run_cold_start_sd"], values["run_engine_sd"],
            values["run_engine_on_cold_start"]) == (0.2, 0.3, 0.8)
    doc["run_to_run"] = {"cold_start_sd": -0.1, "speed": 1}
    with pytest.raises(ConfigError) as info:
        parse_calibration(doc, source="cal.yaml")
    text = "\n".join(info.value.problems)
    assert "'run_to_run.cold_start_sd': got -0.1, expected a number in [0, 2]" in text
    assert "run_to_run.speed" in text


def test_machine_draw_scales_start_up_and_engine_by_one_factor_per_draw() -> None:
    """Without run_to_run nothing changes (and no number is drawn); with it each draw has its
    own machine; a known factor fixes the start-up and moves the engine by the slope."""
    import math
    from dataclasses import replace

    import numpy as np

    from pytest_lagscale.twin.params import machine_draw

    base = replace(twin_params(load_deployment(manifest_paths("ci")["deployment"])),
                   run_cold_start_sd=0.0, run_engine_sd=0.0, run_engine_on_cold_start=0.0)
    rng = np.random.default_rng(0)
    assert machine_draw(base, rng) is base
    assert rng.bit_generator.state == np.random.default_rng(0).bit_generator.state
    varied = replace(base, run_cold_start_sd=0.2, run_engine_sd=0.3, run_engine_on_cold_start=1.0)
    draws = [machine_draw(varied, np.random.default_rng(i)) for i in range(400)]
    c = np.log([d.cold_start_alone_s / base.cold_start_alone_s for d in draws])
    e = np.log([d.per_batch_engine_s / base.per_batch_engine_s for d in draws])
    assert np.std(c) == pytest.approx(0.2, rel=0.15)
    assert np.std(e) == pytest.approx(0.3, rel=0.15)
    assert np.polyfit(c, e, 1)[0] == pytest.approx(1.0, rel=0.2)
    assert all(not d.varies_by_run for d in draws)
    known = machine_draw(replace(varied, run_engine_sd=0.2, machine_log_factor=math.log(2.0)),
                         np.random.default_rng(1))
    assert known.cold_start_alone_s == pytest.approx(2.0 * base.cold_start_alone_s)
    assert known.per_batch_engine_s == pytest.approx(2.0 * base.per_batch_engine_s)
    assert known.engine_s_per_member == pytest.approx(2.0 * base.engine_s_per_member)


def test_a_measured_machine_factor_is_drawn_from_its_posterior() -> None:
    """A probe m with measurement sd s under the run-to-run prior N(0, sd^2): each draw's
    factor ~ N(k m, k s^2), k = sd^2 / (sd^2 + s^2) (equal sds: half-way, sd s / sqrt 2); an
    exact one (s = 0) is m in every draw."""
    import math
    from dataclasses import replace

    import numpy as np

    from pytest_lagscale.twin.params import machine_draw

    base = replace(twin_params(load_deployment(manifest_paths("ci")["deployment"])),
                   run_cold_start_sd=0.16, run_engine_sd=0.0, run_engine_on_cold_start=0.0)
    probed = replace(base, machine_log_factor=0.4, machine_log_factor_sd=0.16)
    assert probed.machine_log_factor_mean == pytest.approx(0.2)
    c = np.log([machine_draw(probed, np.random.default_rng(i)).cold_start_alone_s
                / base.cold_start_alone_s for i in range(1000)])
    assert np.mean(c) == pytest.approx(0.2, abs=0.01)
    assert np.std(c) == pytest.approx(0.16 / math.sqrt(2), rel=0.1)
    exact = replace(probed, machine_log_factor_sd=0.0)
    assert exact.machine_log_factor_mean == 0.4
    assert machine_draw(exact, np.random.default_rng(0)).cold_start_alone_s == \
        pytest.approx(math.exp(0.4) * base.cold_start_alone_s)


def test_the_warm_up_and_the_probe_error_are_read_and_checked() -> None:
    doc = _doc()
    doc["processing"] = {**doc["processing"], "warmup_extra": 1.05, "warmup_batches": 2.0}
    doc["run_to_run"] = {"cold_start_sd": 0.16, "probe_sd": 0.16}
    values = parse_calibration(doc, source="cal.yaml")
    assert (values["engine_warmup_extra"], values["engine_warmup_batches"],
            values["run_probe_sd"]) == (1.05, 2.0, 0.16)
    del doc["processing"]["warmup_batches"], doc["processing"]["warmup_extra"]
    assert parse_calibration(doc, source="cal.yaml")["engine_warmup_extra"] == 0.0
    doc["processing"]["warmup_batches"] = 0
    doc["run_to_run"]["probe_sd"] = 3
    with pytest.raises(ConfigError) as info:
        parse_calibration(doc, source="cal.yaml")
    text = "\n".join(info.value.problems)
    assert "'processing.warmup_batches': got 0, expected a number in (0, 1000] batches" in text
    assert "'run_to_run.probe_sd': got 3, expected a number in [0, 2]" in text


def test_the_starting_delay_is_read_and_checked() -> None:
    doc = _doc()
    assert parse_calibration(doc, source="cal.yaml")["engine_starting_delay_s"] == 3.5
    del doc["processing"]["starting_delay_s"]
    assert parse_calibration(doc, source="cal.yaml")["engine_starting_delay_s"] == 0.0
    doc["processing"]["starting_delay_s"] = -1
    with pytest.raises(ConfigError) as info:
        parse_calibration(doc, source="cal.yaml")
    assert ("'processing.starting_delay_s': got -1, expected a number in [0, 600] s"
            in "\n".join(info.value.problems))


def test_the_controller_section_is_read_and_checked() -> None:
    doc = _doc()
    doc.pop("controller", None)
    assert parse_calibration(doc, source="cal.yaml").get("controller_lead_extra_s") is None
    doc["controller"] = {"lead_extra_min_s": 0.13, "lead_extra_max_s": 0.58, "slip_s": 0.014,
                         "slip_s_per_starting": 0.021, "slip_s_per_member": 0.009}
    values = parse_calibration(doc, source="cal.yaml")
    assert values["controller_lead_extra_s"] == (0.13, 0.58)
    assert (values["controller_slip_s"], values["controller_slip_s_per_starting"],
            values["controller_slip_s_per_member"]) == (0.014, 0.021, 0.009)
    doc["controller"] = {"lead_extra_min_s": 0.5, "lead_extra_max_s": 0.2, "slip_s": -1,
                         "lag": 1}
    with pytest.raises(ConfigError) as info:
        parse_calibration(doc, source="cal.yaml")
    text = "\n".join(info.value.problems)
    assert "'controller.lead_extra_max_s': got 0.2, expected a number >= lead_extra_min_s " \
           "(0.5)" in text
    assert "'controller.slip_s': got -1, expected a number in [0, 10] s" in text
    assert "controller.lag" in text
