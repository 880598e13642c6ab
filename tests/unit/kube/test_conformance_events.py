"""The shadow's verdict computed from a kubernetes run's events (kube/conformance.py)."""

from __future__ import annotations

import pytest

from pytest_lagscale.contract.errors import ConfigError
from pytest_lagscale.kube.conformance import run_conformance

from .test_shadow import KEDA_HPA, SELECTOR

TIMING = {"sync_period_s": 3.0, "tolerance": 0.1, "downscale_stabilization_s": 30.0}


def events(real_desired_after_second_sync: int) -> list[dict]:
    """A 1 -> 5 scale-out as the platform and KubeAutoscaler write it."""
    out = [{"event": "hpa_created", "source": "controller", "monotonic_s": 9.0,
            "name": "keda-hpa-lagscale-consumer", "spec": KEDA_HPA["spec"]},
           {"event": "deployment_status", "source": "platform", "monotonic_s": 9.5,
            "spec_replicas": 1, "status_replicas": 1, "ready_replicas": 1}]
    for k, (total, desired) in enumerate([(100.0, 1), (2400.0, real_desired_after_second_sync),
                                          (2400.0, real_desired_after_second_sync)]):
        t = 10.0 + 3 * k
        out.append({"event": "metric_read", "source": "controller", "monotonic_s": t + 0.01,
                    "read_t_s": t, "metric": "s0-kafka-events", "label_selector": SELECTOR,
                    "total": total, "status": 200})
        out.append({"event": "hpa_status", "source": "controller", "monotonic_s": t + 0.2,
                    "desired_replicas": desired, "current_replicas": 1})
        if desired != 1 and k == 1:  # the HPA scaled the Deployment: the poller sees it
            out.append({"event": "deployment_status", "source": "platform",
                        "monotonic_s": t + 0.3, "spec_replicas": desired,
                        "status_replicas": desired, "ready_replicas": 1})
    # another HPA's metric is not this one's sync
    out.append({"event": "metric_read", "source": "controller", "monotonic_s": 20.0,
                "read_t_s": 20.0, "metric": "s0-other", "label_selector": "a=b", "total": 9e9})
    return sorted(out, key=lambda r: r["monotonic_s"])


def test_the_real_hpas_decisions_are_replayed_and_agree():
    # 2400 / 500 -> 5 (ceil 4.8); Pods 4 per 5 s vs 100 % per 5 s of 1 -> max(5, 2) = 5
    report = run_conformance(events(5), **TIMING)
    assert (report.syncs, report.agreeing, report.differences) == (3, 3, [])


def test_a_different_real_decision_is_listed_with_its_inputs():
    report = run_conformance(events(6), **TIMING)
    assert report.syncs == 3 and report.agreeing == 1
    first = report.differences[0]
    assert (first["real_desired"], first["shadow_desired"], first["metric_total"],
            first["spec_replicas"], first["target"]) == (6, 5, 2400.0, 1, 500.0)


def test_a_run_without_the_hpa_says_where_to_look():
    with pytest.raises(ConfigError, match="keda-operator.log"):
        run_conformance([e for e in events(5) if e["event"] != "hpa_created"], **TIMING)
