"""PrometheusServer with the real binary: file_sd targets, scraping, recorder range queries.

Two prometheus_client registries stand in for the lag exporter (``kafka_consumergroup_lag_sum``)
and one replica (``replica_ready``); their values are changed over time and read back through
:class:`Recorder`. Needs the ``prometheus`` binary (Debian package ``prometheus``).
"""

from __future__ import annotations

import shutil
import stat
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from pytest_lagscale.contract.errors import LagscaleError, ReadinessTimeout
from pytest_lagscale.observe.prometheus import PrometheusServer
from pytest_lagscale.observe.recorder import Recorder
from pytest_lagscale.process import group_members

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed; run scripts/bootstrap "
                              "(apt-get install prometheus)"),
]


class Exporter:
    """One prometheus_client registry served on an ephemeral 127.0.0.1 port."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.server, self.thread = start_http_server(0, addr="127.0.0.1",
                                                     registry=self.registry)
        self.target = f"127.0.0.1:{self.server.server_port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def exporters() -> Iterator[Callable[[], Exporter]]:
    made: list[Exporter] = []

    def make() -> Exporter:
        made.append(Exporter())
        return made[-1]

    yield make
    for exporter in made:
        exporter.close()


def _wait_for(predicate: Callable[[], bool], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not seen within {within_s} s")
        time.sleep(0.2)


def _instant(recorder: Recorder, query: str) -> list[dict]:
    return recorder.client.custom_query(query)


def test_scraped_series_come_back_through_the_recorder_and_removed_targets_go_stale(
        tmp_path: Path, exporters: Callable[[], Exporter]) -> None:
    lag_exporter, replica = exporters(), exporters()
    lag = Gauge("kafka_consumergroup_lag_sum", "lag", ["consumergroup", "topic"],
                registry=lag_exporter.registry).labels("enrich", "events")
    Gauge("replica_ready", "ready", registry=replica.registry).set(1)
    lag.set(100)
    with PrometheusServer(tmp_path) as prom:
        pid = prom.process.pid
        prom.set_targets("lag_exporter", [lag_exporter.target])
        prom.set_targets("replicas", [replica.target], labels={"replica_id": "replica-0001"})
        recorder = Recorder(prom.url)
        _wait_for(lambda: len(_instant(recorder, 'sum(replica_ready{replica_id="replica-0001"})'
                                                 ' + sum(kafka_consumergroup_lag_sum)')) == 1,
                  within_s=15, what="first scrape of both targets")
        t0 = time.time()
        for value in (100, 200, 300):
            lag.set(value)
            time.sleep(2.5)
        time.sleep(0.5)
        t1 = time.time()
        timeline = recorder.timeline(t0, t1)

        assert len(timeline) == int(t1 - t0)
        lags = timeline["total_lag"].tolist()
        assert lags == sorted(lags) and set(lags) == {100, 200, 300}, lags
        assert lags[-1] == 300
        assert timeline["ready_replicas"].tolist() == [1] * len(timeline)
        assert timeline["desired_replicas"].tolist() == [0] * len(timeline)  # no controller

        prom.set_targets("replicas", [])
        _wait_for(lambda: _instant(recorder, 'up{job="replicas"}') == [],
                  within_s=10, what="replica target gone from up")
        t2 = time.time()
        time.sleep(2.0)
        after = recorder.timeline(t2, time.time())
        assert after["ready_replicas"].tolist() == [0] * len(after)  # counts: 0 when absent
        assert after["total_lag"].tolist() == [300] * len(after)
    assert prom.process.stop_outcome == "terminated"
    assert group_members(pid) == []
    prom.stop()  # idempotent


def _fake_binary(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-prometheus"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_early_exit_is_reported_with_exit_code_and_log_tail(tmp_path: Path) -> None:
    server = PrometheusServer(tmp_path, binary=_fake_binary(tmp_path, "echo bad flag; exit 3"))
    with pytest.raises(LagscaleError) as info:
        with server:
            pass
    assert str(info.value) == (f"prometheus: exited with code 3 during startup; see "
                               f"{server.log_path}\nbad flag")
    assert group_members(server.process.pid) == []


def test_readiness_timeout_attaches_last_20_log_lines_and_cleans_up(tmp_path: Path) -> None:
    body = "for i in $(seq 1 25); do echo line $i; done; exec sleep 60"
    server = PrometheusServer(tmp_path, binary=_fake_binary(tmp_path, body),
                              startup_timeout_s=0.5)
    with pytest.raises(ReadinessTimeout) as info:
        with server:
            pass
    lines = "\n".join(f"line {i}" for i in range(6, 26))
    assert str(info.value) == (
        f"prometheus: timed out after 0.5 s waiting for GET {server.url}/-/ready == 200; raise "
        f"startup_timeout_s or check {server.log_path}\n{lines}")
    assert server.process.stop_outcome == "terminated"
    assert group_members(server.process.pid) == []
