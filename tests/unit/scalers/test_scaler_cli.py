"""``lagscale scaler serve`` options (the serving itself: tests/integration/test_scaler_cli.py)."""

from __future__ import annotations

from typer.testing import CliRunner

from pytest_lagscale.cli import app


def test_help_lists_port_and_host_with_their_defaults() -> None:
    result = CliRunner().invoke(app, ["scaler", "serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--port" in result.output and "Port to listen on; 0 picks a free one. Default: 6000" in result.output
    assert "--host" in result.output and "Default: 127.0.0.1" in result.output


def test_a_port_out_of_range_exits_2_before_serving() -> None:
    result = CliRunner().invoke(app, ["scaler", "serve", "--port", "70000"])
    assert result.exit_code == 2


def test_an_unknown_kind_exits_2_naming_the_kinds() -> None:
    result = CliRunner().invoke(app, ["scaler", "serve", "--kind", "kafka", "--port", "0"])
    assert result.exit_code == 2
    assert "--kind: got 'kafka', expected one of persistent-lag, share-group" in result.output
