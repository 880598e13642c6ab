"""The kubelet's pods as replica events: what each observed change writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lagscale.contract.clock import FakeClock
from pytest_lagscale.contract.eventlog import EventLog, read_events
from pytest_lagscale.kube.kubelet_node import histogram
from pytest_lagscale.kube.pod_observer import PodObserver, PodRecord, stop_outcome
from pytest_lagscale.kube.pod_template import PORT_FILE


def _pod(*, running: str | None = None, terminated: dict | None = None, ready: bool = False,
         restarts: int = 0, deleting: bool = False) -> dict:
    state = ({"running": {"startedAt": "2026-11-28T00:00:01Z"}} if running
             else {"terminated": terminated} if terminated else {"waiting": {}})
    meta = {"name": "c-1", "uid": "u1"}
    if deleting:
        meta.update(deletionTimestamp="2026-11-28T00:01:00Z", deletionGracePeriodSeconds=30)
    return {"metadata": meta, "status": {
        "conditions": [{"type": "PodScheduled", "status": "True",
                        "lastTransitionTime": "2026-11-28T00:00:00Z"},
                       {"type": "Ready", "status": "True" if ready else "False",
                        "lastTransitionTime": "2026-11-28T00:00:04Z"}],
        "containerStatuses": [{"name": "consumer", "restartCount": restarts, "state": state,
                               "containerID": running or (terminated or {}).get("containerID")}]}}


@pytest.fixture
def observer(tmp_path: Path):
    clock = FakeClock()
    events = EventLog(tmp_path / "platform.events.jsonl", source="platform", clock=clock)
    obs = PodObserver(None, "ns", {"app": "c"}, tmp_path / "replicas", events,
                      tmp_path / "containerd.sock", clock=clock)
    yield obs, clock, tmp_path
    events.close()


def _names(tmp_path: Path) -> list[tuple[str, dict]]:
    path = tmp_path / "platform.events.jsonl"
    return [(e["event"], e) for e in read_events(path)] if path.exists() else []


def test_a_pods_life_writes_started_ready_terminating_stopped_in_order(observer) -> None:
    obs, clock, tmp = observer
    record = PodRecord("c-1", "u1")
    obs._update(record, _pod())
    assert _names(tmp) == [] and obs.replicas() == []
    obs._update(record, _pod(running="containerd://a"))
    (tmp / "replicas" / "c-1").mkdir(parents=True)
    (tmp / "replicas" / "c-1" / PORT_FILE).write_text("41000\n")
    clock.advance(3.5)
    obs._update(record, _pod(running="containerd://a", ready=True))
    obs._update(record, _pod(running="containerd://a", ready=True, deleting=True))
    obs._update(record, _pod(terminated={"exitCode": 0, "reason": "Completed",
                                         "containerID": "containerd://a"}, deleting=True))
    events = _names(tmp)
    assert [n for n, _ in events] == ["replica_started", "replica_ready", "replica_terminating",
                                      "replica_stopped"]
    started, ready, terminating, stopped = (e for _, e in events)
    assert started["container_id"] == "containerd://a" and started["replica_id"] == "c-1"
    assert ready["cold_start_s"] == 3.5
    assert terminating["grace_period_s"] == 30 and terminating["graceful"] is True
    assert stopped["outcome"] == "terminated" and stopped["exit_code"] == 0
    assert record.metrics_port == 41000
    assert record.to_json()["container_ids"] == ["containerd://a"]


def test_a_container_ended_in_its_pod_then_restarted_writes_exited_and_restarted(observer) -> None:
    obs, clock, tmp = observer
    record = PodRecord("c-1", "u1")
    obs._update(record, _pod(running="containerd://a", ready=True))
    obs._update(record, _pod(terminated={"exitCode": 137, "reason": "Error",
                                         "containerID": "containerd://a"}))
    obs._update(record, _pod(running="containerd://b", restarts=1))
    names = [n for n, _ in _names(tmp)]
    assert names == ["replica_started", "replica_ready", "replica_exited", "replica_restarted"]
    exited = _names(tmp)[2][1]
    restarted = _names(tmp)[3][1]
    assert exited["exit_code"] == 137
    assert restarted["container_id"] == "containerd://b" and restarted["restart_count"] == 1
    assert record.container_ids == ["containerd://a", "containerd://b"]
    assert record.restarts == 1


@pytest.mark.parametrize("code, outcome", [(0, "terminated"), (143, "terminated"),
                                           (137, "killed"), (None, "terminated")])
def test_stop_outcome_reads_the_exit_code_as_the_node_agent_names_it(code, outcome) -> None:
    assert stop_outcome(code) == outcome


def test_a_histogram_is_summed_over_its_series_from_the_text_exposition() -> None:
    text = "\n".join([
        "# HELP kubelet_pod_start_total_duration_seconds x",
        "# TYPE kubelet_pod_start_total_duration_seconds histogram",
        'kubelet_pod_start_total_duration_seconds_bucket{le="1"} 1',
        'kubelet_pod_start_total_duration_seconds_bucket{le="+Inf"} 3',
        "kubelet_pod_start_total_duration_seconds_sum 6.0",
        "kubelet_pod_start_total_duration_seconds_count 3", ""])
    assert histogram(text, "kubelet_pod_start_total_duration_seconds") == {
        "count": 3, "sum": 6.0, "mean": 2.0, "buckets": {"1": 1, "+Inf": 3}}
    assert histogram(text, "kubelet_pod_start_sli_duration_seconds") is None


def test_a_restart_between_two_lists_still_writes_the_exit_from_the_kubelets_last_state(
        observer) -> None:
    obs, clock, tmp = observer
    record = PodRecord("c-1", "u1")
    obs._update(record, _pod(running="containerd://a", ready=True))
    restarted = _pod(running="containerd://b", restarts=1)
    restarted["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"exitCode": 137, "reason": "Error", "containerID": "containerd://a"}}
    obs._update(record, restarted)
    events = _names(tmp)
    assert [n for n, _ in events] == ["replica_started", "replica_ready", "replica_exited",
                                      "replica_restarted"]
    assert events[2][1]["exit_code"] == 137 and events[2][1]["container_id"] == "containerd://a"
