"""LocalDeployment with real processes: readiness, newest-first scale-down, grace, replacement,
liveness restarts.

The replica here is a small probe program (tests/integration/programs/probe_replica.py) so the
platform's own behaviour is observable in seconds; the consumer replica itself is exercised in
tests/integration/test_consumer*.py and through the autoscaler tests.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pytest_lagscale.contract.eventlog import read_events
from pytest_lagscale.contract.errors import ReplicaError
from pytest_lagscale.platform.local import LivenessCheck, LocalDeployment, ReplicaTemplate
from pytest_lagscale.process import group_members

pytestmark = pytest.mark.integration
PROGRAM = str(Path(__file__).parent / "programs" / "probe_replica.py")


def _template(grace_s: float = 5.0, **env: str) -> ReplicaTemplate:
    return ReplicaTemplate(argv=(sys.executable, PROGRAM), env=env,
                           termination_grace_period_s=grace_s, readiness_period_s=0.1)


def _events(run_dir: Path, name: str) -> list[dict]:
    return [e for e in read_events(run_dir / "platform.events.jsonl") if e["event"] == name]


def test_scale_up_waits_for_readiness_then_scale_down_removes_newest_first(tmp_path) -> None:
    with LocalDeployment(_template(READY_AFTER_S="0.5"), tmp_path) as deployment:
        deployment.scale(3)
        assert deployment.current_replicas == 3
        assert deployment.ready_replicas == 0  # not ready before the probe passes
        deployment.wait_ready(3, within_s=20)
        first_ids = [r.replica_id for r in deployment.replicas()]
        assert first_ids == ["replica-0001", "replica-0002", "replica-0003"]
        pids = [r.process.pid for r in deployment.replicas()]
        deployment.scale(1)
        assert [r.replica_id for r in deployment.replicas()] == ["replica-0001"]
        deployment.wait_terminated(within_s=20)
        assert [group_members(p) for p in pids[1:]] == [[], []]
        stopped = {e["replica_id"]: e["outcome"] for e in _events(tmp_path, "replica_stopped")}
        assert stopped == {"replica-0003": "terminated", "replica-0002": "terminated"}
        ready = _events(tmp_path, "replica_ready")
        assert len(ready) == 3 and all(e["cold_start_s"] >= 0.5 for e in ready)
    assert all(group_members(p) == [] for p in pids)


def test_replica_ignoring_sigterm_is_killed_after_termination_grace_period(tmp_path) -> None:
    with LocalDeployment(_template(grace_s=0.5, IGNORE_SIGTERM="1"), tmp_path) as deployment:
        deployment.scale(1)
        deployment.wait_ready(1, within_s=20)
        deployment.scale(0)
        deployment.wait_terminated(within_s=10)
    assert [e["outcome"] for e in _events(tmp_path, "replica_stopped")] == ["killed"]


def test_graceful_off_kills_without_sigterm(tmp_path) -> None:
    with LocalDeployment(_template(), tmp_path, graceful=False) as deployment:
        deployment.scale(1)
        deployment.wait_ready(1, within_s=20)
        replica = deployment.replicas()[0]
        deployment.scale(0)
        deployment.wait_terminated(within_s=10)
    assert replica.process.popen.returncode == -9
    assert not (replica.directory / "events.jsonl").exists()  # it never saw SIGTERM


def test_crashed_replica_is_replaced_like_a_replicaset_does(tmp_path) -> None:
    with LocalDeployment(_template(EXIT_AFTER_S="1.0"), tmp_path) as deployment:
        deployment.scale(1)
        deadline = time.monotonic() + 20
        while not _events(tmp_path, "replica_exited") and time.monotonic() < deadline:
            time.sleep(0.1)
        exited = _events(tmp_path, "replica_exited")
        assert exited and exited[0]["exit_code"] == 3
        assert deployment.current_replicas == 1
        assert deployment.replicas()[0].replica_id != exited[0]["replica_id"]


def test_a_replica_killed_by_sigsegv_is_reported_with_its_signal_and_python_stack(
        tmp_path, caplog, monkeypatch) -> None:
    monkeypatch.delenv("PYTHONFAULTHANDLER", raising=False)  # only the platform may turn it on
    with LocalDeployment(_template(SEGFAULT_AFTER_S="0.5"), tmp_path) as deployment:
        deployment.scale(1)
        deadline = time.monotonic() + 20
        while not _events(tmp_path, "replica_exited") and time.monotonic() < deadline:
            time.sleep(0.1)
        deployment.scale(0)
    exited = _events(tmp_path, "replica_exited")[0]
    assert (exited["exit_code"], exited["signal"]) == (-11, "SIGSEGV")
    assert "Fatal Python error: Segmentation fault" in exited["log_tail"]
    assert any(line.strip().startswith(f'File "{PROGRAM}", line ')
               and line.strip().endswith(" in segfault") for line in exited["log_tail"])
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(w.startswith(f"{exited['replica_id']}: killed by SIGSEGV (exit status -11; 139 "
                            f"in a shell); log ") for w in warnings), warnings


def test_wait_ready_timeout_names_each_replica_and_its_log(tmp_path) -> None:
    with LocalDeployment(_template(READY_AFTER_S="60"), tmp_path) as deployment:
        deployment.scale(1)
        with pytest.raises(ReplicaError, match=r"(?s)lagscale-consumer: 0 of 1 replicas ready "
                                               r"after 1 s; .*replica-0001: not ready \(running\)"):
            deployment.wait_ready(1, within_s=1)


def test_a_spark_template_gets_its_image_built_before_the_first_replica(tmp_path) -> None:
    """The local platform runs the replica image's build step (the CDS training) once, before
    any replica starts, and records where the archive is: every Spark replica then maps it."""
    template = ReplicaTemplate(argv=(sys.executable, "-m", "spark_consumer", "--engine=spark"))
    with LocalDeployment(template, tmp_path) as deployment:
        image = deployment.image
        assert image is not None and image.engine == "spark"
        assert image.cds_archive and Path(image.cds_archive).is_file(), image
        assert image.cds_archive.endswith(".jsa")
        assert deployment.current_replicas == 0
    (event,) = _events(tmp_path, "image_prepared")
    assert event["cds_archive"] == image.cds_archive and event["duration_s"] == image.duration_s
    assert (tmp_path / "image-build.log").is_file()


# -- liveness ----------------------------------------------------------------------------------
def _live_template(period_s: float = 0.2, threshold: int = 3, timeout_s: float = 0.5,
                   initial_delay_s: float = 1.0, **env: str) -> ReplicaTemplate:
    """Probes from 1 s after the start: a probe before the stand-in listens is refused, and on
    a loaded machine its start can outlast a few 0.2 s periods."""
    return ReplicaTemplate(argv=(sys.executable, PROGRAM), env=env, termination_grace_period_s=5.0,
                           readiness_period_s=0.1,
                           liveness=LivenessCheck(path="/healthz", period_s=period_s,
                                                  failure_threshold=threshold, timeout_s=timeout_s,
                                                  initial_delay_s=initial_delay_s))


def _replica_events(run_dir: Path, replica_id: str, name: str) -> list[dict]:
    path = run_dir / "replicas" / replica_id / "events.jsonl"
    return [e for e in read_events(path) if e["event"] == name] if path.exists() else []


def _restart_of(run_dir: Path, replica_id: str, deployment: LocalDeployment,
                within_s: float = 20.0) -> tuple[dict, list[int]]:
    """Wait for the replacement of ``replica_id`` to be ready, sampling current_replicas."""
    counts: list[int] = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        counts.append(deployment.current_replicas)
        started = [e for e in _events(run_dir, "replica_started") if e["restart_of"] == replica_id]
        ready = {e["replica_id"] for e in _events(run_dir, "replica_ready")}
        if started and started[0]["replica_id"] in ready:
            return started[0], counts
        time.sleep(0.02)
    raise AssertionError(f"{replica_id} was not replaced and ready within {within_s} s")


def test_a_replica_failing_its_liveness_probe_is_restarted_in_its_slot(tmp_path) -> None:
    # replica-0001's /healthz answers 503 from 2 s on (as a replica whose group session broke
    # for good); replica-0002 stays healthy.
    template = _live_template(HEALTHZ_FAIL_AFTER_S="2.0", HEALTHZ_FAIL_REPLICA="replica-0001")
    with LocalDeployment(template, tmp_path) as deployment:
        deployment.scale(2)
        deployment.wait_ready(2, within_s=20)
        started, counts = _restart_of(tmp_path, "replica-0001", deployment)
        assert [(r.replica_id, r.ordinal, r.restarts) for r in deployment.replicas()] == [
            (started["replica_id"], 0, 1), ("replica-0002", 1, 0)]  # same slot, same place
        assert deployment.ready_replicas == 2
        time.sleep(1.0)  # the replacement (a new id) stays healthy: no second restart
    assert set(counts) == {2}  # a container restart: the pod count neither dips nor doubles
    failed = _events(tmp_path, "replica_liveness_failed")
    assert [(e["replica_id"], e["failures"], e["reason"], e["ordinal"]) for e in failed] == [
        ("replica-0001", 3, "HTTP 503: replica-0001: not live: group session broken (test)", 0)]
    assert (started["ordinal"], started["pod_name"], started["restarts"]) == (
        0, "lagscale-consumer-0", 1)
    assert [e["replica_id"] for e in _events(tmp_path, "replica_started")] == [
        "replica-0001", "replica-0002", started["replica_id"]]  # no double start
    assert _events(tmp_path, "replica_exited") == []  # the kill is not taken for a crash
    stopped = _events(tmp_path, "replica_stopped")
    assert [(e["replica_id"], e["outcome"]) for e in stopped if e.get("reason") == "liveness"] \
        == [("replica-0001", "terminated")]
    assert _replica_events(tmp_path, "replica-0001", "sigterm")  # SIGTERM first, a drain
    # Detection: /healthz failing (2 s after the start) -> restart decided -> replacement ready.
    ready = {e["replica_id"]: e["monotonic_s"] for e in _events(tmp_path, "replica_ready")}
    t_start = next(e["monotonic_s"] for e in _events(tmp_path, "replica_started")
                   if e["replica_id"] == "replica-0001")
    detect_s = failed[0]["monotonic_s"] - (t_start + 2.0)
    recover_s = ready[started["replica_id"]] - failed[0]["monotonic_s"]
    print(f"liveness: failing from 2.0 s, restart decided {detect_s:.2f} s later "
          f"(failing_for_s {failed[0]['failing_for_s']}), replacement ready {recover_s:.2f} s "
          "after that")
    # 3 failures 0.2 s apart (on a 0.1 s monitor tick), and no restart before the third
    assert failed[0]["failing_for_s"] >= 0.25 and detect_s < 3.0


def test_a_liveness_probe_that_gets_no_answer_fails_too(tmp_path) -> None:
    template = _live_template(timeout_s=0.3, HEALTHZ_FAIL_AFTER_S="0.5", HEALTHZ_FAIL="hang")
    with LocalDeployment(template, tmp_path) as deployment:
        deployment.scale(1)
        deployment.wait_ready(1, within_s=20)
        _restart_of(tmp_path, "replica-0001", deployment)
    failed = _events(tmp_path, "replica_liveness_failed")[0]
    assert failed["replica_id"] == "replica-0001" and failed["failures"] == 3
    assert failed["reason"] == "no answer within 0.3 s"


def test_a_replica_whose_healthz_answers_200_is_never_restarted(tmp_path) -> None:
    template = _live_template(period_s=0.1, threshold=1)  # the strictest probe there is
    with LocalDeployment(template, tmp_path) as deployment:
        deployment.scale(2)
        deployment.wait_ready(2, within_s=20)
        time.sleep(2.0)
        assert [r.replica_id for r in deployment.replicas()] == ["replica-0001", "replica-0002"]
    assert _events(tmp_path, "replica_liveness_failed") == []
    probes = _replica_events(tmp_path, "replica-0001", "healthz")
    assert len(probes) >= 10 and not any(e["failing"] for e in probes)  # it was probed
