"""Every exit path of ``lagscale run`` leaves no process behind; its terminal output stays whole.

Each harness test starts ``lagscale run`` on tests/data/spike-exit.yaml (spike at 5 s, arrow
engine) in its own session with ``LAGSCALE_RUN_ID`` set, so every process of the run is found by
that id in ``/proc/<pid>/environ``. Mid-spike (more replicas alive than minReplicaCount) the
harness is killed with SIGKILL or hung up with SIGHUP; nothing carrying the run id may be alive
30 s later. A finalizer reaps the run by id (``process.reap_run``) so a failing test leaves
nothing either. The TTY test runs the same command in a tmux pane and reads the screen.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pytest_lagscale import pidfiles
from pytest_lagscale.process import RUN_ID_ENV, ManagedProcess, group_members, pid_dir, reap_run

from ._kube import wait_for

pytestmark = pytest.mark.integration
PROFILE = Path(__file__).parents[1] / "data" / "spike-exit.yaml"
LAGSCALE = str(Path(sys.executable).parent / "lagscale")
MIN_REPLICAS = 1  # k8s/scaledobject-ci.yaml minReplicaCount
SCALED_OUT_WITHIN_S = 150.0  # broker start (10-20 s) + load start + two or three sync periods
GONE_WITHIN_S = 30.0


def run_processes(rid: str) -> dict[int, str]:
    """``{pid: command line}`` of the live processes carrying ``LAGSCALE_RUN_ID=rid``."""
    needle = f"{RUN_ID_ENV}={rid}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            found[int(entry.name)] = cmd.strip()[:200]
    return found


def replicas_of(rid: str) -> dict[int, str]:
    """The consumer replicas among :func:`run_processes` (``-m spark_consumer``)."""
    return {pid: cmd for pid, cmd in run_processes(rid).items() if "spark_consumer" in cmd}


def _describe(procs: dict[int, str]) -> str:
    return "\n".join(f"  pid {pid}: {cmd}" for pid, cmd in sorted(procs.items())) or "  -"


def _tail(path: Path, lines: int = 20) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() \
        else ""


@pytest.fixture
def rid() -> Iterator[str]:
    """A fresh run id; every process still carrying it is reaped at teardown."""
    value = f"exit{uuid.uuid4().hex[:8]}"
    yield value
    reap_run(value)


def start_harness(tmp_path: Path, rid: str, *extra: str) -> subprocess.Popen[bytes]:
    """``lagscale run`` on the exit profile (plus ``extra`` options), in its own session, output
    in tmp_path/harness.log."""
    env = {**os.environ, RUN_ID_ENV: rid}
    with open(tmp_path / "harness.log", "wb") as out:
        return subprocess.Popen(
            [LAGSCALE, "run", "--profile", str(PROFILE), "--engine", "arrow",
             "--out", str(tmp_path / "runs"), *extra],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)


def wait_scaled_out(harness: subprocess.Popen[bytes], rid: str, log: Path) -> dict[int, str]:
    """Wait until more than minReplicaCount replicas of the run are alive; returns them."""
    deadline = time.monotonic() + SCALED_OUT_WITHIN_S
    while time.monotonic() < deadline:
        replicas = replicas_of(rid)
        if len(replicas) > MIN_REPLICAS:
            return replicas
        assert harness.poll() is None, f"harness exited {harness.returncode}:\n{_tail(log)}"
        time.sleep(0.5)
    pytest.fail(f"no scale-out within {SCALED_OUT_WITHIN_S:.0f} s; replicas:\n"
                f"{_describe(replicas_of(rid))}\nharness log:\n{_tail(log)}")


def assert_run_gone(rid: str, within_s: float) -> None:
    """Fail with the survivors unless no process carrying ``rid`` is alive within ``within_s``."""
    started = time.monotonic()
    while (alive := run_processes(rid)) and time.monotonic() < started + within_s:
        time.sleep(0.25)
    assert not alive, f"processes of run {rid} alive {within_s:.0f} s after the harness " \
                      f"was stopped:\n{_describe(alive)}"
    print(f"run {rid}: no process left {time.monotonic() - started:.1f} s after the stop")


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGHUP], ids=["sigkill", "sighup"])
def test_harness_stopped_mid_spike_leaves_no_process_of_its_run(tmp_path, rid, signum) -> None:
    harness = start_harness(tmp_path, rid)
    try:
        replicas = wait_scaled_out(harness, rid, tmp_path / "harness.log")
        assert len(replicas) > MIN_REPLICAS
        os.kill(harness.pid, signum)
        harness.wait(GONE_WITHIN_S)
        assert_run_gone(rid, GONE_WITHIN_S)
        if signum == signal.SIGHUP:  # a clean end: the harness removed its pid directory
            assert not pid_dir(rid).exists(), sorted(p.name for p in pid_dir(rid).iterdir())
        else:  # what `lagscale cleanup` (no argument) decides from the harness record
            assert pidfiles.harness_gone(pid_dir(rid))
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()


def container_replicas() -> dict[int, str]:
    """Replica processes running in a container of a kubelet node (a ``kubepods`` cgroup)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if "/kubepods" not in (entry / "cgroup").read_text():
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "spark_consumer" in cmd:
            found[int(entry.name)] = cmd.strip()[:200]
    return found


def node_leftovers(rid: str) -> list[str]:
    """What a kubelet node of run ``rid`` left: its state directory, mounts, shims, containers
    (``kubepods`` cgroups), kubelet or containerd processes."""
    from pytest_lagscale.kube.kubelet_node import STATE_ROOT, leftovers

    state = STATE_ROOT / rid
    left = leftovers(state) + ([f"state directory {state}"] if state.exists() else [])
    left += [f"container replica pid {p}" for p in container_replicas()]
    left += [f"{name} pid {pid}" for pid, cmd in run_processes(rid).items()
             for name in ("kubelet", "containerd") if f"/{name} " in f"/{cmd} "]
    return left


_KUBELET = pytest.mark.xdist_group("kube-platform")
#: A clean stop's bound: the pods' drain within their grace period (30 s), then the node and
#: the control plane.
CLEAN_STOP_WITHIN_S = 90.0


@pytest.mark.parametrize("node, signum", [
    pytest.param("process", signal.SIGKILL, id="process-SIGKILL"),
    pytest.param("kubelet", signal.SIGKILL, marks=_KUBELET, id="kubelet-SIGKILL"),
    pytest.param("kubelet", signal.SIGTERM, marks=[_KUBELET, pytest.mark.by_hand],
                 id="kubelet-SIGTERM"),
    pytest.param("kubelet", signal.SIGHUP, marks=[_KUBELET, pytest.mark.by_hand],
                 id="kubelet-SIGHUP"),
    pytest.param("kubelet", -signal.SIGINT, marks=[_KUBELET, pytest.mark.by_hand],
                 id="kubelet-ctrl-c"),
])
def test_harness_killed_on_kubernetes_leaves_no_control_plane_or_pod_process(tmp_path, rid,
                                                                             node,
                                                                             signum) -> None:
    """``--platform kubernetes``: etcd, kube-apiserver, kube-controller-manager, KEDA and the
    pods die with a SIGKILLed harness. ``--node process``: the node agent's replica processes
    (parent-death signal, process groups). ``--node kubelet``: the kubelet and containerd die
    with it, the containers (owned by shims that outlive containerd) are removed by the node's
    guardian; no mount, shim, container or cgroup of the run is left. SIGTERM, SIGHUP and
    Ctrl-C (``-SIGINT``: SIGINT to the harness's process group, as a terminal sends it) are the
    harness's own stop, which leaves the same nothing (``by_hand``: about 30 s each). Skipped
    where the control plane or the kubelet node is not built."""
    from pytest_lagscale.kube import build
    from pytest_lagscale.platform.kubernetes import kubelet_node_problems

    reason = build.missing_reason()
    if reason is not None:
        pytest.skip(f"--platform kubernetes: {reason}")
    if node == "kubelet" and kubelet_node_problems():
        pytest.skip(f"--node kubelet: {'; '.join(kubelet_node_problems())}")
    harness = start_harness(tmp_path, rid, "--platform", "kubernetes", "--node", node)
    try:
        if node == "process":
            replicas = wait_scaled_out(harness, rid, tmp_path / "harness.log")
        else:
            replicas = wait_for(lambda: (r := container_replicas()) and len(r) > MIN_REPLICAS
                                and r, SCALED_OUT_WITHIN_S + 60,
                                f"more than {MIN_REPLICAS} container replicas; harness log:\n"
                                f"{_tail(tmp_path / 'harness.log')}")
        assert len(replicas) > MIN_REPLICAS
        names = " ".join(run_processes(rid).values())
        assert all(part in names for part in ("etcd", "kube-apiserver", "kube-controller-manager",
                                              "keda-operator", "keda-adapter"))
        if node == "kubelet":
            assert all(part in names for part in ("kubelet", "containerd", "kube-scheduler"))
        if signum < 0:
            os.killpg(harness.pid, -signum)
        else:
            os.kill(harness.pid, signum)
        harness.wait(GONE_WITHIN_S if signum == signal.SIGKILL else CLEAN_STOP_WITHIN_S)
        assert_run_gone(rid, GONE_WITHIN_S)
        if signum != signal.SIGKILL:  # a clean end: the harness removed its pid directory
            assert not pid_dir(rid).exists(), _tail(tmp_path / "harness.log")
        if node == "kubelet":
            started = time.monotonic()
            while (left := node_leftovers(rid)) and time.monotonic() < started + GONE_WITHIN_S:
                time.sleep(0.25)
            assert not left, f"the kubelet node of run {rid} left:\n" + "\n".join(left)
            mounts = Path("/proc/mounts").read_text()
            assert f"/run/lagscale/{rid}" not in mounts
            print(f"kubelet node of run {rid}: nothing left "
                  f"{time.monotonic() - started:.1f} s after the harness's exit")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        if node == "kubelet":
            from pytest_lagscale.kube.kubelet_node import reap_state

            reap_state(rid)


_START_CHILD = {
    "main-thread": "print(ManagedProcess('child', ['sleep', '120']).start().pid, flush=True)",
    # a worker thread that exits at once: the parent-death signal must not depend on it
    "worker-thread": ("t = threading.Thread(target=lambda: print(ManagedProcess('child', "
                      "['sleep', '120']).start().pid, flush=True)); t.start(); t.join()"),
}


@pytest.mark.parametrize("starter", sorted(_START_CHILD))
def test_children_started_by_any_thread_die_with_a_killed_harness(tmp_path, starter) -> None:
    script = ("import os, threading, time; from pytest_lagscale.process import ManagedProcess; "
              f"{_START_CHILD[starter]}; time.sleep(120)")
    env = {**os.environ, "LAGSCALE_CACHE_DIR": str(tmp_path)}
    harness = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                               text=True)
    child = int(harness.stdout.readline())
    try:
        assert group_members(child) == [child]
        harness.kill()
        harness.wait(10)
        # The child runs `sleep 120`, so gone within GONE_WITHIN_S means killed by the harness's
        # death: the parent-death signal, or the child's own exit when the harness died before
        # setpriv armed the signal (the harness is killed as soon as it prints the pid). Either
        # needs the child scheduled: setpriv, sh and the signal's handling can take seconds on a
        # loaded 2-core machine (pytest -n 2), so the wait is the other exit paths' 30 s, polled.
        started = time.monotonic()
        while group_members(child) and time.monotonic() < started + GONE_WITHIN_S:
            time.sleep(0.05)
        assert group_members(child) == [], \
            f"child {child} alive {GONE_WITHIN_S:.0f} s after its harness was SIGKILLed"
        print(f"child {child} gone {time.monotonic() - started:.1f} s after the harness's kill")
    finally:
        harness.stdout.close()
        if group_members(child):
            os.killpg(child, signal.SIGKILL)


def test_a_process_started_after_its_starter_thread_ended_stays_up(tmp_path) -> None:
    # The spawner thread, not the asking thread, is the child's parent: a short-lived thread's
    # exit must not fire the parent-death signal. The asking thread lives on for 0.5 s so that
    # setpriv has armed the signal before it exits (else the child is reparented first).
    holder: list[ManagedProcess] = []

    def start() -> None:
        holder.append(ManagedProcess("survivor", ["sleep", "30"],
                                     log_path=tmp_path / "s.log").start())
        time.sleep(0.5)

    t = threading.Thread(target=start)
    t.start()
    t.join()
    proc = holder[0]
    try:
        time.sleep(0.5)
        assert proc.running(), f"exit code {proc.poll()}"
    finally:
        assert proc.stop(5) == "terminated"


LIBRDKAFKA_SCRIPT = """
import sys
from confluent_kafka import Producer
from pytest_lagscale.contract.errors import BrokerError
from pytest_lagscale.kafka.admin import KafkaAdmin
from pytest_lagscale.kafka.client_log import librdkafka_config, librdkafka_log_to

def talk_to_a_closed_port(log=None):
    admin = KafkaAdmin("127.0.0.1:1", timeout_s=1.0)
    for _ in range(10):  # until the admin client has logged a FAIL (its thread may be slower)
        try:
            admin.describe_group("enrich")
        except (BrokerError, TimeoutError):  # which one depends on where the 1 s runs out
            pass
        if log is None or "FAIL [rdkafka#producer-1]" in open(log).read():
            break
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", **librdkafka_config()})
    producer.produce("events", b"x")
    producer.flush(1.0)

with librdkafka_log_to(sys.argv[1]):
    talk_to_a_closed_port(sys.argv[1])
talk_to_a_closed_port()  # outside the block: dropped, still not on stderr
print("done", flush=True)
"""


def test_librdkafka_lines_go_to_the_run_file_not_to_stderr(tmp_path) -> None:
    log = tmp_path / "run" / "librdkafka.log"
    out = subprocess.run([sys.executable, "-c", LIBRDKAFKA_SCRIPT, str(log)], capture_output=True,
                         text=True, timeout=60)
    assert out.stdout == "done\n", out.stderr
    assert out.stderr == ""
    lines = log.read_text().splitlines()
    fails = [line for line in lines if " ERROR FAIL [rdkafka#" in line]
    assert {re.search(r"\[(rdkafka#\w+-\d+)\]", line)[1] for line in fails} == \
        {"rdkafka#producer-1", "rdkafka#producer-2"}, "\n".join(lines)  # admin, then producer
    assert all("127.0.0.1:1" in line for line in fails)
    assert not any("rdkafka#producer-3" in line for line in lines)  # logged after the block


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-S", socket, *args], check=True, capture_output=True,
                          text=True, timeout=10).stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (scripts/bootstrap "
                    "installs it)")
def test_run_directory_and_run_id_lines_are_whole_on_a_terminal(tmp_path, rid) -> None:
    socket, out = str(tmp_path / "tmux.sock"), tmp_path / "r"  # server and socket are ours
    command = (f"env {RUN_ID_ENV}={rid} {LAGSCALE} run --profile {PROFILE} --engine arrow "
               f"--out {out}")
    _tmux(socket, "new-session", "-d", "-x", "160", "-y", "50", command)
    try:
        screen, deadline = "", time.monotonic() + SCALED_OUT_WITHIN_S
        # Wait until the live line shows the load running, so both were printed under it.
        while not re.search(r"lagscale\s+load\s", screen) and time.monotonic() < deadline:
            time.sleep(0.5)
            screen = _tmux(socket, "capture-pane", "-p")
        lines = [line.rstrip() for line in screen.splitlines()]
        run_dir = [line for line in lines
                   if re.fullmatch(rf"run directory: {re.escape(str(out))}/\S+", line)]
        run_id = [line for line in lines
                  if re.fullmatch(rf"run id: {rid} \(`lagscale cleanup {rid}` [^()]+\)", line)]
        assert run_dir and run_id, "screen:\n" + "\n".join(lines)
        _tmux(socket, "send-keys", "C-c")
        assert_run_gone(rid, GONE_WITHIN_S)
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=10)


#: A run whose broker dies must end within this many seconds of the death.
PART_DEATH_END_S = 30.0


def test_a_killed_broker_ends_the_run_within_30_s_with_exit_1_naming_it(tmp_path, rid) -> None:
    """The embedded broker SIGKILLed mid-spike cannot come back: the run ends with exit 1, one
    error line naming the broker, how it ended and its log tail, no process of the run left, and
    what was recorded up to then analysed in a benchmark.json marked incomplete. Before the
    part watch, such a run went on through its load and settle phases for 650 s and exited 0."""
    harness = start_harness(tmp_path, rid)
    log = tmp_path / "harness.log"
    try:
        wait_scaled_out(harness, rid, log)
        brokers = [pid for pid, cmd in run_processes(rid).items()  # the broker JVM (cut at 200)
                   if cmd.startswith("java ") and "lagscale-kafka-" in cmd]
        assert len(brokers) == 1, _describe(run_processes(rid))
        killed = time.monotonic()
        os.killpg(brokers[0], signal.SIGKILL)
        code = harness.wait(PART_DEATH_END_S + 30)
        ended_s = time.monotonic() - killed
        output = log.read_text(errors="replace")
        assert code == 1, f"exit {code}:\n{_tail(log)}"
        assert ended_s <= PART_DEATH_END_S, f"ended {ended_s:.1f} s after the kill:\n{_tail(log)}"
        errors = [line for line in output.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "kafka killed by SIGKILL" in errors[0], errors
        assert "marked incomplete" in errors[0], errors[0]
        assert_run_gone(rid, GONE_WITHIN_S)
        (benchmark,) = (tmp_path / "runs").glob("*/benchmark.json")
        import json

        doc = json.loads(benchmark.read_text())
        assert doc["incomplete"].startswith("kafka killed by SIGKILL")
        assert doc["settled"] is None and any(f["name"] == "part_died" for f in doc["faults"])
        # reconciled on the Spark started when the broker died, its JVM start overlapping the
        # recording and the stops (docs/experiments.md, "Faults")
        assert doc["run"]["reconciliation"]["engine"] == "spark", doc["run"]["reconciliation"]
        print(f"run ended {ended_s:.1f} s after the broker's kill: {errors[0][:200]}")
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
