"""``lagscale report``: exit 0 and both files written; exit 2 with ``error:`` lines and
nothing written on bad input."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pytest_lagscale.cli import app

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
RUN_DIRS = sorted(p for p in GOLDEN.iterdir() if p.is_dir())


def _report(*args: str | Path):
    return CliRunner().invoke(app, ["report", *map(str, args)])


def test_run_dirs_and_json_files_give_both_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _report(RUN_DIRS[0], RUN_DIRS[1] / "benchmark.json", "--out", out,
                     "--full-scale-draws", "0")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["findings.html", "findings.md", "img"]
    assert "Full scale (simulated)" not in (out / "findings.md").read_text()
    assert result.output.strip() == (f"2 run(s), 3 of 11 experiments: wrote {out}/findings.html "
                                     f"and {out}/findings.md")


def test_a_missing_path_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _report(RUN_DIRS[0], tmp_path / "nope", "--out", out)
    assert result.exit_code == 2
    assert f"error: {tmp_path / 'nope'}: {str(tmp_path / 'nope')!r} does not exist" in \
        result.output
    assert not out.exists()


def test_not_a_benchmark_document_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1}')
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _report(bad, empty, "--out", tmp_path / "out")
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(lines) == 2
    assert lines[0].startswith(f"error: {bad}: ")
    assert lines[1] == (f"error: {empty}: {str(empty)!r} has no benchmark.json; give a benchmark "
                        "JSON file or a run directory")
    assert not (tmp_path / "out").exists()


def test_out_that_is_a_file_exits_2(tmp_path: Path) -> None:
    out = tmp_path / "file"
    out.write_text("")
    result = _report(RUN_DIRS[0], "--out", out)
    assert result.exit_code == 2
    assert f"error: --out: {str(out)!r} is not a directory" in result.output


def test_no_argument_is_a_usage_error() -> None:
    assert _report().exit_code == 2


def test_the_full_scale_section_predicts_the_modelled_runs_and_lists_the_others(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _report(RUN_DIRS[0], RUN_DIRS[1], "--out", out, "--full-scale-draws", "1")
    assert result.exit_code == 0, result.output
    md = (out / "findings.md").read_text()
    section = md[md.index("## Full scale (simulated)"):]
    assert "Predictions of the calibrated twin (spark.yaml" in section
    assert "| spike-ci | spike + scaledobject" in section
    assert "- spike-ci-hpa-cpu-ci: not modelled by the twin: policy 'hpa-cpu-ci' scales on CPU" \
        in section
    assert 'id="full-scale-simulated"' in (out / "findings.html").read_text()


def test_bad_full_scale_draws_and_a_missing_path_are_reported_together(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _report(RUN_DIRS[0], tmp_path / "nope", "--out", out, "--full-scale-draws", "101")
    assert result.exit_code == 2
    assert "error: --full-scale-draws: got 101, expected an integer in [0, 100]" in result.output
    assert f"error: {tmp_path / 'nope'}: " in result.output
    assert not out.exists()
