"""The CI gate tier (benchmarks marked ``gate``) is the one README.md and
benchmarks/baselines/README.md describe: one real run per code path. A change to the tier
changes this list, the two READMEs and the CI time in the same commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

GATE = {
    "benchmarks/test_conformance_real_keda.py::"
    "test_real_keda_and_hpa_scale_the_spike_and_the_embedded_hpa_agrees",
    "benchmarks/test_exp2_spike.py::test_spike_scales_out_on_lag_reacts_drains_and_returns_to_min",
    "benchmarks/test_exp3_rebalance_dip.py::"
    "test_cooperative_sticky_scale_out_dip_is_measured_and_its_restart_completes",
    "benchmarks/test_exp5_flapping.py::test_hysteresis_holds_through_bursts_and_still_drains",
    "benchmarks/test_exp6_scale_down.py::test_graceful_scale_down_loses_and_duplicates_nothing",
    "benchmarks/test_exp7_partitions.py::test_partition_count_change_mid_life",
    "benchmarks/test_producer_throughput.py::"
    "test_producer_keeps_80_percent_of_kafka_producer_performance",
    "benchmarks/test_twin_fidelity.py::test_twin_meets_the_figure_targets_on_held_out_runs",
    "benchmarks/test_twin_fidelity.py::test_twin_bands_hold_the_held_out_runs",
}


def _collected(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", *args, "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return {line for line in done.stdout.splitlines() if line.startswith("benchmarks/")}


def test_the_gate_tier_is_one_run_per_code_path() -> None:
    assert _collected("-m", "gate") == GATE


def test_every_experiment_has_a_test_outside_the_gate_for_the_acceptance_session() -> None:
    everything = _collected()
    assert GATE < everything
    modules = {node.split("::")[0] for node in everything - GATE}
    for n in (1, 3, 4, 5, 6, 8, 9, 10):
        assert any(f"/test_exp{n}_" in m for m in modules), n


def test_one_experiment_is_selected_by_its_number() -> None:
    assert _collected("-m", "experiment(n=3)") == {
        "benchmarks/test_exp3_rebalance_dip.py::"
        "test_cooperative_sticky_scale_out_dip_is_measured_and_its_restart_completes",
        "benchmarks/test_exp3_rebalance_dip.py::test_rebalance_dip_by_protocol",
        "benchmarks/test_exp3_rebalance_dip.py::test_rebalance_dip_with_the_labs_franz_go_consumer"}
