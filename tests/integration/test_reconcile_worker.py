"""The session's reconcile worker: the same answers as the pyarrow cross-check run after run,
and neither the worker nor its JVM outlives a clean stop or a SIGKILLed harness."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from pytest_lagscale.analyze import reconcile_arrow
from pytest_lagscale.analyze.reconcile_worker import ReconcileWorker
from pytest_lagscale.contract.errors import LagscaleError
from tests.unit.analyze.test_reconcile import counts, random_store

pytestmark = pytest.mark.integration

if shutil.which("java") is None:
    pytest.skip("no java on PATH: the reconciliation job needs a JDK 17", allow_module_level=True)
pytest.importorskip("pyspark", reason="pyspark missing: pip install 'pytest-lagscale[spark]'")


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _gone_within(procs: list[psutil.Process], timeout_s: float) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(procs, timeout=timeout_s)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


def test_worker_reconciles_run_after_run_and_stops_with_its_jvm(tmp_path: Path) -> None:
    with ReconcileWorker(tmp_path / "worker.log") as worker:
        tree = _tree(worker.process.pid)
        assert any("java" in p.name() for p in tree), [p.name() for p in tree]
        for seed in (3, 4):
            store, m, _ = random_store(tmp_path / str(seed), seed=seed, partitions=3,
                                       per_partition=150)
            r = worker.reconcile(store, m.write_json(tmp_path / f"manifest-{seed}.json"),
                                 examples=4)
            assert r.engine == "spark" and r.elapsed_s > 0
            assert counts(r) == counts(reconcile_arrow(store, m, examples=4))
        with pytest.raises(LagscaleError, match="reconcile worker: ConfigError"):
            worker.reconcile(tmp_path / "3", tmp_path / "no-such-manifest.json")
    assert _gone_within(tree, 10.0) == []


def test_worker_and_jvm_die_with_a_sigkilled_harness(tmp_path: Path) -> None:
    harness = textwrap.dedent(f"""
        import sys, time
        from pytest_lagscale.analyze.reconcile_worker import ReconcileWorker
        w = ReconcileWorker({str(tmp_path / "worker.log")!r}).start()
        print(w.process.pid, flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", harness], stdout=subprocess.PIPE,
                            cwd=Path(__file__).parents[2], start_new_session=True)
    try:
        worker_pid = int(proc.stdout.readline())
        tree = _tree(worker_pid)
        assert any("java" in p.name() for p in tree)
        os.killpg(proc.pid, 0)  # the harness is alive; now kill it without a chance to clean up
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        left = _gone_within(tree, 30.0)
        assert left == [], [(p.pid, p.name()) for p in left]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        for p in _tree(worker_pid) if "worker_pid" in locals() else []:
            p.kill()


def test_a_dead_shared_worker_is_replaced_at_the_next_call(tmp_path: Path) -> None:
    from pytest_lagscale.analyze import reconcile_worker as rw

    owned = not rw.shared_enabled()
    rw.enable_shared(tmp_path / "shared.log")
    try:
        first = rw.shared_worker()
        first.process.signal(signal.SIGKILL)
        first.process.wait(10.0)
        second = rw.shared_worker()
        assert second is not first and second.process.poll() is None
        store, m, _ = random_store(tmp_path, seed=5, partitions=2, per_partition=50)
        r = second.reconcile(store, m.write_json(tmp_path / "manifest.json"), examples=2)
        assert counts(r) == counts(reconcile_arrow(store, m, examples=2))
    finally:
        rw.discard_shared()
        if owned:
            rw.close_shared()
