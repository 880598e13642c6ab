"""``ReconcileWorker``: one request at a time on its connection, whichever threads call it (a
run's analysis reconciles from a thread of its own). The connection is a stand-in that fails
when a second request is sent before the first reply was read; the real worker is exercised by
tests/integration/test_reconcile_worker.py."""

from __future__ import annotations

import threading
import time

from pytest_lagscale.analyze.reconcile_worker import ReconcileWorker

REPLY = {"produced_total": 1, "stored_rows_total": 1, "distinct_processed_total": 1,
         "lost_total": 0, "duplicated_total": 0, "duplicate_rows_total": 0,
         "unexpected_total": 0, "lost_examples": [], "duplicated_examples": [],
         "unexpected_examples": [], "engine": "spark", "exact": True}


class _OneAtATime:
    """A connection that answers after 20 ms and records a send while a request is open."""

    def __init__(self) -> None:
        self.open, self.overlaps, self.sent = False, 0, 0

    def send(self, request) -> None:
        self.overlaps += self.open
        self.open, self.sent = True, self.sent + 1

    def recv(self):
        time.sleep(0.02)
        self.open = False
        return dict(REPLY)


def test_concurrent_calls_are_one_request_at_a_time(tmp_path) -> None:
    worker = ReconcileWorker(tmp_path / "worker.log")
    worker._conn = conn = _OneAtATime()
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(worker.reconcile("s", "m")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert conn.sent == 4 and conn.overlaps == 0
    assert [r.lost_total for r in results] == [0] * 4
