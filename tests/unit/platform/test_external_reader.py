"""Where the autoscaler's external-scaler reader sends each call (no network: resolution only)."""

from __future__ import annotations

from pytest_lagscale.control.keda import LOCAL_SCALER, ExternalScalerCall
from pytest_lagscale.control.observation import ExternalMetric
from pytest_lagscale.platform.external import ExternalScalerReader

META = {"scalerAddress": "svc.default.svc.cluster.local:6000", "bootstrapServers": "lagscale-kafka:9092",
        "consumerGroup": "enrich", "topic": "events", "lagThreshold": "500"}
RUN = {"bootstrapServers": "127.0.0.1:40001", "consumerGroup": "enrich-run-1", "topic": "events-run-1"}


def call(address: str = META["scalerAddress"], local: bool = True) -> ExternalScalerCall:
    return ExternalScalerCall(0, address, "lagscale-consumer", "default", META, local=local)


def test_local_call_goes_to_the_runs_scaler_with_the_runs_cluster_group_and_topic() -> None:
    address, metadata = ExternalScalerReader("127.0.0.1:5555", RUN).resolve(call())
    assert address == "127.0.0.1:5555"
    assert metadata == {**META, **RUN, "scalerAddress": "127.0.0.1:5555"}


def test_other_call_goes_where_it_says_unchanged() -> None:
    assert ExternalScalerReader("127.0.0.1:5555", RUN).resolve(call("scaler:7000", local=False)) == \
        ("scaler:7000", META)


def test_local_call_without_a_run_scaler_reads_as_an_error() -> None:
    got = ExternalScalerReader().read([call(LOCAL_SCALER)])
    assert got == {0: ExternalMetric(error="scalerAddress 'lagscale://local': this run started no scaler of its own "
                                           "(only a run whose --policy names it does)")}
