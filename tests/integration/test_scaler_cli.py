"""``lagscale scaler serve`` as a process: prints its address, answers gRPC, exits 0 on a signal."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytest.importorskip("grpc", reason="grpcio missing: pip install -e '.[scaler]'")

from pytest_lagscale.scalers.externalscaler.client import (  # noqa: E402
    ExternalScalerClient,
    MetricSpecValue,
    scaled_object_ref,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("signum", [pytest.param(signal.SIGTERM, id="sigterm"),
                                    pytest.param(signal.SIGINT, id="sigint")])
def test_serve_prints_its_address_answers_and_exits_cleanly_on_a_signal(signum: int) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "pytest_lagscale.cli", "scaler", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert first.startswith("listening on 127.0.0.1:"), first
        address = first.removeprefix("listening on ")
        ref = scaled_object_ref("c", "default", {"bootstrapServers": "127.0.0.1:1", "consumerGroup": "g",
                                                 "topic": "events", "lagThreshold": "10"})
        with ExternalScalerClient(address) as client:
            assert client.metric_specs(ref) == [MetricSpecValue("persistent-kafka-lag-events", 10.0)]
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.strip() == f"stopped ({signal.Signals(signum).name})"


def test_run_scaler_process_reports_its_address_and_stops_on_sigterm(tmp_path) -> None:
    from pytest_lagscale.process import live_processes
    from pytest_lagscale.scalers.persistent_lag.process import ScalerProcess

    with ScalerProcess(tmp_path / "scaler.log") as scaler:
        assert scaler.address is not None and scaler.address.startswith("127.0.0.1:")
        assert scaler.process in live_processes()
        ref = scaled_object_ref("c", "default", {"bootstrapServers": "127.0.0.1:1", "consumerGroup": "g",
                                                 "topic": "events", "lagThreshold": "10"})
        with ExternalScalerClient(scaler.address) as client:
            assert client.metric_specs(ref) == [MetricSpecValue("persistent-kafka-lag-events", 10.0)]
    assert scaler.stop() == "terminated"
    assert (tmp_path / "scaler.log").read_text().splitlines()[-1] == "stopped (SIGTERM)"
