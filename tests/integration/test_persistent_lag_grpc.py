"""The persistent-lag scaler over a real gRPC channel on localhost: every method of KEDA's
``externalscaler.ExternalScaler``, StreamIsActive included, bad metadata (status and message),
read failures, and the server serving on after each error. No broker: a scripted lag source."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

grpc = pytest.importorskip("grpc", reason="grpcio missing: pip install -e '.[scaler]'")

from pytest_lagscale.contract.errors import BrokerError  # noqa: E402
from pytest_lagscale.scalers.externalscaler import externalscaler_pb2 as pb2  # noqa: E402
from pytest_lagscale.scalers.externalscaler.client import (  # noqa: E402
    ExternalScalerClient,
    ExternalScalerError,
    MetricSpecValue,
    scaled_object_ref,
)
from pytest_lagscale.scalers.persistent_lag.server import ScalerServer  # noqa: E402

pytestmark = pytest.mark.integration
METRIC = "persistent-kafka-lag-events"
META = {"scalerAddress": "lagscale://local", "bootstrapServers": "kafka:9092", "consumerGroup": "enrich",
        "topic": "events", "lagThreshold": "100", "sustainSeconds": "1", "samplingInterval": "0.1",
        "windowSize": "20"}
SRC = "ScaledObject default/consumer scalerMetadata"


class ScriptedSource:
    """A lag source whose two partitions' lag the test sets; ``fail`` makes reads raise."""

    name = "broker"

    def __init__(self) -> None:
        self.lag, self.fail, self.reads = 0, False, 0

    def read(self) -> dict[int, tuple[int, int | None]]:
        self.reads += 1
        if self.fail:
            raise BrokerError("broker kafka:9092: timed out")
        half = self.lag // 2
        return {0: (1000, 1000 + half), 1: (-1, self.lag - half)}


@pytest.fixture
def scaler():
    """A started server with one scripted source per window; yields (client, sources)."""
    sources: dict[str, ScriptedSource] = {}

    def factory(settings):  # type: ignore[no-untyped-def]
        return sources.setdefault(settings.consumer_group, ScriptedSource())

    with ScalerServer("127.0.0.1", 0, source_factory=factory) as server, \
            ExternalScalerClient(server.address) as client:
        yield client, sources, server


def ref(**metadata: str):  # type: ignore[no-untyped-def]
    return scaled_object_ref("consumer", "default", {**META, **metadata})


def wait_for(read: Callable[[], object], expected: object, within_s: float = 10.0) -> list[object]:
    """Call ``read`` until it returns ``expected``; returns every value seen (fails on timeout)."""
    seen: list[object] = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        value = read()
        if not seen or seen[-1] != value:
            seen.append(value)
        if value == expected:
            return seen
        time.sleep(0.02)
    pytest.fail(f"no {expected!r} within {within_s} s; saw {seen}")


def test_the_scripted_source_is_a_lag_source() -> None:
    from pytest_lagscale.sources import LagSource

    assert isinstance(ScriptedSource(), LagSource)


def test_get_metric_spec_names_the_metric_and_the_target(scaler) -> None:
    client, _, _ = scaler
    assert client.metric_specs(ref()) == [MetricSpecValue(METRIC, 100.0)]
    raw = client.stub.GetMetricSpec(ref(), timeout=5)
    assert (raw.metricSpecs[0].targetSize, raw.metricSpecs[0].targetSizeFloat) == (100, 100.0)


def test_get_metrics_and_is_active_follow_the_window(scaler) -> None:
    client, sources, _ = scaler
    client.metric_specs(ref())  # creates the window (first read: lag 0)
    sources["enrich"].lag = 60
    assert wait_for(lambda: client.metrics(ref(), METRIC), [(METRIC, 60.0)])
    assert client.is_active(ref()) is True
    sources["enrich"].lag = 500  # above lagThreshold: held at 100 for sustainSeconds, then 500
    seen = wait_for(lambda: client.metrics(ref(), METRIC)[0][1], 500.0)
    assert 100.0 in seen, f"no pending value (lagThreshold) before the sustained 500: {seen}"
    raw = client.stub.GetMetrics(pb2.GetMetricsRequest(scaledObjectRef=ref(), metricName=METRIC), timeout=5)
    assert (raw.metricValues[0].metricValue, raw.metricValues[0].metricValueFloat) == (500, 500.0)
    sources["enrich"].lag = 0
    assert wait_for(lambda: client.is_active(ref()), False)


def test_stream_is_active_pushes_the_current_value_then_changes(scaler) -> None:
    client, sources, _ = scaler
    stream = client.stream_is_active(ref(activationLagThreshold="100"))
    got: list[bool] = []
    reader = threading.Thread(target=lambda: got.extend(r.result for r in _until_cancelled(stream)))
    reader.start()
    try:
        wait_for(lambda: list(got), [False])
        sources["enrich"].lag = 150
        wait_for(lambda: list(got), [False, True])
        sources["enrich"].lag = 40
        wait_for(lambda: list(got), [False, True, False])
    finally:
        stream.cancel()
        reader.join(10)
    assert not reader.is_alive()


def _until_cancelled(stream):  # type: ignore[no-untyped-def]
    try:
        yield from stream
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.CANCELLED


@pytest.mark.parametrize(("call", "metadata", "details"), [
    pytest.param("GetMetrics", {"lagThreshold": "-5"},
                 f"'lagThreshold': got '-5', expected an integer > 0 (records of total lag per replica) in {SRC}; "
                 "set it to e.g. '500'", id="get-metrics-negative-threshold"),
    pytest.param("IsActive", {"sustainSeconds": "300", "windowSize": "10", "samplingInterval": "10"},
                 f"'sustainSeconds': got '300', expected at most (windowSize - 1) x samplingInterval = 90 s (the "
                 f"window must span it) in {SRC}; raise windowSize or samplingInterval, or lower sustainSeconds",
                 id="is-active-window-too-short"),
    pytest.param("GetMetricSpec", {"scaleDownStabilization": "300", "windowSize": "x"},
                 f"'scaleDownStabilization': got '300', expected a key lagscale simulates (not "
                 f"'scaleDownStabilization') under the document root in {SRC}; remove it and set "
                 "spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds (the "
                 "HPA already delays scale-down)\n"
                 f"'windowSize': got 'x', expected an integer in [2, 100000] (samples) in {SRC}; set it to e.g. '30'",
                 id="get-metric-spec-two-problems"),
    pytest.param("StreamIsActive", {"topic": ""},
                 f"'topic': got '', expected a non-empty string in {SRC}; add topic: 'events'",
                 id="stream-is-active-empty-topic"),
])
def test_bad_metadata_is_invalid_argument_naming_key_value_range_and_server_keeps_serving(
        scaler, call: str, metadata: dict, details: str) -> None:
    client, _, _ = scaler
    bad = ref(**metadata)
    request = pb2.GetMetricsRequest(scaledObjectRef=bad, metricName=METRIC) if call == "GetMetrics" else bad
    with pytest.raises(grpc.RpcError) as info:
        response = getattr(client.stub, call)(request, timeout=5)
        if call == "StreamIsActive":
            next(response)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == details
    assert client.metric_specs(ref()) == [MetricSpecValue(METRIC, 100.0)]
    assert client.metrics(ref(), METRIC) == [(METRIC, 0.0)]


def test_unknown_metric_name_is_invalid_argument(scaler) -> None:
    client, _, _ = scaler
    with pytest.raises(ExternalScalerError) as info:
        client.metrics(ref(), "s0-" + METRIC)
    assert info.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details == (f"'metricName': got 's0-{METRIC}', expected '{METRIC}' (the name GetMetricSpec "
                                  "gives for ScaledObject default/consumer); call GetMetricSpec and use its "
                                  "metricName without KEDA's sN- prefix")
    assert client.metrics(ref(), METRIC) == [(METRIC, 0.0)]


def test_failed_lag_read_is_unavailable_then_recovers(scaler) -> None:
    client, sources, _ = scaler
    client.metric_specs(ref())
    sources["enrich"].fail = True

    def code() -> object:
        try:
            client.is_active(ref())
            return "OK"
        except ExternalScalerError as exc:
            assert exc.details == ("ScaledObject default/consumer: lag of group 'enrich' on topic 'events' could "
                                   "not be read from kafka:9092: BrokerError: broker kafka:9092: timed out")
            return exc.code

    wait_for(code, grpc.StatusCode.UNAVAILABLE)
    sources["enrich"].lag, sources["enrich"].fail = 30, False

    def metrics_or_code() -> object:
        try:
            return client.metrics(ref(), METRIC)
        except ExternalScalerError as exc:
            return exc.code

    wait_for(metrics_or_code, [(METRIC, 30.0)])


def test_each_scaled_object_trigger_has_its_own_window(scaler) -> None:
    client, sources, server = scaler
    client.metric_specs(ref())
    client.metric_specs(ref(consumerGroup="other"))
    sources["other"].lag = 70
    wait_for(lambda: client.metrics(ref(consumerGroup="other"), METRIC), [(METRIC, 70.0)])
    assert client.metrics(ref(), METRIC) == [(METRIC, 0.0)]
    assert sorted(server.servicer.windows()) == ["default/consumer enrich/events", "default/consumer other/events"]


def test_stop_ends_open_streams(scaler) -> None:
    client, _, server = scaler
    stream = client.stream_is_active(ref())
    assert next(stream).result is False
    server.stop()
    with pytest.raises(StopIteration):
        next(stream)


def test_the_autoscalers_reader_gets_spec_value_and_activity_over_grpc(scaler) -> None:
    from pytest_lagscale.control.keda import ExternalScalerCall
    from pytest_lagscale.control.observation import ExternalMetric
    from pytest_lagscale.platform.external import ExternalScalerReader

    _, sources, server = scaler
    reader = ExternalScalerReader(server.address, {"consumerGroup": "run-group"})
    call = ExternalScalerCall(0, "lagscale://local", "consumer", "default", META, local=True)
    try:
        assert reader.read([call]) == {0: ExternalMetric(METRIC, 100.0, 0.0, False)}
        sources["run-group"].lag = 40
        wait_for(lambda: reader.read([call]), {0: ExternalMetric(METRIC, 100.0, 40.0, True)})
        bad = ExternalScalerCall(1, "lagscale://local", "consumer", "default", {**META, "windowSize": "1"}, local=True)
        got = reader.read([bad])[1]
        assert got.error is not None and got.error.startswith("INVALID_ARGUMENT: 'windowSize': got '1'")
    finally:
        reader.close()
