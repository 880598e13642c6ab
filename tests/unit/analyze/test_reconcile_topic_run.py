"""reconcile_topic_run: the session's worker first, a session of the run's own after a worker
failure, and the caller's input errors raised as they are (no second attempt)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_lagscale.analyze import reconcile_topic as rt
from pytest_lagscale.analyze import reconcile_worker
from pytest_lagscale.contract.errors import BrokerError, LagscaleError

pytest.importorskip("pyspark")


class FakeWorker:
    def __init__(self, error: Exception | None) -> None:
        self.error, self.calls = error, []
        self.process, self.log_path = SimpleNamespace(pid=4242), Path("/tmp/worker.log")

    def reconcile_topic(self, *args: Any, **kwargs: Any) -> str:
        self.calls.append((args, kwargs))
        if self.error is not None:
            raise self.error
        return "from the worker"


@pytest.fixture
def layout(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(manifest_json=tmp_path / "manifest.json",
                           reconcile_log=tmp_path / "reconcile.log")


def _patch(monkeypatch: pytest.MonkeyPatch, worker: FakeWorker | None) -> list[Any]:
    own: list[Any] = []
    discarded: list[bool] = []
    monkeypatch.setattr(reconcile_worker, "shared_worker", lambda: worker)
    monkeypatch.setattr(reconcile_worker, "discard_shared", lambda: discarded.append(True))
    monkeypatch.setattr(rt, "reconcile_topic",
                        lambda *a, **k: own.append((a, k)) or "from an own session")
    return [own, discarded]


def test_the_shared_worker_reconciles_and_the_run_log_says_so(monkeypatch, layout) -> None:
    worker = FakeWorker(None)
    own, discarded = _patch(monkeypatch, worker)
    assert rt.reconcile_topic_run(layout, "k:9092", "out", kafka_options={"a": "b"}) == (
        "from the worker")
    assert worker.calls == [(("k:9092", "out", layout.manifest_json),
                             {"client_config": None, "kafka_options": {"a": "b"}})]
    assert (own, discarded) == ([], [])
    assert "reconcile worker (pid 4242)" in layout.reconcile_log.read_text()


def test_without_a_worker_or_after_its_failure_the_run_reconciles_on_its_own(
        monkeypatch, layout) -> None:
    own, discarded = _patch(monkeypatch, None)
    assert rt.reconcile_topic_run(layout, "k:9092", "out") == "from an own session"
    own, discarded = _patch(monkeypatch, FakeWorker(LagscaleError("reconcile worker is gone")))
    assert rt.reconcile_topic_run(layout, "k:9092", "out") == "from an own session"
    assert discarded == [True]
    assert own == [(("k:9092", "out", layout.manifest_json),
                    {"client_config": None, "kafka_options": None,
                     "log_path": layout.reconcile_log})]


def test_a_missing_topic_is_raised_without_a_second_attempt(monkeypatch, layout) -> None:
    own, discarded = _patch(monkeypatch, FakeWorker(BrokerError("topic 'out': not found")))
    with pytest.raises(BrokerError, match="topic 'out'"):
        rt.reconcile_topic_run(layout, "k:9092", "out")
    assert (own, discarded) == ([], [])
