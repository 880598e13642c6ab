"""Every bad input tried on the CLI exits 2 with one line naming the field, the value and what is
allowed, no traceback, and nothing written: the table below is the record of what was tried.

Each row is ``(id, argv, files, expected)``: ``files`` are written to the working directory
first (``name -> bytes``), ``expected`` is a fragment of the one error line. Runs go through
``--dry-run`` where the command has it, so a row that is wrongly accepted plans a run instead of
starting one (and fails here with exit 0). Rows that need a live probe (an unreachable
``--kafka-bootstrap``, 10 s) are in tests/unit/test_bootstrap_input.py; the pytest options'
checks at configure time are in tests/test_plugin.py; wrongly typed benchmark JSON fields in
tests/unit/report/test_benchjson.py; fault action parameters in
tests/unit/experiment/test_actions.py (``BAD_FAULT_PARAMS``).

=========================================  ====================================================
input                                      the line it gives (fragment)
=========================================  ====================================================
binary profile / policy                    is a binary file (a NUL byte at offset 0)
non-UTF-8 profile                          is not UTF-8 text (byte 0xff at offset 7)
empty profile                              is empty; allowed: a YAML mapping of profile keys
duplicate YAML key                         found duplicate key 'name'
``duration_s: 1e12``                       1e12 is text to YAML 1.1 ... out of range anyway
``spike_start_s`` past the end             'spike_start_s': 400.0 starts the spike at or after
5,010-character path (profile, policy,     (5010 characters) cannot be looked up (File name
deployment)                                too long)
``--out`` under a file / a file            is under the file / is a file, not a directory
``--out`` where nothing can be written     cannot be written (Permission denied in '/sys/...')
``--kafka-bootstrap`` non-ASCII / no port  is not HOST:PORT; allowed: host:port[,host:port...]
``cleanup ../../somewhere``                is not a run id: 1-64 letters, digits
``cleanup`` of an unknown id               no pid directory and no live process carries it
``produce --bootstrap`` non-ASCII          is not HOST:PORT
``produce --profile`` unknown name         expected an existing profile YAML file or a bundled
``produce --out`` under a file             lies under the file
=========================================  ====================================================
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pytest_lagscale.cli import app
from pytest_lagscale.config.bundled import data_path

SPIKE = data_path("profiles", "spike-ci.yaml").read_bytes()
LONG = "/tmp/" + "a" * 5000 + ".yaml"

ROWS = [
    ("binary-profile", ["run", "--profile", "bin.yaml", "--dry-run"], {"bin.yaml": b"\0\1bin"},
     "'bin.yaml': is a binary file (a NUL byte at offset 0)"),
    ("binary-policy", ["run", "--policy", "bin.yaml", "--dry-run"], {"bin.yaml": b"\0\1bin"},
     "'bin.yaml': is a binary file"),
    ("latin-1-profile", ["run", "--profile", "l.yaml", "--dry-run"], {"l.yaml": b"name: x\xff\n"},
     "is not UTF-8 text (byte 0xff at offset 7)"),
    ("empty-profile", ["run", "--profile", "e.yaml", "--dry-run"], {"e.yaml": b""},
     "'e.yaml': is empty; allowed: a YAML mapping of profile keys"),
    ("duplicate-key", ["run", "--profile", "d.yaml", "--dry-run"],
     {"d.yaml": b"name: a\nname: b\n"}, "found duplicate key 'name'"),
    ("exponent-duration", ["run", "--profile", "h.yaml", "--dry-run"],
     {"h.yaml": SPIKE.replace(b"duration_s: 240", b"duration_s: 1e12")},
     "'duration_s': 1e12 is text to YAML 1.1"),
    ("spike-past-end", ["run", "--profile", "s.yaml", "--dry-run"],
     {"s.yaml": SPIKE.replace(b"spike_start_s: 60", b"spike_start_s: 400")},
     "'spike_start_s': 400.0 starts the spike at or after duration_s 240.0"),
    ("long-profile-path", ["run", "--profile", LONG, "--dry-run"], {},
     "(5010 characters) cannot be looked up (File name too long)"),
    ("long-policy-path", ["run", "--policy", LONG, "--dry-run"], {},
     "'--policy': "),
    ("long-deployment-path", ["run", "--deployment", LONG, "--dry-run"], {},
     "'--deployment': "),
    ("out-under-a-file", ["run", "--out", "f/x", "--dry-run"], {"f": b"x"},
     "'f/x' is under the file 'f'"),
    ("out-is-a-file", ["run", "--out", "f", "--dry-run"], {"f": b"x"},
     "'f' is a file, not a directory"),
    ("out-not-writable", ["run", "--out", "/sys/kernel/lagscale", "--dry-run"], {},
     "cannot be written"),
    ("bootstrap-non-ascii", ["run", "--kafka", "external", "--kafka-bootstrap", "ḱafka:9092",
                             "--dry-run"], {}, "'ḱafka:9092' is not HOST:PORT"),
    ("bootstrap-no-port", ["run", "--kafka", "external", "--kafka-bootstrap", "kafka",
                           "--dry-run"], {}, "'kafka' is not HOST:PORT"),
    ("cleanup-path", ["cleanup", "../../somewhere"], {},
     "run id '../../somewhere' is not a run id"),
    ("cleanup-unknown", ["cleanup", "abcdef123456"], {},
     "no pid directory and no live process carries it"),
    ("produce-bootstrap", ["produce", "--profile", "spike-ci", "--bootstrap", "ḱ:1"], {},
     "'ḱ:1' is not HOST:PORT"),
    ("produce-unknown-profile", ["produce", "--profile", "nosuch"], {},
     "expected an existing profile YAML file or a bundled profile name"),
    ("produce-out-under-a-file", ["produce", "--profile", "spike-ci", "--out", "f/x"],
     {"f": b"x"}, "lies under the file"),
]


@pytest.mark.parametrize("argv,files,expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str],
        files: dict[str, bytes], expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAGSCALE_CACHE_DIR", str(tmp_path / "cache"))
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(app, argv)
    output = result.output
    assert result.exit_code == 2, output
    assert "Traceback" not in output and result.exception is None or \
        isinstance(result.exception, SystemExit), output
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and expected in errors[0], output
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == \
        [n for n in before if n != "cache"]
