"""Prometheus's targets of a cluster's pods, and the relay's refusal of other paths."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from pytest_lagscale.kube.pod_proxy import PodProxyRelay, proxy_path, target_groups


def test_one_target_group_per_pod_names_its_proxy_path_and_instance() -> None:
    groups = target_groups("127.0.0.1:5000", "lagscale-r1", ["b-2", "a-1"], 9400)
    assert groups == [
        {"targets": ["127.0.0.1:5000"],
         "labels": {"__metrics_path__": proxy_path("lagscale-r1", "a-1", 9400),
                    "instance": "a-1"}},
        {"targets": ["127.0.0.1:5000"],
         "labels": {"__metrics_path__": proxy_path("lagscale-r1", "b-2", 9400),
                    "instance": "b-2"}}]


@pytest.mark.parametrize("path", [
    "/api/v1/namespaces/kube-system/pods/etcd:2379/proxy/metrics",
    "/api/v1/namespaces/lagscale-r1/pods/a-1:9400/proxy/debug",
    "/api/v1/namespaces/lagscale-r1/services/a:80/proxy/metrics",
    "/api/v1/namespaces/lagscale-r1/pods/a-1:9400/proxy/metrics/../../x",
])
def test_the_relay_forwards_only_pod_metrics_of_its_namespace(path) -> None:
    relay = PodProxyRelay(api=None, namespace="lagscale-r1").start()
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://{relay.address}{path}", timeout=5)
        assert err.value.code == 404
    finally:
        relay.stop()
    relay.stop()  # idempotent
