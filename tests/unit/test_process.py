"""The pid directory's bookkeeping: harness records, the harness-gone decision, removal, and
``reap_gone_runs`` over a pid root (files only); the parent-death prefix every child is started
under (short-lived ``setpriv``/``sh`` children of the test process)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_lagscale import pidfiles
from pytest_lagscale import process as process_mod
from pytest_lagscale.process import _with_parent_death_signal, reap_gone_runs

NO_SUCH_PID = 4_194_305  # above Linux's largest pid_max: never a live process
ME = os.getpid()


def test_start_ticks_of_this_process_and_of_no_process() -> None:
    assert isinstance(pidfiles.process_start_ticks(ME), int)
    assert pidfiles.process_start_ticks(NO_SUCH_PID) is None


def test_record_harness_writes_pid_and_start_time_once(tmp_path) -> None:
    record = pidfiles.record_harness(tmp_path / "run")
    assert record == pidfiles.HarnessRecord(ME, pidfiles.process_start_ticks(ME))
    assert (tmp_path / "run" / f"harness.{ME}").read_text() == f"{ME} {record.start_ticks}\n"
    assert pidfiles.record_harness(tmp_path / "run") == record
    assert pidfiles.harness_records(tmp_path / "run") == [record]


def _dir_with(tmp_path: Path, *records: tuple[int, int]) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    for pid, ticks in records:
        (d / f"harness.{pid}").write_text(f"{pid} {ticks}\n")
    return d


@pytest.mark.parametrize(
    ("records", "live", "gone"),
    [
        pytest.param([(100, 7)], {100: 7}, False, id="pid-runs-started-at-recorded-tick"),
        pytest.param([(100, 7)], {}, True, id="pid-dead-or-zombie"),
        pytest.param([(100, 7)], {100: 8}, True, id="pid-reused-by-a-later-process"),
        pytest.param([], {100: 7}, True, id="no-record"),
        pytest.param([(100, 7), (200, 9)], {200: 9}, False, id="one-nested-harness-alive"),
        pytest.param([(100, 7), (200, 9)], {100: 6, 200: 8}, True, id="all-reused"),
    ],
)
def test_harness_gone_decision(tmp_path, records, live, gone) -> None:
    d = _dir_with(tmp_path, *records)
    assert pidfiles.harness_gone(d, start_ticks=live.get) is gone


def test_harness_gone_with_real_start_times(tmp_path) -> None:
    ticks = pidfiles.process_start_ticks(ME)
    assert pidfiles.harness_gone(_dir_with(tmp_path, (ME, ticks))) is False
    (tmp_path / "run" / f"harness.{ME}").write_text(f"{ME} {ticks - 1}\n")
    assert pidfiles.harness_gone(tmp_path / "run") is True


def test_malformed_records_are_skipped(tmp_path) -> None:
    d = _dir_with(tmp_path, (100, 7))
    (d / "harness.x").write_text("not numbers\n")
    assert pidfiles.harness_records(d) == [pidfiles.HarnessRecord(100, 7)]


def test_release_removes_the_record_and_the_empty_directory(tmp_path) -> None:
    d = _dir_with(tmp_path, (ME, 7))
    assert pidfiles.release(d) is True
    assert not d.exists()
    assert pidfiles.release(d) is True  # already gone: no error


@pytest.mark.parametrize("leftover", ["replica-0001.4242.pid", "harness.4242"],
                         ids=["a-child-still-recorded", "a-nested-harness"])
def test_release_keeps_a_directory_something_else_still_uses(tmp_path, leftover) -> None:
    d = _dir_with(tmp_path, (ME, 7))
    (d / leftover).write_text("4242 1\n")
    assert pidfiles.release(d) is False
    assert sorted(p.name for p in d.iterdir()) == [leftover]


def test_pid_files_round_trip_and_remove_deletes_only_ours(tmp_path) -> None:
    d = tmp_path / "run"
    path = pidfiles.write_pid_file(d, "kafka", 4242, ["java", "-cp", "x"])
    assert path.read_text() == "4242\njava -cp x\n"
    pidfiles.record_harness(d)
    assert pidfiles.recorded_pids(d) == {4242}
    pidfiles.remove(d)
    assert not d.exists()
    pidfiles.write_pid_file(d, "kafka", 4242, ["java"])
    (d / "notes.txt").write_text("a human's file")
    pidfiles.remove(d)
    assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]


def test_reap_gone_runs_reaps_dead_harnesses_and_leaves_live_ones(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path))
    root = tmp_path / "pids"
    gone = root / "gone00000001"
    pidfiles.write_pid_file(gone, "replica-0001", NO_SUCH_PID, ["python", "-m", "x"])
    (gone / f"harness.{NO_SUCH_PID}").write_text(f"{NO_SUCH_PID} 1\n")
    stale = root / "stale0000001"  # an empty directory an older version left behind
    stale.mkdir(parents=True)
    alive = root / "alive0000001"
    pidfiles.record_harness(alive)
    pidfiles.write_pid_file(alive, "kafka", NO_SUCH_PID, ["java"])

    reaped = reap_gone_runs(timeout_s=0.1)

    assert reaped == {"gone00000001": [], "stale0000001": []}  # its recorded pid is long gone
    assert sorted(p.name for p in root.iterdir()) == ["alive0000001"]
    assert pidfiles.recorded_pids(alive) == {NO_SUCH_PID}


def test_reap_gone_runs_without_a_pid_root(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "nothing-here"))
    assert reap_gone_runs() == {}


def test_cleanup_without_a_run_id_reports_each_reaped_run(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from pytest_lagscale.cli import app

    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path))
    pidfiles.write_pid_file(tmp_path / "pids" / "gone00000001", "kafka", NO_SUCH_PID, ["java"])
    pidfiles.record_harness(tmp_path / "pids" / "alive0000001")

    result = CliRunner().invoke(app, ["cleanup"])

    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "run gone00000001: harness gone; reaped 0 process group(s): -; pid directory removed",
        "1 run(s) with a gone harness reaped",
    ]
    assert sorted(p.name for p in (tmp_path / "pids").iterdir()) == ["alive0000001"]


@pytest.mark.parametrize("rid", ["../../somewhere", "a/b", ".", "..", "", "_x", "x" * 65,
                                 "run id", "caf\u00e9"])
def test_cleanup_refuses_what_is_not_a_run_id_and_touches_nothing(tmp_path, monkeypatch,
                                                                  rid) -> None:
    from typer.testing import CliRunner

    from pytest_lagscale.cli import app

    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "cache"))
    outside = tmp_path / "somewhere"
    pidfiles.write_pid_file(outside, "kafka", NO_SUCH_PID, ["java"])

    result = CliRunner().invoke(app, ["cleanup", rid])

    assert result.exit_code == 2, result.output
    assert "is not a run id: 1-64 letters, digits, '-' or '_'" in result.output
    assert "Traceback" not in result.output
    assert pidfiles.recorded_pids(outside) == {NO_SUCH_PID}


def test_cleanup_of_an_unknown_run_id_exits_2(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from pytest_lagscale.cli import app

    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["cleanup", "0123456789ab"])
    assert result.exit_code == 2, result.output
    assert "run id '0123456789ab': no pid directory and no live process carries it" \
        in result.output


def test_cleanup_of_a_known_run_id_reaps_it(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from pytest_lagscale.cli import app

    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path))
    pidfiles.write_pid_file(tmp_path / "pids" / "0123456789ab-gw1", "kafka", NO_SUCH_PID,
                            ["java"])
    result = CliRunner().invoke(app, ["cleanup", "0123456789ab-gw1"])
    assert result.exit_code == 0, result.output
    assert result.output == "reaped 0 process group(s): -\n"
    assert not (tmp_path / "pids" / "0123456789ab-gw1").exists()


needs_setpriv = pytest.mark.skipif(shutil.which("setpriv") is None,
                                   reason="needs util-linux setpriv")


@needs_setpriv
@pytest.mark.parametrize(("signame", "status"), [("TERM", 143), ("KILL", 137)])
def test_a_child_whose_parent_is_not_the_harness_exits_without_running_its_program(
        tmp_path, signame, status) -> None:
    # The PR_SET_PDEATHSIG race (man 2 prctl), made deterministic: a harness that died between
    # the fork and setpriv's prctl leaves the child with another parent. Here the recorded
    # harness pid is one the child's parent (this process) does not have.
    marker = tmp_path / "ran"
    argv = _with_parent_death_signal(["touch", str(marker)], signame, parent_pid=NO_SUCH_PID)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    assert done.stderr == ""
    assert not marker.exists()


SHOW_ARGV = """
import ctypes, json, os, sys
sig = ctypes.c_int(-1)
ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
print(json.dumps([os.getpid(), sig.value, sys.argv[1:]]))
"""
WORDS = ["a b", "", "'single'", '"double"', "$x", "${x:-y}", "$(echo no)", "`echo no`", "\\",
         "*", "-n", "--", "a\nb", "tab\there", "  ", "$1", "$@", ";exit 3", "\u00e9"]


@needs_setpriv
def test_the_program_keeps_the_pid_gets_every_word_unchanged_and_has_the_signal_armed() -> None:
    argv = _with_parent_death_signal([sys.executable, "-c", SHOW_ARGV, *WORDS])
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "x": "expanded"})
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    pid, pdeathsig, words = json.loads(out)
    assert pid == child.pid  # setpriv, sh and the program are one process
    assert pdeathsig == 15  # SIGTERM, armed before the check and kept through sh's exec
    assert words == WORDS


def test_without_setpriv_argv_is_returned_unchanged(monkeypatch) -> None:
    monkeypatch.setattr(process_mod.shutil, "which", lambda name: None)
    assert _with_parent_death_signal(["no-such-program-x", "a b"]) == ["no-such-program-x", "a b"]


@needs_setpriv
def test_a_missing_executable_is_reported_before_setpriv_would_exec_it() -> None:
    with pytest.raises(FileNotFoundError):
        _with_parent_death_signal(["no-such-program-lagscale-x"])
