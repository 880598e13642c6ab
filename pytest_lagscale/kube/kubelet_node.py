"""The kubelet node of a run: containerd, a real kubelet and kube-scheduler, and their cleanup.

:class:`KubeletNode` starts, beside a running :class:`~.control_plane.ControlPlane`: containerd
with the run's configuration (:mod:`.node_commands`; the sandbox image imported from
:mod:`.images`), kube-scheduler, and the kubelet, each ready before the next; then waits for
the Node to be ``Ready``. Pods scheduled to it run as containers (runc). One kubelet per host
at a time (it hard-codes ``/var/lib/kubelet/device-plugins`` and ``/var/log/containers``): a
second run is refused while the first holds the host lock.

:meth:`KubeletNode.stop` leaves nothing of the node, on every exit path that reaches it: the
kubelet and the scheduler stop, every container of containerd's ``k8s.io`` namespace is killed
and deleted (``ctr``), containerd stops, a shim still running is killed, the bridge of a ``bridge`` pod
network is deleted, every mount under the
node's state directory is unmounted (deepest first), the ``kubepods`` cgroups are removed
depth-first, and the state directory goes. :func:`leftovers` lists what would remain.

Source: kubernetes.io/docs/concepts/architecture/nodes ("Node status": the Ready condition);
containerd v1.6 cmd/ctr (``tasks kill``, ``tasks delete``, ``containers delete``).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from ..contract.clock import Clock, RealClock
from ..contract.errors import LagscaleError
from ..contract.paths import cache_dir
from ..lifecycle import StartStop
from ..wait import wait_ready
from . import build, images, node_commands as nc, pins
from .commands import Command

@dataclass(frozen=True)
class NodeImage:
    """The replica image as :meth:`KubeletNode.start_with_image` gave it to the node: its
    reference, the OCI archive, the build's and the import's seconds (None: already there)."""

    ref: str
    archive: Path
    build_s: float
    import_s: float | None


STATE_ROOT = Path("/run/lagscale")
HOST_LOCK = STATE_ROOT / "kubelet-node.lock"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBEPODS = "kubepods"


class KubeletNode(StartStop):
    """containerd, kube-scheduler and the kubelet of one run, on the run's control plane.

    Args:
        control_plane: the started :class:`~.control_plane.ControlPlane` (its layout gives the
            PKI, the kubeconfigs of ``kubelet`` and ``scheduler`` and the admin client).
        run_id: the run's id (the state directory ``/run/lagscale/<run id>``).
        free_port: ``() -> int`` picking loopback ports.
        clock: time source.
        ready_timeout_s: seconds each part (and the Node) may take to become ready.
        pod_network: ``loopback`` (a run's node: hostNetwork pods) or ``bridge`` (pods get
            addresses on :data:`~.node_commands.BRIDGE_NAME` and reach this host at
            :data:`~.node_commands.BRIDGE_GATEWAY`: a cluster with a pod network).

    Raises (from :meth:`start`):
        LagscaleError: the node's binaries are not built (names the bootstrap command),
            containerd or ctr is missing, another run's kubelet node holds the host, or a part
            exited before it was ready (its log's tail).
        ReadinessTimeout: a part, or the Node's Ready condition, not ready in time.
    """

    def __init__(self, control_plane: Any, run_id: str, *, free_port: Callable[[], int],
                 clock: Clock | None = None, ready_timeout_s: float = READY_TIMEOUT_S,
                 pod_network: str = "loopback"):
        if pod_network not in nc.POD_NETWORKS:
            raise ValueError(f"pod_network {pod_network!r}: one of {', '.join(nc.POD_NETWORKS)}")
        self.pod_network = pod_network
        self.control_plane = control_plane
        self.run_id = run_id
        self.free_port = free_port
        self.clock = clock or RealClock()
        self.ready_timeout_s = ready_timeout_s
        self.layout: nc.NodeLayout | None = None
        self.ready_s: dict[str, float] = {}
        self.node_ready_s: float | None = None
        self._processes: list[tuple[str, Any]] = []
        self._lock: Any = None
        self._guardian: Any = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "KubeletNode":
        if self.layout is not None:
            return self
        problems = node_tool_problems()
        if problems:
            raise LagscaleError(f"kubelet node: {problems[0]}")
        self._take_host()
        from . import node_guardian

        self._guardian = node_guardian.start(
            self.run_id, Path(self.control_plane.layout.run_dir) / "node" / "guardian.log")
        try:
            self._start_parts()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float | None = None) -> dict[str, str]:
        """Stop the node and remove every container, mount and cgroup of it; returns name ->
        how each process stopped. Idempotent."""
        outcomes: dict[str, str] = {}
        grace = STOP_TIMEOUT_S if timeout_s is None else timeout_s
        by_name = dict(self._processes)
        for name in ("kubelet", "kube-scheduler"):
            if name in by_name:
                outcomes[name] = by_name[name].stop(grace)
        if self.layout is not None and "containerd" in by_name:
            remove_containers(self.layout.socket)
        if "containerd" in by_name:
            outcomes["containerd"] = by_name["containerd"].stop(grace)
        self._processes.clear()
        if self.layout is not None:
            kill_shims(self.layout.socket)
            if self.pod_network == "bridge":
                delete_bridge()
            remove_pod_logs()
            unmount_under(self.layout.state_dir)
            remove_kubepods_cgroups()
            shutil.rmtree(self.layout.state_dir, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        if self._guardian is not None:
            self._guardian.release()
            self._guardian = None
        return outcomes

    def start_with_image(self, build_log: Path) -> NodeImage:
        """Build (or find) the replica image (:func:`~.replica_image.build`, its output
        appended to ``build_log``), start the node and import the image into its containerd;
        the node is stopped again if the import fails.

        Raises:
            LagscaleError: from the build (the image's base not built: ``BaseMissing``), from
                :meth:`start`, or from the import.
        """
        from importlib.metadata import version

        from . import replica_image

        started = self.clock.now()
        build_log.parent.mkdir(parents=True, exist_ok=True)
        with open(build_log, "a") as log:
            archive = replica_image.build(base=False, out=log)
        build_s = round(self.clock.now() - started, 3)
        self.start()
        tag = version("pytest-lagscale")
        try:
            import_s = self.import_image(archive, replica_image.IMAGE_NAME, tag)
        except BaseException:
            self.stop()
            raise
        return NodeImage(replica_image.image_ref(tag), archive, build_s, import_s)

    def import_image(self, archive: Path, base_name: str, tag: str) -> float | None:
        """Load an OCI archive into the node's containerd unless it has it already
        (:func:`~.images.ensure_image`); returns the import's seconds, None when skipped."""
        assert self.layout is not None, "start() first"
        started = self.clock.now()
        if not images.ensure_image(self.layout.socket, archive, base_name, tag):
            return None
        return round(self.clock.now() - started, 3)

    def metrics_text(self, timeout_s: float = 5.0) -> str:
        """The kubelet's ``/metrics`` (its HTTPS port, the admin's client certificate; the
        kubelet's self-signed serving certificate is the trust anchor).

        Raises:
            OSError: the kubelet does not answer.
        """
        import ssl
        import urllib.request

        assert self.layout is not None, "start() first"
        pki = self.control_plane.layout.pki
        ctx = ssl.create_default_context(
            cafile=str(self.layout.kubelet_root / "pki" / "kubelet.crt"))
        ctx.check_hostname = False
        ctx.load_cert_chain(str(pki.crt("admin")), str(pki.key("admin")))
        url = f"https://{nc.LOOPBACK_IP}:{self.layout.kubelet_port}/metrics"
        with urllib.request.urlopen(url, timeout=timeout_s, context=ctx) as resp:
            return resp.read().decode()

    def processes(self) -> list[tuple[str, Any]]:
        """``(name, process)`` of every process started and not stopped, oldest first."""
        return list(self._processes)

    # -- start ----------------------------------------------------------------------------
    def _take_host(self) -> None:
        lock = _host_free()
        if lock is None:
            holder = HOST_LOCK.read_text().strip() or "unknown"
            raise LagscaleError(f"kubelet node: another run's kubelet node holds this host "
                                f"({holder}); one kubelet per host at a time: wait for it, or "
                                "run `lagscale cleanup` if its harness is gone")
        lock.seek(0)
        lock.truncate()
        lock.write(f"run {self.run_id}, pid {os.getpid()}\n")
        lock.flush()
        self._lock = lock

    def _start_parts(self) -> None:
        from kubernetes import config

        from ..process import ManagedProcess
        from .readiness import probe

        plane = self.control_plane.layout
        installs = build.find_installed("kubernetes-node")
        assert installs is not None
        node_dir = Path(plane.run_dir) / "node"
        layout = self.layout = nc.NodeLayout(
            node_dir=node_dir, state_dir=STATE_ROOT / self.run_id,
            containerd_root=cache_dir() / "containerd",
            kubelet_port=self.free_port(), kubelet_healthz_port=self.free_port(),
            scheduler_port=self.free_port())
        layout.cni_conf_dir.mkdir(parents=True, exist_ok=True)
        layout.state_dir.mkdir(parents=True, exist_ok=True)
        layout.containerd_config_path.write_text(nc.containerd_config(layout))
        (layout.cni_conf_dir / f"10-{self.pod_network}.conflist").write_text(json.dumps(
            nc.cni_conflist(self.pod_network, layout.state_dir / "cni-ipam")))
        if self.pod_network == "bridge":
            create_bridge()
        layout.kubelet_config_path.write_text(
            yaml.safe_dump(nc.kubelet_config(layout, plane.pki), sort_keys=False))
        commands = [
            nc.containerd_command(layout),
            nc.scheduler_command(layout, str(installs / "bin" / "kube-scheduler"),
                                 plane.kubeconfig("scheduler"), plane.pki),
            nc.kubelet_command(layout, str(installs / "bin" / "kubelet"),
                               plane.kubeconfig("kubelet")),
        ]
        for cmd in commands:
            process = ManagedProcess(cmd.name, cmd.argv, env=cmd.env,
                                     log_path=node_dir / f"{cmd.name}.log")
            self._processes.append((cmd.name, process))
            process.start()
            if cmd.name == "containerd":
                check = lambda: _ctr_answers(layout.socket)  # noqa: E731
            else:
                check = lambda cmd=cmd: probe(cmd.readiness, plane.pki).ok  # noqa: E731
            self.ready_s[cmd.name] = self._wait(cmd, process, check)
            if cmd.name == "containerd":
                images.import_archive(layout.socket, images.pause_archive(),
                                      nc.SANDBOX_IMAGE.rsplit(":", 1)[0])
        api = config.new_client_from_config(config_file=plane.kubeconfig("admin"))
        try:
            self.node_ready_s = self._wait(Command("node", ()), self._processes[-1][1],
                                           lambda: _node_ready(api, layout.node_name))
        finally:
            api.close()

    def _wait(self, cmd: Command, process: Any, check: Callable[[], bool]) -> float:
        """Seconds until ``check()`` holds (:func:`~pytest_lagscale.wait.wait_ready`)."""
        started = self.clock.now()
        wait_ready(check, process, timeout_s=self.ready_timeout_s, poll_interval_s=0.1,
                   started=started, clock=self.clock,
                   exited=lambda how: f"kubelet node: {cmd.name} {how} before it was ready",
                   timed_out=lambda: (f"kubelet node: {cmd.name} not ready after "
                                      f"{self.ready_timeout_s:.0f} s"))
        return round(self.clock.now() - started, 3)


def histogram(text: str, name: str) -> dict[str, Any] | None:
    """``{"count", "sum", "mean", "buckets": {le: cumulative count}}`` of histogram ``name`` in
    a Prometheus text exposition (series summed over labels), None when absent."""
    from prometheus_client.parser import text_string_to_metric_families

    count = total = 0.0
    buckets: dict[str, float] = {}
    found = False
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            found = True
            if sample.name.endswith("_count"):
                count += sample.value
            elif sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_bucket"):
                le = sample.labels["le"]
                buckets[le] = buckets.get(le, 0.0) + sample.value
    if not found:
        return None
    return {"count": int(count), "sum": round(total, 6),
            "mean": round(total / count, 6) if count else None,
            "buckets": {le: int(n) for le, n in buckets.items()}}


def _node_ready(api: Any, name: str) -> bool:
    """The Node ``name`` has condition Ready=True (False while it is not registered)."""
    from kubernetes import client

    try:
        node = client.CoreV1Api(api).read_node(name)
    except client.exceptions.ApiException:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


# --- cleanup (also what `lagscale cleanup` runs for a node whose harness is gone) ----------------

def _ctr(socket: Path, *args: str, timeout_s: float = 10.0) -> subprocess.CompletedProcess:
    return subprocess.run(["ctr", "--address", str(socket), "--namespace", "k8s.io", *args],
                          capture_output=True, text=True, timeout=timeout_s)


def _ctr_answers(socket: Path) -> bool:
    if not socket.exists():
        return False
    try:
        return _ctr(socket, "version", timeout_s=2.0).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def remove_containers(socket: Path) -> list[str]:
    """Kill (SIGKILL) and delete every task and container of containerd's ``k8s.io``
    namespace at ``socket`` (the pods' sandboxes and containers, with their snapshots); returns
    the ids. Never raises: a containerd that does not answer leaves the rest to the shims'
    kill and the unmount."""
    try:
        listed = _ctr(socket, "containers", "list", "--quiet")
    except (OSError, subprocess.TimeoutExpired):
        return []
    ids = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    for cid in ids:
        try:
            _ctr(socket, "tasks", "kill", "--signal", "SIGKILL", cid)
            _ctr(socket, "tasks", "delete", "--force", cid)
            _ctr(socket, "containers", "delete", cid)
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ids


def _cmdlines() -> dict[int, list[str]]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            found[int(entry.name)] = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    return found


def shim_pids(socket: Path) -> list[int]:
    """Pids of containerd shims serving the containerd at ``socket``."""
    return [pid for pid, argv in _cmdlines().items()
            if argv and argv[0].endswith("containerd-shim-runc-v2") and str(socket) in argv]


def kill_shims(socket: Path) -> list[int]:
    """SIGKILL every shim of the containerd at ``socket`` (and so its containers' init); returns
    the pids."""
    pids = shim_pids(socket)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def mounts_under(directory: Path) -> list[str]:
    """Mount points at or under ``directory`` (from ``/proc/self/mounts``), deepest first."""
    root = str(directory)
    points = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        point = fields[1].replace("\\040", " ") if len(fields) > 1 else ""
        if point == root or point.startswith(root + "/"):
            points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


def unmount_under(directory: Path) -> list[str]:
    """Unmount (lazily, so a busy mount cannot hold the run) every mount under ``directory``;
    returns those that are still mounted afterwards."""
    for point in mounts_under(directory):
        subprocess.run(["umount", "--lazy", point], capture_output=True)
    return mounts_under(directory)


def kubepods_cgroups() -> list[Path]:
    """Every ``kubepods`` cgroup directory of every v1 hierarchy, deepest first."""
    found = []
    for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else []:
        top = hierarchy / KUBEPODS
        if top.is_dir():
            found += [Path(d) for d, _, _ in os.walk(top)]
    return sorted(found, key=lambda p: -len(p.parts))


def remove_kubepods_cgroups(within_s: float = 5.0) -> list[Path]:
    """Kill what is left in the ``kubepods`` cgroups and remove them depth-first; returns the
    directories that could not be removed."""
    deadline = time.monotonic() + within_s
    left = kubepods_cgroups()
    while left and time.monotonic() < deadline:
        for group in left:
            try:
                for pid in (group / "cgroup.procs").read_text().split():
                    os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
            try:
                group.rmdir()
            except OSError:
                pass
        left = kubepods_cgroups()
        if left:
            time.sleep(0.1)
    return left


def leftovers(state_dir: Path, socket: Path | None = None) -> list[str]:
    """What a stopped node left: mounts under ``state_dir``, shims of ``socket``, ``kubepods``
    cgroups; [] when clean."""
    socket = socket or state_dir / "containerd.sock"
    return ([f"mount {p}" for p in mounts_under(state_dir)]
            + [f"shim pid {p}" for p in shim_pids(socket)]
            + [f"cgroup {p}" for p in kubepods_cgroups()]
            + ([f"bridge {nc.BRIDGE_NAME}"] if Path("/sys/class/net", nc.BRIDGE_NAME).exists()
               else []))


def _host_free() -> Any:
    """The host lock if no live kubelet node holds it (the caller closes it), else None."""
    STATE_ROOT.mkdir(parents=True, exist_ok=True)
    lock = open(HOST_LOCK, "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def node_tool_problems() -> list[str]:
    """What the node itself lacks, one line each ([] when nothing): the kubelet and
    kube-scheduler binaries, containerd, ctr, runc (each names ``scripts/bootstrap
    --with-kube``, which installs containerd and runc from Debian)."""
    problems = []
    reason = build.missing_reason(components=pins.NODE)
    if reason is not None:
        problems.append(reason)
    for tool in ("containerd", "ctr", "runc"):
        if shutil.which(tool) is None:
            problems.append(f"{tool!r} not found on PATH; run {build.BOOTSTRAP_COMMAND}")
    return problems


def kubelet_node_problems() -> list[str]:
    """Why ``--node kubelet`` cannot run on this machine, one line each ([] when it can):
    :func:`node_tool_problems`, then root and the replica image's base (each names
    ``scripts/bootstrap --with-kube``)."""
    from . import replica_image

    problems = node_tool_problems()
    reason = replica_image.missing_reason()
    if reason is not None and reason not in problems:
        problems.append(reason)
    return problems


#: Where the kubelet keeps its pods' logs (hard-coded in kubernetes v1.36.3
#: pkg/kubelet/kuberuntime/kuberuntime_manager.go ``podLogsRootDirectory``).
POD_LOGS = Path("/var/log/pods")


def remove_pod_logs() -> list[str]:
    """Remove the log directories of the runs' pods (namespaces ``lagscale*``) that the kubelet
    did not garbage-collect before it stopped; returns their names."""
    removed = []
    for entry in POD_LOGS.glob("lagscale*_*") if POD_LOGS.is_dir() else []:
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry.name)
    return removed


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)


def create_bridge() -> None:
    """Create :data:`~.node_commands.BRIDGE_NAME` with this host's address on it, up (one left
    by a dead run is replaced: the caller holds the host lock).

    Raises:
        LagscaleError: ``ip`` refused (its message).
    """
    delete_bridge()
    for args in (("link", "add", nc.BRIDGE_NAME, "type", "bridge"),
                 ("addr", "add", f"{nc.BRIDGE_GATEWAY}/{nc.BRIDGE_SUBNET.split('/')[1]}",
                  "dev", nc.BRIDGE_NAME),
                 ("link", "set", nc.BRIDGE_NAME, "up")):
        done = _ip(*args)
        if done.returncode != 0:
            delete_bridge()
            raise LagscaleError(f"kubelet node: ip {' '.join(args)}: {done.stderr.strip()}")


def delete_bridge() -> bool:
    """Delete the bridge if it exists (its pods' veths went with their sandboxes); True when
    one was deleted."""
    if not Path("/sys/class/net", nc.BRIDGE_NAME).exists():
        return False
    return _ip("link", "del", nc.BRIDGE_NAME).returncode == 0


def reap_state(run_id: str) -> list[str]:
    """Remove what the kubelet node of run ``run_id`` left when its harness died (SIGKILL: the
    kubelet and containerd die with it, the shims and containers do not): its shims are
    killed, and, when no other run's node holds the host, the ``kubepods`` cgroups' processes
    (the containers) are killed and the cgroups removed; its mounts are unmounted and its state
    directory removed. Returns what was done, one line each ([] when the run had no node).

    Used by ``lagscale cleanup``; never raises for a part already gone.
    """
    state = STATE_ROOT / run_id
    if not state.is_dir():
        return []
    done = [f"killed shim {pid}" for pid in kill_shims(state / "containerd.sock")]
    lock = _host_free()
    if lock is not None:
        try:
            before = kubepods_cgroups()
            left = remove_kubepods_cgroups()
            done.append(f"removed {len(before) - len(left)} kubepods cgroup(s)")
            if delete_bridge():
                done.append(f"deleted bridge {nc.BRIDGE_NAME}")
            logs = remove_pod_logs()
            if logs:
                done.append(f"removed {len(logs)} pod log directory(ies) under {POD_LOGS}")
        finally:
            lock.close()
    else:
        done.append("kubepods cgroups left: another run's kubelet node holds this host")
    mounts = mounts_under(state)
    unmount_under(state)
    done.append(f"unmounted {len(mounts)} mount(s) under {state}")
    shutil.rmtree(state, ignore_errors=True)
    return done


def node_state_runs() -> list[str]:
    """Run ids with a kubelet node state directory on this host."""
    if not STATE_ROOT.is_dir():
        return []
    return sorted(d.name for d in STATE_ROOT.iterdir() if d.is_dir())
