"""``lagscale produce`` input handling: bad values exit 2 with one line each, before anything
starts (no broker: these tests never reach the run)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.load import cli as produce_cli

PROFILES = Path(__file__).resolve().parents[3] / "fixtures" / "profiles"


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []
    monkeypatch.setattr(produce_cli, "_run", lambda *a: calls.append(a) or 0)
    # the --bootstrap probe (tests/unit/test_bootstrap_input.py) would ask a real cluster
    monkeypatch.setattr("pytest_lagscale.kafka.external.probe", lambda *a, **k: None)
    return calls


def _invoke(*args: str):
    return CliRunner().invoke(app, ["produce", *args])


def test_help_lists_every_flag_with_its_default() -> None:
    result = _invoke("--help")
    assert result.exit_code == 0
    for flag in ("--profile", "--rate", "--spike-mult", "--spike-hold", "--seed",
                 "--partitions", "--bootstrap", "--topic", "--out"):
        assert flag in result.output
    assert "runs/<utc>-produce" in result.output


def test_bad_flags_and_profile_values_exit_2_with_one_line_each(no_run: list,
                                                                 tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("")
    result = _invoke("--profile", str(PROFILES / "spike-ci.yaml"), "--rate", "-5",
                     "--spike-mult", "0.5", "--partitions", "0", "--bootstrap", "localhost",
                     "--out", str(a_file))
    assert result.exit_code == 2 and no_run == []
    assert result.output.splitlines() == [
        "error: '--partitions': 0 is out of range; allowed: integer 1 to 4096 partitions; "
        "source: command line; raise it to 1 or more",
        "error: '--rate': -5.0 is out of range; allowed: 0 to 10000000 records/s; source: "
        "command line; raise it to 0 or more",
        "error: '--spike-mult': 0.5 is out of range; allowed: 1 to 1000 x baseline_rate_per_s; "
        "source: command line; raise it to 1 or more",
        "error: '--bootstrap': 'localhost' is not HOST:PORT; allowed: host:port[,host:port...] "
        "with an ASCII host and port 1 to 65535; source: command line; write it like "
        "127.0.0.1:9092",
        f"error: '--out': {str(a_file)!r} is an existing file; allowed: a directory (created "
        f"if missing); source: command line; choose another path"]


def test_step_flags_on_a_bursty_profile_are_rejected(no_run: list) -> None:
    result = _invoke("--profile", str(PROFILES / "bursty-ci.yaml"), "--spike-hold", "10")
    assert result.exit_code == 2 and no_run == []
    assert result.output.splitlines() == [
        f"error: '--spike-hold': 10.0 does not apply to kind 'bursty'; allowed: kind 'step'; "
        f"source: command line; drop --spike-hold or edit {PROFILES / 'bursty-ci.yaml'}"]


def test_missing_profile_file_exits_2(no_run: list, tmp_path: Path) -> None:
    result = _invoke("--profile", str(tmp_path / "x.yaml"))
    assert result.exit_code == 2 and no_run == []
    assert result.output.startswith(f"error: '{tmp_path / 'x.yaml'}': cannot be read")


def test_valid_input_reaches_the_run_with_overrides_applied(no_run: list) -> None:
    result = _invoke("--profile", str(PROFILES / "spike-ci.yaml"), "--rate", "50",
                     "--seed", "3", "--bootstrap", "127.0.0.1:9092,[::1]:9093",
                     "--out", "somewhere")
    assert result.exit_code == 0, result.output
    (profile, bootstrap, out), = no_run
    assert (profile.seed, profile.schedule()[0].rate_per_s) == (3, 50)
    assert bootstrap == "127.0.0.1:9092,[::1]:9093" and out == Path("somewhere")


def test_default_out_dir_is_a_utc_stamped_run_dir() -> None:
    when = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc)
    assert produce_cli.default_out_dir(when) == Path("runs/20260304T050607Z-produce")


def test_a_bundled_profile_name_is_accepted_as_run_accepts_it(no_run: list) -> None:
    result = _invoke("--profile", "spike-ci", "--out", "somewhere")
    assert result.exit_code == 0, result.output
    (profile, _, _), = no_run
    assert profile.name == "spike-ci"


def test_an_unknown_profile_name_lists_the_bundled_ones(no_run: list) -> None:
    result = _invoke("--profile", "spikey")
    assert result.exit_code == 2 and no_run == []
    assert "spike-ci" in result.output and "Traceback" not in result.output


def test_an_out_directory_under_a_file_exits_2(no_run: list, tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("")
    result = _invoke("--profile", "spike-ci", "--out", str(a_file / "runs"))
    assert result.exit_code == 2 and no_run == []
    assert result.output.splitlines() == [
        f"error: '--out': {str(a_file / 'runs')!r} lies under the file {str(a_file)!r}; "
        f"allowed: a directory (created if missing); source: command line; choose another path"]
