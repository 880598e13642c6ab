"""The acceptance session's verdict table (pytest_lagscale/experiment/acceptance.py) from a
JUnit XML as pytest writes it."""

from __future__ import annotations

from pathlib import Path

from pytest_lagscale.experiment.acceptance import main, render, tally

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="benchmarks.test_exp2_spike" name="test_spike" time="300.5"/>
<testcase classname="benchmarks.test_exp3_rebalance_dip" name="test_coop" time="170"/>
<testcase classname="benchmarks.test_exp3_rebalance_dip" name="test_by_protocol" time="500">
  <skipped type="pytest.xfail" message="the lab's claim is not confirmed here"/></testcase>
<testcase classname="benchmarks.test_exp5_flapping" name="test_flaps" time="200">
  <failure message="no flips">assert False</failure></testcase>
<testcase classname="benchmarks.test_spark_engines" name="test_capacity[spark-connect]" time="0">
  <skipped type="pytest.skip" message="by_hand"/></testcase>
<testcase classname="benchmarks.test_twin_scale" name="test_twin" time="40">
  <error message="fixture failed"/></testcase>
</testsuite></testsuites>
"""


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    return path


def test_each_module_is_tallied_with_its_verdict(tmp_path: Path) -> None:
    rows = tally(_write(tmp_path))
    assert list(rows) == ["experiment 2 (test_exp2_spike)", "experiment 3 (test_exp3_rebalance_dip)",
                          "experiment 5 (test_exp5_flapping)", "test_spark_engines",
                          "test_twin_scale"]
    verdicts = {name: (r.verdict, r.passed, r.xfailed, r.failed, r.skipped)
                for name, r in rows.items()}
    assert verdicts["experiment 3 (test_exp3_rebalance_dip)"] == ("xfail", 1, 1, 0, 0)
    assert verdicts["experiment 5 (test_exp5_flapping)"] == ("fail", 0, 0, 1, 0)
    assert verdicts["test_spark_engines"] == ("skip", 0, 0, 0, 1)
    assert verdicts["test_twin_scale"] == ("fail", 0, 0, 1, 0)
    assert rows["experiment 3 (test_exp3_rebalance_dip)"].time_s == 670.0


def test_the_table_ends_with_the_wall_time_and_exit_status(tmp_path: Path) -> None:
    text = render(tally(_write(tmp_path)), scale="ci", wall_s=4815.4, exit_status=1,
                  commit="abc1234")
    assert "| experiment 2 (test_exp2_spike) | pass | 1 | 0 | 0 | 0 | 5.0 min |" in text
    assert text.rstrip().endswith(
        "Scale ci at abc1234: wall time 80 min 15 s, exit status 1 (fail).")


def test_the_command_writes_the_table_and_refuses_a_missing_file(tmp_path: Path, capsys) -> None:
    out = tmp_path / "acceptance.md"
    assert main([str(_write(tmp_path)), "--scale", "ci", "--wall-s", "60", "--exit-status", "0",
                 "--out", str(out)]) == 0
    assert "wall time 1 min 0 s, exit status 0 (pass)" in out.read_text()
    assert main([str(tmp_path / "nope.xml"), "--scale", "ci", "--wall-s", "1",
                 "--exit-status", "0"]) == 2
    assert "cannot read" in capsys.readouterr().err
