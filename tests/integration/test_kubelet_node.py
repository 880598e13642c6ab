"""The kubelet node on the real local control plane: containerd 1.6 + runc (Debian's), the
kubelet and kube-scheduler v1.36.3 built from the pin. Checked: the Node registers and is Ready;
a hostNetwork pod of the locally built sandbox image is scheduled (not bound by hand), runs as a
container (a ``containerd://`` id) and is Ready; deleting it SIGTERMs the container, which exits
0 within its grace period; after the node stops no kubelet, containerd, shim or container
process, no mount under its state directory and no ``kubepods`` cgroup is left.

Skipped, naming the bootstrap command, when the binaries, containerd or runc are missing.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from pytest_lagscale.kafka.embedded import free_port
from pytest_lagscale.kube import build, pins
from pytest_lagscale.kube.commands import HpaTiming
from pytest_lagscale.kube.control_plane import keda_control_plane
from pytest_lagscale.kube.kubelet_node import KubeletNode, leftovers
from pytest_lagscale.kube.node_commands import SANDBOX_IMAGE
from pytest_lagscale.process import run_id

from ._kube import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kube-platform")]
NAMESPACE = "lagscale-node-test"


@pytest.fixture
def node(tmp_path):
    reason = (build.missing_reason() or build.missing_reason(components=pins.NODE)
              or next((f"{tool} not on PATH; run {build.BOOTSTRAP_COMMAND}"
                       for tool in ("containerd", "runc", "ctr", "umoci", "gcc")
                       if shutil.which(tool) is None), None))
    if reason is not None:
        pytest.skip(f"kubelet node: {reason}")
    if os.geteuid() != 0:
        pytest.skip("kubelet node: runs containers as root only")
    plane = keda_control_plane(tmp_path / "kube", HpaTiming(), NAMESPACE)
    with plane:
        kubelet_node = KubeletNode(plane, run_id(), free_port=free_port)
        with kubelet_node:
            yield plane, kubelet_node
            pids = [p.pid for _, p in kubelet_node.processes()]
        state_dir = kubelet_node.layout.state_dir
    assert leftovers(state_dir) == []
    assert not [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    """``pid`` runs (a zombie waiting for its parent to reap it does not)."""
    try:
        return "\tZ" not in next(line for line in open(f"/proc/{pid}/status")
                                 if line.startswith("State:"))
    except (OSError, StopIteration):
        return False


def _pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sandbox-only"},
            "spec": {"hostNetwork": True, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 10,
                     "containers": [{"name": "pause", "image": SANDBOX_IMAGE,
                                     "imagePullPolicy": "Never"}]}}


def test_a_pod_runs_as_a_container_through_the_kubelet_and_stops_on_sigterm(node) -> None:
    from kubernetes import client, config

    plane, kubelet_node = node
    api = config.new_client_from_config(config_file=plane.layout.kubeconfig("admin"))
    core = client.CoreV1Api(api)
    nodes = core.list_node().items
    assert [n.metadata.name for n in nodes] == [kubelet_node.layout.node_name]
    created = time.monotonic()
    core.create_namespaced_pod(NAMESPACE, _pod())

    def ready():
        pod = core.read_namespaced_pod("sandbox-only", NAMESPACE)
        ok = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        return pod if ok else None
    pod = wait_for(ready, 60, "the pod Ready")
    ready_s = time.monotonic() - created
    assert pod.spec.node_name == kubelet_node.layout.node_name  # bound by the scheduler
    status = pod.status.container_statuses[0]
    assert status.container_id.startswith("containerd://"), status.container_id
    print(f"pod create -> Ready: {ready_s:.2f} s")

    core.delete_namespaced_pod("sandbox-only", NAMESPACE)
    deleted = time.monotonic()

    def gone():
        try:
            core.read_namespaced_pod("sandbox-only", NAMESPACE)
        except client.exceptions.ApiException as exc:
            return exc.status == 404
        return False
    wait_for(gone, 30, "the pod deleted by the kubelet after its container stopped")
    # the pause program exits 0 on SIGTERM: the kubelet did not need its 10 s grace period
    assert time.monotonic() - deleted < 10


CHILD = r'''
import sys, time
from pathlib import Path
from kubernetes import client, config
from pytest_lagscale.kafka.embedded import free_port
from pytest_lagscale.kube.commands import HpaTiming
from pytest_lagscale.kube.control_plane import keda_control_plane
from pytest_lagscale.kube.kubelet_node import KubeletNode
from pytest_lagscale.process import run_id
plane = keda_control_plane(Path(sys.argv[1]), HpaTiming(), "orphans").start()
node = KubeletNode(plane, run_id(), free_port=free_port).start()
core = client.CoreV1Api(config.new_client_from_config(config_file=plane.layout.kubeconfig("admin")))
core.create_namespaced_pod("orphans", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
    "spec": {"hostNetwork": True, "automountServiceAccountToken": False, "containers": [
        {"name": "pause", "image": sys.argv[2], "imagePullPolicy": "Never"}]}})
while not any(c.type == "Ready" and c.status == "True"
              for c in core.read_namespaced_pod("p", "orphans").status.conditions or []):
    time.sleep(0.2)
print("READY", node.layout.state_dir, flush=True)
time.sleep(600)
'''


def _guardian_pids(rid: str) -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()
            and _cmdline(e).endswith(f"pytest_lagscale.kube.node_guardian {rid}")]


def _cmdline(entry: Path) -> str:
    try:
        return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


@pytest.mark.parametrize("reaper", ["guardian", "cleanup"])
def test_a_sigkilled_harness_leaves_no_container(tmp_path, reaper) -> None:
    """The kubelet and containerd die with a SIGKILLed harness, the containers (their shims
    outlive containerd) do not: the node's guardian reaps them; with the guardian killed first,
    ``lagscale cleanup <run id>`` does."""
    import signal
    import subprocess
    import sys
    import uuid

    from pytest_lagscale.kube.kubelet_node import shim_pids

    reason = (build.missing_reason() or build.missing_reason(components=pins.NODE)
              or next((f"{tool} not on PATH" for tool in ("containerd", "runc", "ctr")
                       if shutil.which(tool) is None), None))
    if reason is not None or os.geteuid() != 0:
        pytest.skip(f"kubelet node: {reason or 'runs containers as root only'}")
    rid = uuid.uuid4().hex[:12]
    env = {**os.environ, "LAGSCALE_RUN_ID": rid}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "kube"), SANDBOX_IMAGE],
                             stdout=subprocess.PIPE, stderr=open(tmp_path / "child.log", "w"),
                             text=True, env=env)
    try:
        line = child.stdout.readline()
        assert line.startswith("READY"), (tmp_path / "child.log").read_text()[-2000:]
        state = Path(line.split()[1])
        shims = shim_pids(state / "containerd.sock")
        assert shims, "the pod's shim runs"
        containers = [int(p) for pid in shims
                      for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        guardians = _guardian_pids(rid)
        assert len(guardians) == 1, "one guardian per node"
        if reaper == "cleanup":
            os.kill(guardians[0], signal.SIGKILL)
            wait_for(lambda: not _alive(guardians[0]), 10, "the guardian killed")
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        if reaper == "guardian":
            wait_for(lambda: not [p for p in shims + containers if _alive(p)], 30,
                     "the guardian removed the shims and containers of the killed harness")
            wait_for(lambda: not state.exists(), 10, "the guardian removed the state directory")
            assert "kubepods cgroup(s)" in (tmp_path / "kube" / "node" / "guardian.log"
                                            ).read_text()
        else:
            time.sleep(2)  # the kubelet and containerd die of their parent-death signal
            assert [p for p in containers if _alive(p)], \
                "without its guardian the container outlives the harness until cleanup"
            lagscale = Path(sys.executable).with_name("lagscale")
            out = subprocess.run([str(lagscale), "cleanup", rid], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0, out.stderr
            # the shim carries the run id and is reaped with the run's processes; the node's
            # part kills the containers through their cgroups and unmounts their rootfs
            assert "kubepods cgroup(s)" in out.stdout and "unmounted" in out.stdout, out.stdout
            wait_for(lambda: not [p for p in shims + containers if _alive(p)], 10,
                     "the shims and containers of the killed harness's node gone")
        assert leftovers(state) == [] and not state.exists()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_replica_image_runs_the_replica_program_through_the_kubelet(node) -> None:
    """The replica's OCI image (scripts/build-replica-image; its base is bootstrap --with-kube's:
    skipped, naming it, when absent), imported into the node's containerd, runs the replica's
    Python with pyspark, confluent-kafka and the CDS archive in a pod of its own."""
    from kubernetes import client, config

    from pytest_lagscale.kube import images, replica_image

    try:
        archive = replica_image.build(base=False)
    except replica_image.BaseMissing as exc:
        pytest.skip(str(exc))
    plane, kubelet_node = node
    started = time.monotonic()
    images.import_archive(kubelet_node.layout.socket, archive, replica_image.IMAGE_NAME)
    print(f"replica image imported in {time.monotonic() - started:.1f} s")
    core = client.CoreV1Api(config.new_client_from_config(
        config_file=plane.layout.kubeconfig("admin")))
    check = ("import os, pyspark, confluent_kafka, spark_consumer; "
             "assert pyspark.__version__ == '4.3.0'; "
             "assert any(p.suffix == '.jsa' for p in __import__('pathlib').Path("
             "'/root/.cache/pytest-lagscale').rglob('*.jsa')), 'no CDS archive'")
    core.create_namespaced_pod(NAMESPACE, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "replica-image"},
        "spec": {"hostNetwork": True, "automountServiceAccountToken": False,
                 "restartPolicy": "Never",
                 "containers": [{"name": "replica", "imagePullPolicy": "Never",
                                 "image": replica_image.image_ref("0.1.0"),
                                 "command": ["python", "-c", check]}]}})
    pod = wait_for(lambda: (lambda p: p if p.status.phase in ("Succeeded", "Failed") else None)(
        core.read_namespaced_pod("replica-image", NAMESPACE)), 120, "the replica pod ended")
    status = pod.status.container_statuses[0]
    assert (pod.status.phase, status.state.terminated.exit_code) == ("Succeeded", 0), status
    assert status.container_id.startswith("containerd://")
    assert status.image.endswith("lagscale-replica:0.1.0")
