"""The lag-per-slot halving policy end to end on the embedded broker: a step in load scales the
local Deployment of real consumer replicas out to maxParallelism and the recipe's halving
brings it back to minParallelism, one change per cooldown, and the store holds exactly what was
produced (0 lost, 0 duplicated).

The policy is k8s/lag-per-slot-ci.yaml with the numbers shrunk to a one-minute test: replicas
here run ``--engine arrow`` at 1,000 records/s (``--process-ms 10 --inflight 10``; 2.5x the ci
Deployment's), so lagPerSlot 5,000 and scaleDownLag 1,000 records, cooldownSeconds 8 and
pollingInterval 1. minParallelism 2 and maxParallelism 8 are the ci manifest's.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from pytest_lagscale.config.deployment import load_deployment
from pytest_lagscale.config.policy import parse_policy_manifest
from pytest_lagscale.control.policy.build import build_policy
from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.platform.autoscaler import LocalAutoscaler
from pytest_lagscale.platform.local import LocalDeployment, template_from_deployment
from pytest_lagscale.sources import BrokerLagSource
from spark_consumer.store import read_store
from tests.replica_helpers import store_counts

from ._load_step import drained, produce_step

pytestmark = pytest.mark.integration
TOPIC, GROUP, PARTITIONS = "events-lag-per-slot", "enrich-lag-per-slot", 8
K8S = Path(__file__).resolve().parents[2] / "k8s"
COOLDOWN_S = 8
SPEC = {"lagPerSlot": 5_000, "scaleDownLag": 1_000, "cooldownSeconds": COOLDOWN_S, "pollingInterval": 1}
#: The step's rate, records/s. The first change comes once the lag passes 2 x lagPerSlot and the
#: next one cooldownSeconds later; maxParallelism 8 needs more than 7 x lagPerSlot = 35,000
#: records then. At 6,000/s (2,000/s consumed) that second decision saw about 32,000-34,000 (a
#: clean-clone CI peaked at 7); at 9,000/s it sees about 58,000 (here: 2 -> 4 -> 8, then 4, 2).
STEP_RATE_PER_S = 9_000


def test_a_lag_step_scales_out_and_halves_back_processing_exactly_what_was_produced(
        kafka_cluster, tmp_path) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    admin = KafkaAdmin(bootstrap)
    admin.create_topic(TOPIC, PARTITIONS)
    doc = yaml.safe_load((K8S / "lag-per-slot-ci.yaml").read_text(encoding="utf-8"))
    doc["spec"].update(SPEC)
    config = parse_policy_manifest(doc, source="lag-per-slot-ci.yaml (test values)")
    template = template_from_deployment(
        load_deployment(K8S / "consumer-deployment.yaml"), bootstrap,
        flag_overrides={"--topic": TOPIC, "--group": GROUP, "--engine": "arrow",
                        "--process-ms": "10", "--inflight": "10", "--drain-timeout": "10"})
    stop_load = threading.Event()
    delivered: list[int] = []
    loader = threading.Thread(target=lambda: delivered.append(
        produce_step(bootstrap, TOPIC, stop_load, step_rate_per_s=STEP_RATE_PER_S)))
    events_path = tmp_path / "controller.events.jsonl"
    with LocalDeployment(template, tmp_path, graceful=True) as deployment:
        deployment.scale(config.min_parallelism)
        deployment.wait_ready(config.min_parallelism, within_s=60)
        scaler = LocalAutoscaler(build_policy(config), deployment, BrokerLagSource(admin, GROUP, TOPIC),
                                 events_path)
        with scaler.start(tick_s=0.25):
            loader.start()
            peak, started = 0, time.monotonic()
            try:
                while time.monotonic() - started < 90:  # out on the step, then halved back to min
                    peak = max(peak, deployment.desired_replicas)
                    if peak >= 4 and deployment.desired_replicas == config.min_parallelism:
                        break
                    time.sleep(0.25)
            finally:
                stop_load.set()
                loader.join(60)
            deadline = time.monotonic() + 60
            while not drained(admin, GROUP, TOPIC) and time.monotonic() < deadline:
                time.sleep(0.5)
        final = deployment.desired_replicas
        store = deployment.store_dir
    changes = [(s.now_s, s.replicas_before, s.replicas_after) for s in scaler.decisions
               if s.replicas_after != s.replicas_before]
    produced = sum(admin.end_offsets(TOPIC).values())
    table = read_store(store)
    distinct, dups = store_counts(zip(table.column("partition").to_pylist(),
                                      table.column("offset").to_pylist()))
    print(f"lag-per-slot step: changes {[(round(t - changes[0][0], 1), a, b) for t, a, b in changes]}, "
          f"peak {peak}, final {final}, produced {produced} (delivered {delivered}), "
          f"processed {distinct}, duplicated {dups}")

    assert peak == config.max_parallelism, f"no scale-out to maxParallelism on the step: peak {peak}"
    assert final == config.min_parallelism, f"not halved back to minParallelism: {final}"
    ups = [c for c in changes if c[2] > c[1]]
    downs = [c for c in changes if c[2] < c[1]]
    assert changes == ups + downs, changes  # out on the step, then only down
    assert [after for _, before, after in downs] == [max(before // 2, 2) for _, before, _ in downs]
    assert len(downs) >= 2, f"expected the halving 8 -> 4 -> 2: {changes}"
    assert all(b[0] - a[0] >= COOLDOWN_S for a, b in zip(changes, changes[1:])), changes
    assert (produced, distinct, dups) == (delivered[0], produced, 0), "processed != produced"

    steps = [e for e in read_events(events_path) if e["event"] == "lag_per_slot"]
    assert {"ScaleUp", "ScaleDownHalved"} <= {e["reason"] for e in steps}
    assert all(e["message"] for e in steps)
