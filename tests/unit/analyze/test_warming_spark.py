"""``WarmingSpark``: a LocalSpark started on a thread, handed over when the start has ended
(LocalSpark replaced by a stand-in; the real JVM is exercised by the killed-broker exit test)."""

from __future__ import annotations

import logging
import threading

import pytest

from pytest_lagscale.analyze import local_spark
from pytest_lagscale.analyze.local_spark import WarmingSpark


class _Spark:
    """A LocalSpark stand-in whose start waits for ``release`` and may fail."""

    def __init__(self, log_path=None, fail: bool = False):
        self.release, self.fail, self.session, self.stopped = threading.Event(), fail, None, 0

    def start(self):
        self.release.wait(5)
        if self.fail:
            raise RuntimeError("no JVM")
        self.session = "session"
        return self

    def stop(self) -> None:
        self.stopped += 1


@pytest.fixture
def spark(monkeypatch):
    made: list[_Spark] = []

    def make(log_path=None):
        made.append(_Spark(log_path, fail=getattr(make, "fail", False)))
        return made[-1]

    monkeypatch.setattr(local_spark, "LocalSpark", make)
    make.made = made
    return make


def test_the_session_is_handed_over_once_the_start_on_its_thread_ended(spark) -> None:
    warm = WarmingSpark()
    (inner,) = spark.made
    assert warm.session(timeout_s=0.05) is None  # still starting
    inner.release.set()
    assert warm.session() == "session"
    warm.stop()
    assert inner.stopped == 1


def test_a_failed_start_hands_over_nothing_and_says_why(spark, caplog) -> None:
    spark.fail = True
    warm = WarmingSpark()
    spark.made[0].release.set()
    with caplog.at_level(logging.WARNING):
        assert warm.session() is None
    assert "RuntimeError" in caplog.text or "no JVM" in caplog.text
    warm.stop()
