"""The run's part watch (experiment/watch.py): a dead part is restarted when it can come back,
and named with its exit status and log tail when it cannot; an expected stop is neither.

Real processes (``sleep``) under ManagedProcess, killed by signal: what the watch reads is what
a dead broker or Prometheus gives it.
"""

from __future__ import annotations

import signal
import time

import pytest

from pytest_lagscale.experiment.watch import PartDied, PartWatch
from pytest_lagscale.process import ManagedProcess


class _Events:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict]] = []

    def emit(self, event: str, **fields: object) -> None:
        self.lines.append((event, fields))


def _sleeper(tmp_path, name: str) -> ManagedProcess:
    log = tmp_path / f"{name}.log"
    return ManagedProcess(name, ["sh", "-c", "echo starting up; exec sleep 60"],
                          log_path=log).start()


def _dead(process: ManagedProcess) -> None:
    process.signal(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_part_that_cannot_come_back_is_named_with_its_exit_and_log_tail(tmp_path) -> None:
    events = _Events()
    broker = _sleeper(tmp_path, "kafka")
    watch = PartWatch(events)
    watch.add("kafka", lambda: broker)
    watch.look()
    watch.check()  # alive: nothing
    time.sleep(0.3)  # its log line is written
    _dead(broker)
    watch.look()
    with pytest.raises(PartDied) as died:
        watch.check()
    assert "kafka killed by SIGKILL" in str(died.value)
    assert "starting up" in str(died.value) and "\n" not in str(died.value)
    assert [e for e, _ in events.lines] == ["part_died"]
    assert events.lines[0][1]["part"] == "kafka"
    watch.look()  # reported once
    assert len(events.lines) == 1
    broker.stop(0)


def test_a_part_with_a_restart_comes_back_and_its_gap_is_recorded(tmp_path) -> None:
    events = _Events()
    current = {"p": _sleeper(tmp_path, "prometheus")}

    def restart() -> None:
        current["p"].stop(0)
        current["p"] = _sleeper(tmp_path, "prometheus")

    watch = PartWatch(events)
    watch.add("prometheus", lambda: current["p"], restart=restart)
    first = current["p"]
    _dead(first)
    watch.look()
    watch.check()  # no failure: it came back
    assert current["p"] is not first and current["p"].poll() is None
    (event, fields), = events.lines
    assert event == "part_restarted" and fields["part"] == "prometheus"
    assert fields["gap_s"] >= 0 and "SIGKILL" in fields["exit"]
    assert watch.outages[0]["duration_s"] == fields["gap_s"]
    current["p"].stop(0)


def test_a_stop_an_action_asked_for_is_not_a_death(tmp_path) -> None:
    events = _Events()
    broker = _sleeper(tmp_path, "kafka")
    watch = PartWatch(events)
    watch.add("kafka", lambda: broker)
    with watch.expected_down("kafka"):
        _dead(broker)
        watch.look()
        broker = _sleeper(tmp_path, "kafka")  # the action starts it again
    watch.look()
    watch.check()
    assert events.lines == []
    broker.stop(0)


def test_a_restart_that_fails_is_a_death(tmp_path) -> None:
    events = _Events()
    part = _sleeper(tmp_path, "prometheus")

    def restart() -> None:
        raise RuntimeError("port taken")

    watch = PartWatch(events)
    watch.add("prometheus", lambda: part, restart=restart)
    _dead(part)
    watch.look()
    with pytest.raises(PartDied, match="restart failed: port taken"):
        watch.check()
    assert [e for e, _ in events.lines] == ["part_restart_failed", "part_died"]
    part.stop(0)
