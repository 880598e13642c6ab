"""A whole run (``run_experiment``, as ``lagscale run``) whose ScaledObject reads lag through
KEDA's aws-cloudwatch trigger: the ``sources`` phase starts moto's server and the SumOffsetLag
publisher, the trigger's awsEndpoint and dimensions are mapped to the run's (recorded in
``run_info.lag_source``), the controller scales out on the spike, the staleness at decision is
summarised per source (``run_info.lag_signal``), processed == produced, and moto is gone after."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from pytest_lagscale.experiment import RunSettings, run_experiment

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("moto") is None,
                       reason="moto[server] not installed; pip install 'pytest-lagscale[sources]'"),
]

PROFILE = Path(__file__).resolve().parents[1] / "data" / "spike-short.yaml"


def test_a_run_on_the_cloudwatch_trigger_starts_moto_scales_out_and_records_staleness(
        kafka_cluster: Any, tmp_path: Path) -> None:
    result = run_experiment(RunSettings(profile=PROFILE, policy="scaledobject-cloudwatch-ci", engine="arrow",
                                        out_dir=tmp_path, settle_timeout_s=15), cluster=kafka_cluster)
    run = result.document()["run"]
    source = run["lag_source"]
    assert (source["kind"], source["cloudwatch_period_s"], source["cloudwatch_window_s"]) == ("broker", 10.0, 60.0)
    assert source["trigger_addresses"] == [{"trigger_index": 0, "type": "aws-cloudwatch", "manifest": "aws",
                                            "run": source["moto_url"]}]
    signal = run["lag_signal"]["aws-cloudwatch"]
    assert signal["decisions"] >= 1 and signal["decision_staleness_s_median"] >= 10.0 - 0.5, signal
    assert int(result.timeline["current_replicas"].max()) >= 2, "no scale-out on the spike"
    m = result.metrics
    assert m["lost_records"] == 0.0 and m["duplicated_records"] == 0.0, m
    port = source["moto_url"].rpartition(":")[2]
    assert not _processes_with(f"moto.server -H 127.0.0.1 -p {port}"), "moto outlived the run"


def _processes_with(text: str) -> list[int]:
    """Pids whose command line contains ``text`` (space-joined argv)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and text in argv:
            found.append(int(proc.name))
    return found
