"""The Spark reconciliation job: same answers as the pyarrow cross-check, and no JVM left behind.

The first two tests start and stop their own session, so they come before the module-scoped
``spark`` session is created (only one SparkContext can be active in a process).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from pytest_lagscale.analyze import reconcile, reconcile_arrow
from pytest_lagscale.analyze.local_spark import LocalSpark
from pytest_lagscale.analyze.reconcile_worker import shared_pid
from pytest_lagscale.contract.errors import LagscaleError
from tests.unit.analyze.test_reconcile import CASES, Case, build, counts, random_store

# One worker under xdist: the module fixture is set up once.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("reconcile")]

if shutil.which("java") is None:
    pytest.skip("no java on PATH: the reconciliation job needs a JDK 17 (install one to run "
                "these tests)", allow_module_level=True)
pytest.importorskip("pyspark", reason="pyspark missing: pip install 'pytest-lagscale[spark]'")


def _java_children() -> list[str]:
    """Spark JVMs (py4j gateways) below this process; the session's broker JVM is not one, nor
    is the session's reconcile worker's (``reconcile_worker``, started by an earlier run)."""
    worker = set()
    if shared_pid() is not None:
        try:
            worker = {c.pid for c in psutil.Process(shared_pid()).children(recursive=True)}
        except psutil.Error:
            pass
    return [" ".join(c.cmdline())[:120] for c in psutil.Process().children(recursive=True)
            if c.pid not in worker and c.is_running() and c.status() != psutil.STATUS_ZOMBIE
            and "java" in c.name() and "org.apache.spark" in " ".join(c.cmdline())]


def test_own_session_is_stopped_with_its_jvm(tmp_path: Path) -> None:
    store, m, _ = random_store(tmp_path, seed=11, partitions=3, per_partition=200)
    r = reconcile(store, m.write_json(tmp_path / "manifest.json"), examples=4)
    assert r.engine == "spark" and r.elapsed_s > 0
    assert counts(r) == counts(reconcile_arrow(store, m, examples=4))
    assert _java_children() == []


def test_failed_start_raises_and_leaves_no_jvm() -> None:
    # Spark's own 300 MB reserve makes a 256 MB heap too small: the JVM starts, the
    # SparkContext does not.
    reserve = {"spark.driver.memory": "256m", "spark.testing.reservedMemory": str(300 << 20)}
    with pytest.raises(LagscaleError) as info:
        with LocalSpark(settings=reserve):
            pass
    assert str(info.value).startswith("reconcile: Spark did not start (")
    assert "INVALID_DRIVER_MEMORY" in str(info.value)
    assert str(info.value).endswith("); check the JDK (java -version) and the Spark settings")
    assert _java_children() == []


def test_the_jvm_output_goes_to_the_log_file_named_in_the_error(tmp_path: Path) -> None:
    reserve = {"spark.driver.memory": "256m", "spark.testing.reservedMemory": str(300 << 20)}
    log = tmp_path / "reconcile.log"
    with pytest.raises(LagscaleError) as info:
        with LocalSpark(settings=reserve, log_path=log):
            pass
    assert str(info.value).endswith(f"and the Spark settings; the JVM's output is in {log}")
    assert "INVALID_DRIVER_MEMORY" in log.read_text()  # the JVM's own account, not on the tty
    assert _java_children() == []


@pytest.fixture(scope="module")
def spark() -> object:
    local = LocalSpark().start()
    yield local.session
    local.stop()
    assert _java_children() == []


@pytest.mark.parametrize("case", CASES)
def test_spark_job(case: Case, spark: object, tmp_path: Path) -> None:
    store, m = build(case, tmp_path)
    r = reconcile(store, m, spark=spark, examples=case.examples)
    assert counts(r) == case.expected
    assert r.engine == "spark"


@pytest.mark.parametrize("seed", [1, 2])
def test_spark_agrees_with_arrow_on_a_random_store(seed: int, spark: object,
                                                   tmp_path: Path) -> None:
    store, m, rows = random_store(tmp_path, seed=seed)
    r = reconcile(store, m, spark=spark, examples=7)
    assert counts(r) == counts(reconcile_arrow(store, m, examples=7))
    assert r.stored_rows_total == rows and not r.exact
