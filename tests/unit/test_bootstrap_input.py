"""``--kafka-bootstrap`` (``lagscale run``) and ``--bootstrap`` (``lagscale produce``): the form
is checked first, then the cluster is probed for its metadata, before any run directory or
process exists; one line, exit 2, and no librdkafka line on the terminal (before: an
unreachable address started a run, flooded the terminal and left a half-written run
directory; produce waited 30 s silently)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.kafka import external


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(external, "PROBE_TIMEOUT_S", 1.0)
    return tmp_path


def _closed_port() -> int:
    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("value", ["localhost", "h\u00f4st:9092", "127.0.0.1:0", "a:99999",
                                   "127.0.0.1:9092,", ""])
def test_a_malformed_address_is_refused_by_form(value: str) -> None:
    problems = external.check_bootstrap_form(value, "--kafka-bootstrap")
    assert problems and all("is not HOST:PORT; allowed: host:port[,host:port...] with an ASCII "
                            "host and port 1 to 65535" in p for p in problems)


def test_well_formed_addresses_pass() -> None:
    assert external.check_bootstrap_form("127.0.0.1:9092,[::1]:9093,broker-1.x:19092",
                                         "--bootstrap") == []


def test_run_refuses_an_unreachable_cluster_before_anything_exists(workdir: Path, capfd) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(app, ["run", "--kafka", "external", "--kafka-bootstrap",
                                      address, "--out", str(workdir / "runs")])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"error: --kafka-bootstrap: {address!r} did not answer a metadata request within 1 s "
        "(Failed to get metadata: Local: Broker transport failure); check the address and the "
        "SASL/TLS settings"]
    assert sorted(p.name for p in workdir.iterdir()) == []
    assert "rdkafka" not in capfd.readouterr().err


def test_produce_refuses_an_unreachable_cluster_in_one_line(workdir: Path) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(app, ["produce", "--profile", "spike-ci", "--bootstrap",
                                      address])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: --bootstrap: {address!r} did not answer a "
                                    "metadata request within 1 s")
    assert sorted(p.name for p in workdir.iterdir()) == []
