"""calibration/fidelity.py: the KS statistic, the event spans, the figure checks, the targets, and a
committed golden run predicted end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.calibration.fidelity import (
    SPANS,
    Fidelity,
    FigureCheck,
    Unsupported,
    assess,
    figure_check,
    ks_statistic,
    plan_for,
    predict_run,
    spans,
)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"


def test_ks_statistic_is_the_largest_cdf_gap() -> None:
    assert ks_statistic([1, 2, 3], [1, 2, 3]) == 0.0
    assert ks_statistic([1, 2], [5, 6]) == 1.0
    # F_a jumps to 0.5 at 1, F_b is still 0 until 2: gap 0.5
    assert ks_statistic([1, 3], [2, 4]) == 0.5
    assert ks_statistic([], [1]) is None


def test_spans_from_events() -> None:
    records = [(0.0, "replica_started", "a", {}), (9.0, "replica_ready", "a", {}),
               (8.0, "assigned", "a", {"partitions": []}),
               (8.5, "assigned", "a", {"partitions": [0, 1]}),
               (20.0, "revoked", "a", {"partitions": [1]}),
               (20.8, "assigned", "b", {"partitions": [1]}),
               (21.0, "assigned", "a", {"partitions": [2]})]
    got = spans(reversed(records))  # any order
    assert got == {"cold_start_s": [9.0], "started_to_assigned_s": [8.5],
                   "revoke_to_assigned_s": [pytest.approx(0.8)]}
    assert set(got) == set(SPANS)


def test_figure_check_errors_and_band() -> None:
    dist = {"median": 110.0, "p5": 100.0, "p95": 120.0}
    check = figure_check("drain_time_s", 100.0, dist)
    assert (check.error, check.in_band) == (pytest.approx(0.1), True)
    assert figure_check("drain_time_s", 99.0, dist).in_band is False
    steps = figure_check("scale_steps", 6.0, {"median": 9.0, "p5": 6.0, "p95": 12.0})
    assert steps.error == 3.0
    missing = figure_check("reaction_time_s", None, dist)
    assert (missing.error, missing.in_band) == (None, None)
    assert figure_check("reaction_time_s", 20.0, {"median": None}).error is None


def _fidelity(label: str, **errors: float) -> Fidelity:
    figures = tuple(FigureCheck(name, 100.0, 100.0 * (1 + e), 90.0, 110.0, e,
                                abs(e) <= 0.1) for name, e in errors.items())
    return Fidelity(run=label, label=label, draws=3, seconds=0.1, figures=figures, spans=())


def test_assess_names_each_target_and_flags_the_insane() -> None:
    good = _fidelity("a", drain_time_s=0.05, replica_seconds=0.02)
    bad = _fidelity("b", drain_time_s=-0.2, replica_seconds=0.6)
    assertions, insane = assess([good, bad])
    verdicts = {a["name"]: a["verdict"] for a in assertions}
    assert verdicts["a: drain_time_s median |error| <= 0.15 (relative)"] == "pass"
    assert verdicts["b: drain_time_s median |error| <= 0.15 (relative)"] == "fail"
    assert verdicts["b: replica_seconds median |error| <= 0.1 (relative)"] == "fail"
    assert verdicts["drain_time_s measured in the 5-95 % band in >= 80% of runs"] == "fail"
    assert insane == ["b: replica_seconds error 0.6 beyond the twin's stated band 0.15 "
                      "(measured 100.0, twin median 160.0)"]
    # a figure the real run measured but no draw did is a miss
    none = Fidelity("c", "c", 3, 0.1, (FigureCheck("reaction_time_s", 20.0, None, None, None,
                                                   None, None),), ())
    assert assess([none])[0][0]["verdict"] == "fail"


def test_a_figure_target_is_the_median_over_the_labels_runs() -> None:
    """One run of a label past the target does not fail it when the label's median error over
    its held-out runs is within; the run's own error is kept in per_run, signed."""
    from dataclasses import replace

    runs = [replace(_fidelity("spike-ci", drain_time_s=e), run=f"r{i}")
            for i, e in enumerate((0.25, -0.05, 0.10))]
    runs.append(replace(_fidelity("other", drain_time_s=0.2), run="o"))
    by_name = {a["name"]: a for a in assess(runs)[0]}
    spike = by_name["spike-ci: drain_time_s median |error| <= 0.15 (relative)"]
    assert (spike["value"], spike["verdict"], spike["runs"]) == (0.1, "pass", 3)
    assert spike["per_run"] == {"r0": 0.25, "r1": -0.05, "r2": 0.1}
    other = by_name["other: drain_time_s median |error| <= 0.15 (relative)"]
    assert (other["value"], other["verdict"], other["runs"]) == (0.2, "fail", 1)
    # two of three runs without a draw: the median error is unbounded, a miss
    none = FigureCheck("drain_time_s", 20.0, None, None, None, None, None)
    blind = [replace(runs[0], figures=(none,), run=f"n{i}") for i in range(2)] + [runs[1]]
    (check, *_), _ = assess(blind)
    assert check["value"] is None and check["verdict"] == "fail"
    assert check["per_run"] == {"n0": None, "n1": None, "r1": -0.05}


def _golden(name: str) -> Path:
    return next(GOLDEN.glob(f"*-{name}/benchmark.json"))


def test_a_golden_spike_run_is_predicted_and_compared() -> None:
    result = predict_run(_golden("spike-ci"), draws=3)
    bench = json.loads(_golden("spike-ci").read_text())
    drain = result.figure("drain_time_s")
    assert drain.measured == bench["metrics"]["drain_time_s"]["value"]
    assert drain.median is not None and abs(drain.error) < 0.5
    assert result.label == "spike-ci" and result.draws == 3
    # no events.jsonl beside the golden benchmark.json: only the twin side has span samples
    cold = next(s for s in result.spans if s.name == "cold_start_s")
    assert cold.real_n == 0 and cold.twin_n > 0 and cold.ks is None
    assert set(result.as_dict()["figures"]) == {f.name for f in result.figures}


def test_predict_runs_gives_the_same_results_on_two_processes_in_order() -> None:
    """Each run in its place, an unsupported one as its Unsupported with every problem line;
    two processes give what one does (but for the time taken), and leave no process behind
    (the autouse leak check)."""
    from dataclasses import replace

    from pytest_lagscale.calibration.fidelity import predict_runs

    runs = [_golden("spike-ci"), _golden("spike-ci-hpa-cpu-ci"), _golden("spike-ci")]
    one = predict_runs(runs, workers=1, draws=2, seed=4)
    two = predict_runs(runs, workers=2, draws=2, seed=4)
    assert isinstance(one[1], Unsupported) and isinstance(two[1], Unsupported)
    assert two[1].problems == one[1].problems and "scales on CPU" in str(two[1])
    assert [replace(r, seconds=0.0) for r in (one[0], one[2], two[0], two[2])] == \
        [replace(predict_run(runs[0], draws=2, seed=4), seconds=0.0)] * 4


def test_unsupported_inputs_are_named(tmp_path: Path) -> None:
    with pytest.raises(Unsupported, match="scales on CPU"):
        predict_run(_golden("spike-ci-hpa-cpu-ci"), draws=1)
    bench = json.loads(_golden("spike-ci").read_text())
    bench["run"]["graceful_drain"] = False
    with pytest.raises(Unsupported, match="SIGKILL"):
        plan_for(bench)
    bench["run"]["graceful_drain"], bench["run"]["actions"] = True, [{"action": "kill_replica"}]
    with pytest.raises(Unsupported, match="scheduled actions"):
        plan_for(bench)
    bench["run"]["actions"], bench["run"]["platform"] = [], "kubernetes"
    with pytest.raises(Unsupported, match="platform 'kubernetes' \\(the twin models the "
                                          "embedded controller on local replicas\\)"):
        plan_for(bench)


def test_an_external_scaler_the_run_did_not_serve_is_unsupported(tmp_path: Path) -> None:
    import yaml

    from pytest_lagscale.config.bundled import manifest_path

    doc = yaml.safe_load(manifest_path("scaledobject-persistent-lag-ci").read_text())
    del doc["metadata"]["annotations"]["lagscale.dev/local-scaler-address"]
    remote = tmp_path / "scaledobject-remote.yaml"
    remote.write_text(yaml.safe_dump(doc))
    bench = json.loads(_golden("spike-ci").read_text())
    bench["inputs"]["policy"] = str(remote)
    with pytest.raises(Unsupported, match="calls the external scaler 'lagscale-persistent-lag-"
                                          "scaler.default.svc.cluster.local:6000' \\(only the "
                                          "run's own persistent-lag scaler is modelled\\)"):
        plan_for(bench)
    bench["inputs"]["policy"] = "scaledobject-persistent-lag-ci"
    assert plan_for(bench).policy_name == "scaledobject-persistent-lag-ci"


def test_bad_runs_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="benchmark.json"):
        predict_run(tmp_path, draws=1)
    with pytest.raises(ConfigError, match="draws"):
        predict_run(_golden("spike-ci"), draws=0)
    no_inputs = {**json.loads(_golden("spike-ci").read_text()), "inputs": {}}
    (tmp_path / "benchmark.json").write_text(json.dumps(no_inputs))
    with pytest.raises(ConfigError, match="inputs.profile"):
        predict_run(tmp_path, draws=1)


def test_a_prediction_given_the_runs_cold_starts_scales_the_start_up_time(tmp_path: Path) -> None:
    base = predict_run(_golden("spike-ci"), draws=3)
    twin_cold = next(s for s in base.spans if s.name == "cold_start_s").twin_median
    (tmp_path / "benchmark.json").write_text(_golden("spike-ci").read_text())
    # the run's replicas started twice as slowly as the calibration's (a slower machine)
    events = [{"monotonic_s": 100.0 + i, "event": "replica_started", "replica_id": f"r{i}"}
              for i in range(4)]
    events += [{"monotonic_s": 100.0 + i + 2 * twin_cold, "event": "replica_ready",
                "replica_id": f"r{i}"} for i in range(4)]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    plain = predict_run(tmp_path, draws=3)
    given = predict_run(tmp_path, draws=3, condition_on_cold_start=True)
    assert plain.cold_start_scale is None and given.cold_start_scale == pytest.approx(2.0, 0.01)
    cold = next(s for s in given.spans if s.name == "cold_start_s")
    assert cold.twin_median == pytest.approx(cold.real_median, rel=0.25)
    assert (given.figure("reaction_time_s").median
            > plain.figure("reaction_time_s").median + 0.5 * twin_cold)
    assert given.as_dict()["cold_start_scale"] == given.cold_start_scale
    # without real cold starts there is nothing to condition on
    assert predict_run(_golden("spike-ci"), draws=3,
                       condition_on_cold_start=True).cold_start_scale is None


@pytest.mark.parametrize("name, median, measured, spread, expected", [
    pytest.param("peak_lag_records", 15_720.0, 12_036.0, (12_500.0, 14_899.0), 0.0551,
                 id="lt50-2026-11-26-nearest-sample"),
    pytest.param("peak_lag_records", 13_000.0, 12_036.0, (12_500.0, 14_899.0), 0.0,
                 id="inside-the-spread"),
    pytest.param("peak_lag_records", 10_000.0, 12_036.0, (12_500.0, 14_899.0), -0.1692,
                 id="below-everything"),
    pytest.param("peak_lag_records", 15_720.0, 12_036.0, None, 0.3061, id="no-spread"),
    pytest.param("scale_steps", 11.0, 7.0, (6.0, 8.0), 3.0, id="steps-difference"),
    pytest.param("drain_time_s", None, 10.0, (9.0, 11.0), None, id="no-median"),
])
def test_spread_error_is_to_the_nearest_real_run(name, median, measured, spread,
                                                 expected) -> None:
    from pytest_lagscale.calibration.fidelity import spread_error

    got = spread_error(name, median, measured, spread)
    assert got == (None if expected is None else pytest.approx(expected, abs=1e-3))


def test_beyond_band_forgives_only_what_the_labels_real_runs_span() -> None:
    from pytest_lagscale.calibration.fidelity import Fidelity, FigureCheck, beyond_band

    def run(label: str, measured: float, median: float) -> Fidelity:
        fig = FigureCheck("peak_lag_records", measured, median, None, None,
                          (median - measured) / measured, None)
        return Fidelity(run=label, label=label, draws=30, seconds=1.0, figures=(fig,), spans=())

    results = [run("spike-ci-lt50", 12_036.0, 15_720.0), run("spike-ci", 50_000.0, 70_000.0),
               run("spike-ci-lt5000", 68_000.0, 70_000.0)]
    beyond, within, reproduced = beyond_band(
        results, {"spike-ci-lt50": {"peak_lag_records": (12_500.0, 14_899.0)},
                  "spike-ci": {"peak_lag_records": (51_000.0, 52_000.0)}})
    assert [line.split(":")[0] for line in beyond] == ["spike-ci"]   # +34.6 % past its spread
    assert len(within) == 1 and within[0].startswith(
        "spike-ci-lt50: peak_lag_records error 0.306 beyond the twin's stated band 0.3")
    assert within[0].endswith("within the band of the label's real runs 12500-14899 (error "
                              "+0.055 to the nearest)")
    assert reproduced == []


def test_beyond_band_names_a_miss_that_a_draw_reproduced_apart_from_a_broken_twin() -> None:
    from pytest_lagscale.calibration.fidelity import Fidelity, FigureCheck, beyond_band

    # The reaction draws of the clean-clone CI's spike-ci-lt5000 run given its cold starts:
    # modes at ~13.8 s (19 draws) and ~20 s (10), one at 26.1 s; the run measured 21.05 s.
    def run(label: str, low: float, high: float) -> Fidelity:
        fig = FigureCheck("reaction_time_s", 21.05, 13.875, 13.75, 20.48,
                          (13.875 - 21.05) / 21.05, False, low, high)
        return Fidelity(run=label, label=label, draws=30, seconds=1.0, figures=(fig,), spans=())

    beyond, within, reproduced = beyond_band(
        [run("spike-ci-lt5000", 13.375, 26.125), run("spike-ci", 13.375, 20.9)],
        {"spike-ci-lt5000": {"reaction_time_s": (21.96, 26.06)}})
    assert within == []
    assert [line.split(":")[0] for line in beyond] == ["spike-ci"]  # no draw came to 21.05 s
    assert reproduced == ["spike-ci-lt5000: reaction_time_s error -0.341 beyond the twin's stated "
                          "band 0.3 (measured 21.05, twin median 13.875); reproduced by a draw "
                          "(draws 13.375-26.125, 5-95 % 13.75-20.48)"]


def test_machine_probe_takes_the_pre_load_starts_alone_equivalent() -> None:
    from pytest_lagscale.calibration.fidelity import machine_probe_s

    records = [(0.0, "replica_started", "r1", {}), (0.0, "replica_started", "r2", {}),
               (6.0, "engine_ready", "r1", {}), (8.0, "engine_ready", "r2", {}),
               (20.0, "load_start", None, {}),
               (30.0, "replica_started", "r3", {}), (50.0, "engine_ready", "r3", {})]
    # two started together before the load: median 7 s x min(1, 1.5 / 2); r3 (in the spike)
    # is not part of the probe
    assert machine_probe_s(records, cores=1.5) == pytest.approx(7.0 * 0.75)
    assert machine_probe_s(records, cores=4.0) == pytest.approx(7.0)
    assert machine_probe_s(records[4:], cores=1.5) is None          # none before the load
    assert machine_probe_s(records[:4], cores=1.5) is None          # no load_start


def test_only_held_out_runs_count_for_the_targets() -> None:
    """A run the calibration was read from is recorded but is no test of it."""
    from dataclasses import replace

    in_sample = replace(_fidelity("a", drain_time_s=-0.5), held_out=False)
    held_out = _fidelity("b", drain_time_s=0.05)
    assertions, insane = assess([in_sample, held_out])
    names = {a["name"] for a in assertions}
    assert "b: drain_time_s median |error| <= 0.15 (relative)" in names
    assert not any(name.startswith("a:") for name in names) and insane == []
    assert in_sample.as_dict()["held_out"] is False


def test_a_calibration_source_run_is_predicted_as_in_sample(tmp_path: Path) -> None:
    from pytest_lagscale.twin.params import load_calibration, calibration_path

    name = load_calibration(calibration_path("spark"))["source_runs"][0]
    (tmp_path / name).mkdir()
    (tmp_path / name / "benchmark.json").write_text(_golden("spike-ci").read_text())
    assert predict_run(tmp_path / name, draws=1).held_out is False
    assert predict_run(_golden("spike-ci"), draws=1).held_out is True


def test_a_run_is_predicted_with_its_machine_images_calibration(tmp_path: Path) -> None:
    """A run records its kernel release; the prediction takes that image's calibration when
    one is bundled (its own source runs then in-sample), else the engine's default."""
    from pytest_lagscale.twin.params import (calibration_path, load_calibration,
                                             machine_calibrations)

    release, path = next(iter(machine_calibrations("spark").items()))
    bench = json.loads(_golden("spike-ci").read_text())
    bench["machine_info"]["release"] = release
    name = load_calibration(path)["source_runs"][0]
    for run in ("20261201T000000Z-spike-ci", name):
        (tmp_path / run).mkdir()
        (tmp_path / run / "benchmark.json").write_text(json.dumps(bench))
    held = predict_run(tmp_path / "20261201T000000Z-spike-ci", draws=1)
    assert (held.calibration, held.held_out) == (release, True)
    assert predict_run(tmp_path / name, draws=1).held_out is False
    default = load_calibration(calibration_path("spark"))["machine"].get("release")
    assert predict_run(_golden("spike-ci"), draws=1).calibration == (default or "spark.yaml")


def test_the_machine_probe_is_a_known_machine_factor(tmp_path: Path) -> None:
    """A probe twice the calibration's start-up time, taken as exact (probe_sd 0), doubles the
    twin's starts; with a run_to_run slope of 1 the engine terms follow it and the drain takes
    longer. Measured with the calibration's probe_sd, it moves them part of the way."""
    from dataclasses import replace

    from pytest_lagscale.calibration.fidelity import plan_for
    from pytest_lagscale.twin.run import params_for

    (tmp_path / "run").mkdir()
    bench = json.loads(_golden("spike-ci").read_text())
    (tmp_path / "run" / "benchmark.json").write_text(json.dumps(bench))
    measured = params_for(plan_for(bench))
    assert measured.run_probe_sd > 0
    params = replace(measured, run_probe_sd=0.0)
    alone = params.cold_start_alone_s
    events = [{"monotonic_s": 0.0, "event": "replica_started", "replica_id": "r0"},
              {"monotonic_s": 2 * alone, "event": "engine_ready", "replica_id": "r0"},
              {"monotonic_s": 100.0, "event": "load_start"}]
    (tmp_path / "run" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    plain = predict_run(tmp_path / "run", draws=3, params=params)
    probed = predict_run(tmp_path / "run", draws=3, machine_probe=True, params=params)
    assert plain.probe_alone_s is None and probed.probe_alone_s == pytest.approx(2 * alone)

    def cold(result):
        return next(s for s in result.spans if s.name == "cold_start_s").twin_median
    assert cold(probed) > 1.5 * cold(plain)
    partly = predict_run(tmp_path / "run", draws=3, machine_probe=True, params=measured)
    assert cold(plain) < cold(partly) < cold(probed)
    sloped = predict_run(tmp_path / "run", draws=3, machine_probe=True,
                         params=replace(params, run_engine_on_cold_start=1.0))
    assert (sloped.figure("replica_seconds").median
            > probed.figure("replica_seconds").median)


def test_a_prediction_worker_does_not_run_its_parents_signal_handlers() -> None:
    """The pool's initializer: SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP end it (a
    harness's clean-up handlers stay in the harness)."""
    import signal

    from pytest_lagscale.calibration.processes import default_signals

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for sig in saved:
            signal.signal(sig, lambda *_: None)
        default_signals()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
