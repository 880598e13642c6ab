"""The kubelet node's guardian: removes the node's containers if its harness dies unstopped.

containerd, the kubelet and kube-scheduler are the harness's children and die with it
(``PR_SET_PDEATHSIG``), but the containers do not: each belongs to a containerd shim that
containerd detached on purpose, so it survives a containerd restart. :func:`start` launches
``python -m pytest_lagscale.kube.node_guardian RUN_ID`` in a session of its own (a terminal's
Ctrl-C or hangup does not reach it) holding the read end of a pipe whose only write end the
harness keeps. When that end closes — :meth:`~.kubelet_node.KubeletNode.stop` closes it after
its own clean-up, the kernel closes it when the harness is SIGKILLed — the guardian runs
:func:`~.kubelet_node.reap_state` for the run (a no-op after a clean stop: the state directory
is gone) and exits.

Source: containerd docs/PLUGINS.md and runtime/v2/README.md (shims outlive containerd);
``man 2 pipe`` (EOF once every write end is closed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

#: Seconds the guardian waits after EOF before reaping: the harness's children get their
#: death signal at the same moment, and a kubelet still alive could restart a container.
SETTLE_S = 0.5


class Guardian:
    """A started guardian: :meth:`release` closes the pipe and waits for it to exit."""

    def __init__(self, process: subprocess.Popen, write_fd: int):
        self.process = process
        self._write_fd: int | None = write_fd

    @property
    def pid(self) -> int:
        return self.process.pid

    def release(self, within_s: float = 10.0) -> int | None:
        """Close the pipe (the guardian reaps what is left, nothing after a clean stop) and
        wait up to ``within_s`` seconds; returns its exit status (None: still running)."""
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
        try:
            return self.process.wait(within_s)
        except subprocess.TimeoutExpired:
            return None


def start(run_id: str, log_path: Path) -> Guardian:
    """Launch the guardian of run ``run_id`` (its output appended to ``log_path``)."""
    read_fd, write_fd = os.pipe()  # both non-inheritable (PEP 446); the child gets read_fd as 0
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen([sys.executable, "-m", "pytest_lagscale.kube.node_guardian",
                                    run_id], stdin=read_fd, stdout=log, stderr=log,
                                   start_new_session=True, close_fds=True)
    os.close(read_fd)
    return Guardian(process, write_fd)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_lagscale.kube.node_guardian RUN_ID``: wait for EOF on stdin, then
    reap the run's node state; exit 0 (1 when something could not be removed)."""
    from .kubelet_node import STATE_ROOT, leftovers, reap_state

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m pytest_lagscale.kube.node_guardian RUN_ID", file=sys.stderr)
        return 2
    run_id = args[0]
    while sys.stdin.buffer.read(65536):
        pass
    if not (STATE_ROOT / run_id).is_dir():
        return 0
    time.sleep(SETTLE_S)
    for line in reap_state(run_id):
        print(f"node_guardian {run_id}: {line}", flush=True)
    left = leftovers(STATE_ROOT / run_id)
    for line in left:
        print(f"node_guardian {run_id}: left {line}", flush=True)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
