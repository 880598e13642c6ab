"""The replica's /healthz against the embedded broker: librdkafka's statistics reach the
liveness rule, and healthy members stay live however long they idle.

A session that breaks for good (seen after a 20 s SIGSTOP of the broker) is not reproduced here:
its rule is tested with fake statistics in tests/unit/consumer/test_liveness.py, and the
platform's restart in tests/integration/test_local_platform.py.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("flags", "idle_s"), [
    pytest.param(("--balancer", "cooperative-sticky", "--session-timeout", "3"), 8.0, id="classic"),
    pytest.param(("--balancer", "consumer"), 12.0, id="kip-848"),  # the rule's 10 s default
])
def test_an_idle_member_and_one_without_partitions_stay_live(admin, replicas, flags: tuple,
                                                             idle_s: float) -> None:
    # One partition, two members: one holds it and idles (nothing is produced), the other has
    # nothing assigned (classic: up/steady; KIP-848: up/init, answered by its coordinator), both
    # for longer than the liveness rule's session timeout.
    admin.create_topic(replicas.topic, 1)
    group = [replicas(f"r{i}", "--engine", "arrow", *flags) for i in range(2)]
    for rp in group:
        rp.wait_ready(60)
    answers: list[tuple[str, int, str]] = []
    deadline = time.monotonic() + idle_s
    while time.monotonic() < deadline:
        answers.extend((rp.replica_id, *rp.get("/healthz")) for rp in group)
        time.sleep(0.5)
    assert [a for a in answers if a[1] != 200] == []
    assert sorted(rp.metrics()["assigned_partitions"] for rp in group) == [0.0, 1.0]
    for rp in group:
        status, reason = rp.get("/healthz")
        assert status == 200 and reason.startswith(f"{rp.replica_id}: live: group healthy "), reason
        assert "(stats); statistics " in reason and "cgrp state 'up'" in reason, reason
        assert rp.metrics()["replica_live"] == 1.0
        assert "liveness_failed" not in rp.event_names()
