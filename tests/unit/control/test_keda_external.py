"""KEDA's ``external`` trigger in the pure controller: metadata, evaluation from the observation's
gRPC readings, the HPA proposal, fallback, and what the runner is told to call."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_lagscale.config.policy import load_policy_manifest, with_lag_threshold
from pytest_lagscale.config.scaledobject import parse_scaled_object
from pytest_lagscale.control.keda import LOCAL_SCALER, ExternalScalerCall, ExternalTrigger, TriggerError
from pytest_lagscale.config.trigger_metadata.external import ExternalTriggerMetadata
from pytest_lagscale.control.observation import ExternalMetric, Observation
from pytest_lagscale.control.policy import KedaHpaPolicy
from pytest_lagscale.contract.errors import ConfigError

K8S = Path(__file__).resolve().parents[3] / "k8s"
CI = K8S / "scaledobject-persistent-lag-ci.yaml"
SERVICE = "lagscale-persistent-lag-scaler.default.svc.cluster.local:6000"
METRIC = "persistent-kafka-lag-events"


def doc(**metadata: object) -> dict:
    """scaledobject-persistent-lag-ci.yaml with its trigger's metadata replaced by ``metadata``."""
    data = yaml.safe_load(CI.read_text(encoding="utf-8"))
    data["spec"]["triggers"][0]["metadata"] = metadata
    return data


def policy(data: dict | None = None) -> KedaHpaPolicy:
    return KedaHpaPolicy.from_scaled_object(parse_scaled_object(data or yaml.safe_load(CI.read_text()),
                                                                source="so.yaml"))


def reading(value: float | None = 2600.0, active: bool | None = True, target: float | None = 500.0,
            error: str | None = None) -> dict[int, ExternalMetric]:
    return {0: ExternalMetric(METRIC, target, value, active, error)}


def trigger(address: str = LOCAL_SCALER, metric_type: str = "AverageValue") -> ExternalTrigger:
    return ExternalTrigger(ExternalTriggerMetadata(address, {"scalerAddress": address, "lagThreshold": "500"}),
                           metric_type=metric_type)


# -- metadata -------------------------------------------------------------------------------
def test_committed_ci_manifest_parses_and_is_served_by_the_run() -> None:
    p = policy()
    assert p.external_scalers == (ExternalScalerCall(
        0, SERVICE, "lagscale-consumer", "default", p.external_scalers[0].metadata, local=True),)
    assert dict(p.external_scalers[0].metadata)["sustainSeconds"] == "15"
    assert (p.needs_local_scaler, p.needs_lag, p.needs_cpu, p.lag_threshold_records) == (True, False, False, 500)


def test_an_address_other_than_the_local_one_is_dialled_as_given() -> None:
    data = doc(scalerAddress="scaler.example:7000", lagThreshold="500")
    p = policy(data)
    assert [(c.scaler_address, c.local) for c in p.external_scalers] == [("scaler.example:7000", False)]
    assert p.needs_local_scaler is False


def test_lagscale_local_is_local_without_the_annotation() -> None:
    data = doc(scalerAddress=LOCAL_SCALER)
    del data["metadata"]["annotations"]["lagscale.dev/local-scaler-address"]
    p = policy(data)
    assert [(c.scaler_address, c.local) for c in p.external_scalers] == [(LOCAL_SCALER, True)]
    assert p.lag_threshold_records is None  # no lagThreshold in the metadata


@pytest.mark.parametrize(("metadata", "line"), [
    pytest.param({"topic": "events"},
                 "'spec.triggers[0].metadata.scalerAddress': got no value, expected 'host:port' of the scaler's gRPC "
                 "service, or 'lagscale://local' (the run's own persistent-lag scaler) in so.yaml; set scalerAddress: "
                 "'lagscale://local' or e.g. 'lagscale-scaler.default.svc:6000'", id="address-missing"),
    pytest.param({"scalerAddress": "http://scaler:6000"},
                 "'spec.triggers[0].metadata.scalerAddress': got 'http://scaler:6000', expected 'host:port' of the "
                 "scaler's gRPC service, or 'lagscale://local' (the run's own persistent-lag scaler) in so.yaml; set "
                 "scalerAddress: 'lagscale://local' or e.g. 'lagscale-scaler.default.svc:6000'", id="address-url"),
    pytest.param({"scalerAddress": LOCAL_SCALER, "enableTLS": "true"},
                 "'spec.triggers[0].metadata.enableTLS': got 'true', expected 'false' (lagscale dials plain-text "
                 "gRPC) in so.yaml; remove enableTLS", id="tls"),
    pytest.param({"scalerAddress": LOCAL_SCALER, "lagThreshold": 500},
                 "'spec.triggers[0].metadata.lagThreshold': got 500, expected a string (KEDA trigger metadata values "
                 "are strings) in so.yaml; quote it: '500'", id="not-a-string"),
])
def test_bad_metadata_names_the_key(metadata: dict, line: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_scaled_object(doc(**metadata), source="so.yaml")
    assert info.value.problems == [line]


def test_bad_local_scaler_annotation() -> None:
    data = doc(scalerAddress=LOCAL_SCALER)
    data["metadata"]["annotations"]["lagscale.dev/local-scaler-address"] = "svc"
    with pytest.raises(ConfigError) as info:
        parse_scaled_object(data, source="so.yaml")
    assert info.value.problems == [
        "'metadata.annotations[\"lagscale.dev/local-scaler-address\"]': got 'svc', expected 'host:port' (a scaler "
        "Service's address) in so.yaml; set it to the scalerAddress of the trigger, e.g. "
        "'lagscale-persistent-lag-scaler:6000'"]


def test_lag_threshold_override_reaches_the_scaler_metadata() -> None:
    config = with_lag_threshold(load_policy_manifest(CI), 2000)
    p = KedaHpaPolicy.from_scaled_object(config)
    assert dict(p.external_scalers[0].metadata)["lagThreshold"] == "2000"
    assert p.lag_threshold_records == 2000


# -- evaluation and proposal (docs/semantics.md §2.6, §3.3) -----------------------
def test_evaluate_learns_name_and_target_from_the_spec() -> None:
    t = trigger()
    assert (t.metric_name, t.metric_target.value) == ("s0-external", 0.0)
    result = t.evaluate(Observation(2, external=reading()), 0.0)
    assert (result.metric_value, result.active, result.total_lag) == (2600.0, True, None)
    assert (t.metric_name, t.metric_target.type, t.metric_target.value) == (f"s0-{METRIC}", "AverageValue", 500.0)


@pytest.mark.parametrize(("external", "message"), [
    pytest.param(None, "external scaler lagscale://local: not read", id="not-read"),
    pytest.param(reading(value=None, active=None, error="UNAVAILABLE: lag could not be read"),
                 "external scaler lagscale://local: UNAVAILABLE: lag could not be read", id="call-failed"),
    pytest.param(reading(target=0.0), "external scaler lagscale://local: GetMetricSpec gave target 0, expected > 0",
                 id="no-target"),
])
def test_evaluate_errors(external: dict | None, message: str) -> None:
    with pytest.raises(TriggerError, match=f"^{message}$"):
        trigger().evaluate(Observation(1, external=external), 0.0)


@pytest.mark.parametrize(("metric_type", "value", "replicas", "expected"), [
    pytest.param("AverageValue", 2600.0, 2, 6, id="3.3-average-value-ceil-usage-over-target"),
    pytest.param("AverageValue", 1050.0, 2, 2, id="3.3-average-value-within-tolerance"),
    pytest.param("Value", 1500.0, 2, 6, id="3.3-value-ratio-times-ready"),
])
def test_proposal_is_the_hpas_for_an_external_metric(metric_type: str, value: float, replicas: int,
                                                     expected: int) -> None:
    t = trigger(metric_type=metric_type)
    obs = Observation(replicas, external=reading(value=value))
    t.evaluate(obs, 0.0)
    assert t.proposal(value, obs, 0.1) == expected


def test_no_proposal_before_a_spec_was_read() -> None:
    assert trigger().proposal(2600.0, Observation(2), 0.1) is None


# -- the controller and policy ------------------------------------------------------------------
def test_policy_polls_and_syncs_on_the_scalers_readings() -> None:
    p = policy()
    poll = p.decide(Observation(1, external=reading(value=2600.0)), 0.0).steps[0]
    assert (poll.event, poll.is_active, poll.triggers[0].type, poll.triggers[0].metric_name) == (
        "keda_poll", True, "external", f"s0-{METRIC}")
    decision = p.decide(Observation(1, external=reading(value=2600.0)), 3.0)
    sync = decision.steps[-1]
    # scaleUp Max(Pods 4, Percent 100) per 5 s from 1: 5
    assert (sync.event, sync.proposal, decision.desired_replicas, sync.reason) == ("hpa_sync", 6, 5, "ScaleUpLimit")


def test_inactive_scaler_scales_from_zero_only_when_active() -> None:
    data = yaml.safe_load(CI.read_text())
    data["spec"]["minReplicaCount"] = 0
    p = policy(data)
    assert p.decide(Observation(0, external=reading(value=0.0, active=False)), 0.0).desired_replicas is None
    assert p.decide(Observation(0, external=reading(value=40.0, active=True)), 2.0).desired_replicas == 1


def test_failed_reads_count_toward_the_fallback() -> None:
    """fallback failureThreshold 3, replicas 2 (scaledobject-persistent-lag-ci.yaml): the 4th
    failure in a row gives target x 2 (§2.5); the HPA sync at 4.0 s counts too (polls at 2, 4
    and the sync at 4: 3 failures; the poll at 6: the 4th)."""
    p = policy()
    p.decide(Observation(1, external=reading(value=100.0)), 0.0)
    failed = reading(value=None, active=None, error="UNAVAILABLE: down")
    polls = [p.decide(Observation(1, external=failed), t).steps[0] for t in (2.0, 4.0, 6.0, 8.0)]
    assert [(e.triggers[0].error is not None, e.triggers[0].metric_value) for e in polls] == [
        (True, None), (True, None), (False, 1000.0), (False, 1000.0)]
    assert polls[-1].triggers[0].fallback_active
