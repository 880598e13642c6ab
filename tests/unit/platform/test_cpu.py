"""The replicas' CPU as the metrics server reports it: millicores since the previous reading,
nothing on first sight, gone replicas forgotten; the psutil sampler on a real process."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from pytest_lagscale.platform.cpu import CpuSampler, millicores_since


def test_millicores_since_the_previous_reading() -> None:
    last: dict[str, tuple[float, float]] = {}
    assert millicores_since(last, {"a": 1.0}, 10.0) == {}
    assert millicores_since(last, {"a": 1.5, "b": 0.0}, 12.0) == {"a": pytest.approx(250.0)}
    # "a" gone: forgotten; "b" kept when listed as existing but not read this time
    assert millicores_since(last, {}, 13.0, seen={"b"}) == {}
    assert set(last) == {"b"}
    assert millicores_since(last, {"b": 0.1}, 14.0) == {"b": pytest.approx(50.0)}


def test_the_psutil_sampler_reads_a_real_process_tree() -> None:
    replica = SimpleNamespace(replica_id="replica-0001", process=SimpleNamespace(pid=os.getpid()))
    sampler = CpuSampler()
    assert sampler.sample([replica], 0.0) == {}
    sum(i * i for i in range(300_000))             # some CPU of this process
    usage = sampler.sample([replica], 1.0)
    assert set(usage) == {"replica-0001"} and usage["replica-0001"] >= 0.0
    gone = SimpleNamespace(replica_id="replica-0002", process=SimpleNamespace(pid=2 ** 22 + 1))
    assert "replica-0002" not in sampler.sample([replica, gone], 2.0)
