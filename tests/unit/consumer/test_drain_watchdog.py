"""The drain watchdog of a replica whose threads cannot run: SIGTERM, then the main thread stuck
in a C call that holds the GIL (as a close() hung inside librdkafka did in a rolling restart).
The Python watchdog cannot fire; faulthandler's C watchdog ends the process with status 1 at
--drain-timeout + HARD_EXIT_AFTER_S, every thread's stack in its stderr."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import ctypes, io, os, signal, sys, time
from pytest_lagscale.contract.clock import RealClock
from spark_consumer.dimension import load_dimension
from spark_consumer.engine import make_engine
from spark_consumer.eventlog import EventLog
from spark_consumer.metrics import ReplicaMetrics
from spark_consumer.options import DEFAULT_DIMENSION, parse_options
from spark_consumer.replica import Replica, ReplicaParts
from spark_consumer.store import ParquetStore

tmp = sys.argv[1]
opts = parse_options(["--bootstrap", "x:1", "--store", tmp + "/store", "--engine", "arrow",
                      "--replica-id", "r-1", "--drain-timeout", "1",
                      "--event-log", tmp + "/events.jsonl"], env={})
clock = RealClock()
parts = ReplicaParts(opts=opts, engine=make_engine("arrow", load_dimension(DEFAULT_DIMENSION)),
                     events=EventLog("r-1", opts.event_log, clock, echo=io.StringIO()),
                     metrics=ReplicaMetrics(clock), store=ParquetStore(opts.store, "r-1", "1"),
                     clock=clock, make_consumer=lambda conf: None, serve_http=False)
replica = Replica(parts)
replica.install_signal_handlers()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.2)  # the watcher thread reads the wakeup byte and arms both watchdogs
print("holding the GIL", flush=True)
ctypes.PyDLL(None).sleep(30)  # a C call that keeps the GIL: no Python thread runs
print("not reached", flush=True)
"""


def test_a_replica_hung_in_c_holding_the_gil_is_ended_by_the_hard_watchdog(tmp_path: Path) -> None:
    from spark_consumer.replica import HARD_EXIT_AFTER_S

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=60, cwd=Path(__file__).resolve().parents[3])
    took_s = time.monotonic() - started
    assert done.returncode == 1, (done.stdout, done.stderr[-2000:])
    assert "holding the GIL" in done.stdout and "not reached" not in done.stdout
    assert "Timeout (0:00:0" in done.stderr, done.stderr[-2000:]  # faulthandler's watchdog
    assert 'File "<string>", line' in done.stderr  # the stuck main thread's stack
    assert took_s < 1.0 + HARD_EXIT_AFTER_S + 10, took_s
